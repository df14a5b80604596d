"""The replication bench: for each paper behind this explorer's analyses, its claim, the paper's setting and number
(with the table or figure it comes from), the same measurement rerun on the open model, and a verdict by a stated
rule.

A paper is a function `(model, budget) -> Card` registered with @paper; it measures by capability (the model's
attention kinds, what it reads and writes, shipped analyses), never by family, and says what the model lacks instead of a number
("not measurable"). explorer/papers/replication.py runs them and gives one JSON object:
{"model": ..., "papers": [{"paper", "claim", "paper_value", "ours", "verdict", "command", ...}, ...]}; the bundled
models ship it as replication.json (explorer/analyses/corpus/shipped_analyses.py's conventions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from explorer.analyses.records import Interval, IntervalParts, Record, list_of

if TYPE_CHECKING:           # for readers only: the command line's --help imports this module without torch
    from explorer.models.interface import ExplorerModel

REPLICATION_FILE = "replication.json"
HOLDS, PARTLY, DOES_NOT = "holds", "partly", "does not"
# The verdict turns on an interval that straddles its threshold: its lower end gives one verdict, its upper end
# another, so the measurement cannot tell them apart (docs/papers.md, "Verdicts").
INCONCLUSIVE = "inconclusive"
NOT_MEASURABLE = "not measurable"       # the claim needs what the model lacks; the card says what, not a number
VERDICTS = (HOLDS, PARTLY, DOES_NOT, INCONCLUSIVE, NOT_MEASURABLE)


@dataclass
class Budget:
    """How much corpus work a heavy measurement may do: the shipped replication.json uses the defaults (the whole
    bench in 84–104 s a bundled model on this 2-core CPU: benchmarks/replication.py); tests and a quick
    look use fewer sentences."""

    sentences: int = 100            # corpus sentences for faithfulness, sinks, permutation …
    progress: Callable[[float], None] | None = None


@dataclass
class Card(Record):
    paper: str              # "Vaswani et al. 2017"
    claim: str              # the claim in one sentence
    setting: str            # the paper's model and data
    source: str             # where its number is: "Table 3, row (A)"
    paper_value: str        # the paper's number, as text
    ours: str               # the same measurement on the open model, as text ("" when not measurable)
    verdict: str            # one of VERDICTS
    rule: str               # the rule the verdict follows, and why a small caption model may differ
    command: str            # the command that reproduces `ours`
    numbers: dict = field(default_factory=dict)     # the raw numbers behind `ours` (equal to the command's)
    # What the verdict rests on, with its uncertainty: a mean over sentences and its 95% interval
    # (explorer/analyses/corpus/intervals.py), or each part's; None where none is measured ({} in JSON).
    interval: Interval | IntervalParts | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}: expected one of {', '.join(VERDICTS)}")
        if isinstance(self.interval, dict):         # read back from JSON
            self.interval = (IntervalParts.from_json(self.interval) if "parts" in self.interval else
                             Interval.from_json(self.interval) if self.interval else None)

    def to_json(self) -> dict:
        return dict(super().to_json(), interval={} if self.interval is None else self.interval.to_json())


@dataclass
class Bench(Record):
    """The bench on one model, as replication.json holds it: every card (each with its short `name` too)."""
    NESTED = {"papers": list_of(Card)}

    model: str
    sentences: int
    papers: list[Card]

    def table(self):
        """A row a paper: its verdict, the paper's number, ours, and the 95% interval the verdict rests on."""
        import pandas as pd

        rows = [{"paper": card.paper, "verdict": card.verdict, "paper_value": card.paper_value, "ours": card.ours,
                 "low": getattr(card.interval, "low", None), "high": getattr(card.interval, "high", None)}
                for card in self.papers]
        return pd.DataFrame(rows, index=[card.extra.get("name", card.paper) for card in self.papers])


PAPERS: dict[str, Callable[[ExplorerModel, Budget], Card]] = {}      # name → measurement, in registration order


def paper(name: str):
    """Register a paper's measurement under a short name (the CLI's --paper NAME)."""
    def register(measure: Callable[[ExplorerModel, Budget], Card]):
        PAPERS[name] = measure
        return measure
    return register


def not_measurable(card: dict, why: str) -> Card:
    """A card for a claim the model cannot test (no cross-attention, no decoder …): the reason instead of a number."""
    return Card(**card, ours="", verdict=NOT_MEASURABLE, rule=why, command="")


def settled(at_low: str, at_high: str) -> str:
    """The verdict read on the intervals' lower ends and on their upper ends: that verdict when they agree,
    inconclusive when an interval straddling its threshold decides between them."""
    return at_low if at_low == at_high else INCONCLUSIVE


def met(low: float | None, high: float | None, threshold: float) -> bool | None:
    """A part of a claim on an interval: met when its lower end reaches the threshold, not met when even its upper
    end falls short, None (undecided) when the interval straddles the threshold."""
    if low is None or high is None:
        return False
    return True if low >= threshold else False if high < threshold else None


def verdict_of(parts: dict[str, bool | None]) -> str:
    """holds when every measurable part is met, partly when some are, does not when none is; inconclusive when an
    undecided part (None: its interval straddles the threshold) decides which."""
    def counted(undecided: bool) -> str:
        done = sum(undecided if value is None else bool(value) for value in parts.values())
        return HOLDS if done == len(parts) else PARTLY if done else DOES_NOT
    return settled(counted(False), counted(True))


@dataclass(frozen=True)
class Need:
    """What a claim needs of a model, as a capability: a card asks for it before measuring (requires) and, where
    the model lacks it, says so the same way on every card."""
    lacks: str                                  # what a model without it has no: "causal (decoder) self-attention"
    has: Callable[[ExplorerModel], bool]


def _translates(model) -> bool:
    from explorer.models.interface import Translates

    return isinstance(model, Translates)


def _predicts_tokens(model) -> bool:
    from explorer.models.interface import Embeds

    return not isinstance(model, Embeds)


CAUSAL = Need("causal self-attention (a decoder stack, where a query sees only earlier tokens)",
              lambda model: model.has("decoder"))
ENCODER = Need("encoder (bidirectional self-attention over the whole sentence)", lambda model: model.has("encoder"))
TRANSLATION = Need("translation output to score with BLEU", _translates)
TOKEN_OUTPUT = Need("output distribution over tokens (a sentence encoder gives an embedding)", _predicts_tokens)


def requires(card: dict, model: ExplorerModel, need: Need, why: str) -> Card | None:
    """The not-measurable card when the model lacks what the claim needs (None when it has it): "{model} has no
    {what}; {why the claim needs it}"."""
    if need.has(model):
        return None
    return not_measurable(card, f"{model.name} has no {need.lacks}; {why}.")


def scale_caveat(model: ExplorerModel) -> str:
    """How this model differs in size from the papers' WMT- or BERT-scale ones, from its own numbers (its layers,
    heads, width and, where its folder says, its training data)."""
    stacks = [stack for stack in ("encoder", "decoder") if model.has(stack)]
    layers = " + ".join(str(model.layers(stack)) for stack in stacks)
    text = (f"{model.name} has {layers} layers of {model.heads} heads, d_model {model.d_model}"
            + (f" ({' and '.join(stacks)})" if len(stacks) > 1 else ""))
    data = model.info.get("data") if isinstance(model.info.get("data"), dict) else {}
    if data.get("train_pairs"):
        corpus = "Multi30k's short captions" if "multi30k" in str(data.get("train", "")).lower() else "its corpus"
        text += f", trained on {data['train_pairs']:,} sentence pairs of {corpus}"
    return text
