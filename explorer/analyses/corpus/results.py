"""What the corpus jobs return and the pages and the command line read: the roles report, the importance report,
the pruning curve, evaluation scores and the faithfulness summary, as records (explorer/analyses/records.py) whose
to_json() is the very JSON the files on disk and `--json` hold, key for key and in the same order.

Left as plain dicts where the keys are data rather than names: a head's syntactic scores (relation → direction →
accuracy, baseline, baseline_offset, count), the role thresholds as written, the rank correlations ("gradient_importance
vs loss_change" → ρ), a positional histogram (offset → share) and the skipped sentences' reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.analyses.records import Record, dict_of, list_of
from explorer.capture.head_sets import HeadSpec

# Roles (explorer/analyses/corpus/roles.py, after Voita et al. 2019)

@dataclass
class Positional(Record):
    OPTIONAL = ("low", "high")

    offset: int                 # key − query of the head's most frequent top weight
    share: float                # the share of queries whose top weight sits there
    low: float | None = None    # its sentence-bootstrap 95% interval (explorer/analyses/corpus/intervals.py)
    high: float | None = None
    histogram: dict = field(default_factory=dict)     # str(offset) → share; the end bins gather the rest


@dataclass
class RareToken(Record):
    OPTIONAL = ("rate_top2", "chance_top2", "sentences")

    rate: float                 # sentences whose averaged attention peaks on the rarest token
    chance: float
    rate_top2: float | None = None      # the rarest or the second rarest (Voita et al.'s own measure)
    chance_top2: float | None = None
    sentences: int | None = None


@dataclass
class HeadRoles(Record):
    OPTIONAL = ("positional", "rare_token", "syntactic", "syntactic_short")
    NESTED = {"positional": Positional, "rare_token": RareToken}

    kind: str
    layer: int
    head: int
    spec: str = ""              # "enc.0.3"; label() when a hand-made report leaves it out
    roles: list[str] = field(default_factory=list)
    confidence: float | None = None
    positional: Positional | None = None         # self-attention only
    rare_token: RareToken | None = None
    syntactic: dict | None = None                # relation → direction → scores, on every treebank sentence
    syntactic_short: dict | None = None          # … on the short ones
    syntactic_relations: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def label(self) -> str:
        return self.spec or str(HeadSpec(self.kind, self.layer, self.head))


@dataclass
class TextCorpus(Record):
    name: str
    sentences: int
    skipped: int


@dataclass
class TreebankCorpus(Record):
    OPTIONAL = ("short_sentences", "short_pieces")

    name: str
    sentences: int
    skipped: int
    short_sentences: int | None = None      # of at most short_pieces pieces
    short_pieces: int | None = None


@dataclass
class RolesCorpus(Record):
    """Where the roles were measured: plain text, a treebank or both (a report of before that split holds its one
    corpus's "name" and "sentences" in `extra`)."""
    OPTIONAL = ("text", "treebank")
    NESTED = {"text": TextCorpus, "treebank": TreebankCorpus}

    text: TextCorpus | None = None
    treebank: TreebankCorpus | None = None


@dataclass
class RolesReport(Record):
    NESTED = {"heads": list_of(HeadRoles), "corpus": RolesCorpus}

    heads: list[HeadRoles]
    thresholds: dict = field(default_factory=dict)      # explorer.analyses.corpus.roles.Thresholds, as written
    corpus: RolesCorpus = field(default_factory=RolesCorpus)
    seconds: float = 0.0

    def table(self):
        """A row a head (enc.0.3 …): its roles, confidence, positional offset and share, rare-token rate and
        chance, syntactic relations: what the command prints."""
        import pandas as pd

        rows = [{"roles": ", ".join(head.roles), "confidence": head.confidence,
                 "offset": head.positional.offset if head.positional else None,
                 "share": head.positional.share if head.positional else None,
                 "rare_rate": head.rare_token.rate if head.rare_token else None,
                 "rare_chance": head.rare_token.chance if head.rare_token else None,
                 "syntactic_relations": ", ".join(head.syntactic_relations)} for head in self.heads]
        return pd.DataFrame(rows, index=pd.Index([head.label() for head in self.heads], name="head"))


# Importance (explorer/analyses/corpus/importance.py, Michel et al. 2019)

@dataclass
class HeadImportance(Record):
    OPTIONAL = ("loss_change", "bleu_change", "perplexity_change")

    kind: str
    layer: int
    head: int
    spec: str = ""
    roles: list[str] = field(default_factory=list)
    gradient_importance: float | None = None                 # Michel et al.'s E|∂L/∂gate|
    gradient_importance_normalised: float | None = None      # … divided by its layer's L2 norm
    loss_change: float | None = None             # masked alone (ablation)
    bleu_change: float | None = None             # … for a translation model
    perplexity_change: float | None = None       # … for a language model

    def measure(self, name: str) -> float | None:
        """A measure by its name in reports (pruning.NORMALISATIONS, head_table.IMPORTANCE_MEASURES)."""
        return getattr(self, name, None)

    def label(self) -> str:
        return self.spec or str(HeadSpec(self.kind, self.layer, self.head))


@dataclass
class ImportanceCorpus(Record):
    OPTIONAL = ("examples",)

    name: str = ""
    pairs: int = 0              # "pairs" for translation corpora, as reports have always said
    examples: int | None = None


@dataclass
class Unpruned(Record):
    OPTIONAL = ("bleu", "perplexity")

    loss: float
    bleu: float | None = None
    perplexity: float | None = None


@dataclass
class ImportanceReport(Record):
    OPTIONAL = ("metric", "unpruned", "rank_correlation")
    NESTED = {"heads": list_of(HeadImportance), "corpus": ImportanceCorpus, "unpruned": Unpruned}

    heads: list[HeadImportance]
    metric: str | None = None           # "BLEU" or "perplexity" (reports of before it said so: BLEU)
    corpus: ImportanceCorpus = field(default_factory=ImportanceCorpus)
    gradient_seconds: float = 0.0
    seconds: float = 0.0
    unpruned: Unpruned | None = None            # with ablation
    rank_correlation: dict | None = None        # "measure vs change" → Spearman's ρ (None: undefined)

    @property
    def quality(self) -> str:
        return self.metric or "BLEU"

    def table(self):
        """A row a head: its roles, gradient importance (raw and normalised) and, with ablation, the change in
        loss and quality when it alone is masked."""
        import pandas as pd

        columns = ("gradient_importance", "gradient_importance_normalised", "loss_change", "bleu_change",
                   "perplexity_change")
        rows = [{"roles": ", ".join(head.roles), **{name: head.measure(name) for name in columns}}
                for head in self.heads]
        return pd.DataFrame(rows, index=pd.Index([head.label() for head in self.heads], name="head")).dropna(
            axis="columns", how="all")


# The pruning curve (explorer/analyses/corpus/pruning.py, Michel et al. 2019 Fig. 2)

@dataclass
class CurveKind(Record):
    OPTIONAL = ("other_orders",)

    heads: int
    fractions: list[float]
    pruned: list[int]                   # heads pruned at each fraction
    importance: list[float]             # quality, least important pruned first
    random_mean: list[float]
    random_std: list[float]
    random_runs: list[list[float]]
    other_orders: dict | None = None    # name → quality at each fraction, in another importance order


@dataclass
class PruningCurve(Record):
    OPTIONAL = ("metric",)
    NESTED = {"kinds": dict_of(CurveKind)}

    pairs: int
    metric: str | None = None           # curves of before it said so: BLEU
    steps: int = 10
    seeds: int = 3
    corpus: str = ""
    importance_corpus: str = ""
    measure: str = ""
    kinds: dict[str, CurveKind] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def quality(self) -> str:
        return self.metric or "BLEU"

    def table(self):
        """A row a point of each kind's curve: the fraction and count pruned, quality by importance order and the
        random orders' mean and standard deviation."""
        import pandas as pd

        rows = [{"kind": kind, "fraction": fraction, "pruned": data.pruned[i], "importance": data.importance[i],
                 "random_mean": data.random_mean[i] if data.random_mean else None,
                 "random_std": data.random_std[i] if data.random_std else None}
                for kind, data in self.kinds.items() for i, fraction in enumerate(data.fractions)]
        return pd.DataFrame(rows)


# Evaluation (`python -m explorer evaluate`)

@dataclass
class TranslationScores(Record):
    bleu: float
    chrf: float
    sentences: int              # pairs translated
    skipped: int                # pairs with a blank side, left out


@dataclass
class TextScores(Record):
    """A model scored on plain lines: its loss, and its quality measure named by its Scorer's metric_key
    (perplexity for a language model; a sentence encoder's cosine to the whole model, with heads pruned)."""
    OPTIONAL = ("perplexity", "cosine")

    loss: float
    lines: int
    perplexity: float | None = None
    cosine: float | None = None

    @property
    def quality(self) -> tuple[str, float]:
        """(the measure's name, its value): the one of perplexity and cosine that was measured."""
        return ("perplexity", self.perplexity) if self.perplexity is not None else ("cosine", self.cosine)


def evaluation_from_json(document: dict) -> TranslationScores | TextScores:
    return TranslationScores.from_json(document) if "bleu" in document else TextScores.from_json(document)


# Faithfulness (explorer/analyses/sentence/faithfulness.py: how well attention ranks what the output depends on)

@dataclass
class MethodAgreement(Record):
    OPTIONAL = ("spearman_gradient_x_input",)

    spearman: float                     # mean ρ with leave-one-out
    sentences: int                      # sentences where ρ is defined
    spearman_gradient_x_input: float | None = None


@dataclass
class FaithfulnessSummary(Record):
    NESTED = {"methods": dict_of(MethodAgreement)}

    sentences: int
    skipped: dict                       # reason → sentences
    methods: dict[str, MethodAgreement]
