"""Head detectors (Olsson, Elhage, Nanda et al. 2022, "In-context Learning and Induction Heads"): how much of each
self-attention head's attention lands where a previous-token, duplicate-token or induction head would put it, on
sequences of random tokens repeated twice.

The definitions are TransformerLens's `head_detector` (its "mul" measure), re-implemented on the model interface:

- a detection pattern D [query, key] of 0s and 1s, lower-triangular (only earlier keys, or the query itself, count;
  also in an encoder, which could look ahead):
  previous token  D[i, i−1] = 1;
  duplicate token D[i, j] = 1 where token j is token i and j < i;
  induction       D[i, j] = 1 where token j−1 is token i (j−1 < i, j ≤ i): the token after an earlier occurrence.
- score = Σ A·D / Σ A over every query and key of the head's pattern A, per sequence, averaged over the sequences.
  As TransformerLens's defaults, attention to the first token and to the query itself stays in the total
  (exclude_bos=False, exclude_current_token=False). Every row of A sums to 1, so a perfect head scores the share of
  queries that have any key in D: its "ceiling" here (e.g. ~0.5 for induction, whose first repeat has nothing
  to match).
- prefix matching (Olsson et al.'s own score): the same induction pattern, averaged over the queries of the
  second repeat only (each has exactly one such key), so a perfect induction head scores 1.
- chance: the score of a head attending uniformly to every key it may see (all keys in an encoder, the earlier
  ones and itself in a decoder), over the same queries.

Inputs (Olsson et al.): `length` distinct random non-special tokens, then the same again, one sequence per seed,
all the seeds in one batch. Encoder self-attention reads it as its source, with the model's own special tokens
around it (as a typed sentence gets them); decoder self-attention as its input after the decoder's prefix (start
token, language token; `decoder_input`), an encoder–decoder translating a fixed source meanwhile. Cross-attention
reads the source from the decoder: its queries and keys are different sequences, so it is not scored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch

from explorer.capture.inputs import InputError
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import Kind, attention_hook

DETECTORS = ("previous_token", "duplicate_token", "induction", "prefix_matching")
DETECTOR_TITLES = {"previous_token": "previous token", "duplicate_token": "duplicate token",
                   "induction": "induction", "prefix_matching": "prefix matching"}
SELF_ATTENTION = ("encoder", "decoder")
FIXED_SOURCE = "A man is walking down the street."     # what an encoder–decoder translates while its decoder is probed
DETECTORS_FILE = "head_detectors.json"
DEFAULT_SEEDS, DEFAULT_LENGTH = 8, 20


@dataclass
class HeadDetection:
    """Every self-attention head's detector scores. scores[kind][detector]: [layers, heads]; chance and ceiling
    [kind][detector]: the score of a uniform head and of a perfect one on the same inputs."""

    model: str
    seeds: int
    length: int                     # distinct random tokens, repeated once
    scores: dict[str, dict[str, np.ndarray]]
    chance: dict[str, dict[str, float]]
    ceiling: dict[str, dict[str, float]]
    positions: dict[str, int]       # kind → the probed sequence's length, special tokens included
    fixed_source: str = ""          # what an encoder–decoder translated while its decoder was probed
    not_scored: dict[str, str] = field(default_factory=dict)     # kind → why
    # kind → detector → [seeds, layers, heads]: each seed's scores, for intervals over seeds (not in the JSON)
    seed_scores: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)

    def top(self, kind: str, detector: str, count: int = 3) -> list[tuple[str, float]]:
        """The `count` highest-scoring heads of one kind, as ("dec.1.3", score)."""
        values = self.scores[kind][detector]
        order = np.argsort(-values, axis=None, kind="stable")[:count]
        short = {"encoder": "enc", "decoder": "dec"}[kind]
        return [(f"{short}.{i // values.shape[1]}.{i % values.shape[1]}", float(values.flat[i])) for i in order]

    def to_json(self) -> dict:
        document = asdict(self)
        del document["seed_scores"]
        document["scores"] = {kind: {name: np.round(values, 4).tolist() for name, values in by_name.items()}
                              for kind, by_name in self.scores.items()}
        document["definition"] = ("TransformerLens head_detector, 'mul' measure (exclude_bos=False, "
                                  "exclude_current_token=False); prefix matching over the second repeat's queries "
                                  "(Olsson et al. 2022); chance: uniform attention over the keys a query may see")
        return document

    @classmethod
    def from_json(cls, document: dict) -> HeadDetection:
        document = {k: v for k, v in document.items() if k != "definition"}
        document["scores"] = {kind: {name: np.array(values, dtype=np.float64) for name, values in by_name.items()}
                              for kind, by_name in document["scores"].items()}
        return cls(**document)


def detection_patterns(tokens: list[int] | np.ndarray) -> dict[str, np.ndarray]:
    """TransformerLens's three detection patterns [query, key] for one sequence of ids, as 0/1 floats."""
    tokens = np.asarray(tokens)
    n = len(tokens)
    previous = np.eye(n, k=-1)
    duplicate = np.tril(tokens[:, None] == tokens[None, :], k=-1).astype(float)
    induction = np.zeros((n, n))
    induction[:, 1:] = duplicate[:, :-1]          # key j is one past an earlier copy of the query's token
    return {"previous_token": previous, "duplicate_token": duplicate, "induction": np.tril(induction)}


def mul_score(pattern: np.ndarray, detection: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Σ A·D / Σ A over the queries in `rows` (all when None), for patterns [..., query, key] → [...]."""
    if rows is not None:
        pattern, detection = pattern[..., rows, :], detection[rows]
    return (pattern * detection).sum((-2, -1)) / pattern.sum((-2, -1))


def allowed_keys(kind: str, positions: int) -> np.ndarray:
    """[query, key] the keys a query may see: all of them in an encoder, itself and earlier ones in a decoder."""
    full = np.ones((positions, positions))
    return np.tril(full) if Kind(kind).causal else full


def special_frame(model: ExplorerModel) -> tuple[list[int], list[int]]:
    """(leading, trailing) special tokens the model puts around a typed sentence: [CLS] … [SEP], … </s>."""
    ids = model.encode("a b").ids
    lead = 0
    while lead < len(ids) and ids[lead] in model.special_ids:
        lead += 1
    trail = len(ids)
    while trail > lead and ids[trail - 1] in model.special_ids:
        trail -= 1
    return ids[:lead], ids[trail:]


def vocabulary_size(model: ExplorerModel) -> int:
    """The number of ids the model predicts over (its output layer's width), from one tiny forward pass."""
    with torch.no_grad():
        if model.has("encoder") and model.has("decoder"):
            logits = model.forward(model.pad([model.encode("a").ids]), model.pad([model.decoder_prefix()]))
        elif model.has("encoder"):
            logits = model.forward(model.pad([model.encode("a").ids]))
        else:
            logits = model.forward(None, model.pad([model.encode("a").ids]))
    return int(logits.shape[-1])


def repeated_random_tokens(model: ExplorerModel, seeds: int, length: int) -> list[list[int]]:
    """One sequence per seed: `length` distinct random non-special ids, then the same ids again."""
    excluded = set(model.special_ids) | {i for i in (model.pad_id, model.start_id, model.end_id, model.mask_id,
                                                     model.unk_id) if i is not None}
    candidates = torch.tensor([i for i in range(vocabulary_size(model)) if i not in excluded])
    if len(candidates) < length:
        raise InputError(f"{model.name}: its vocabulary has {len(candidates)} ordinary tokens, fewer than "
                         f"--length {length}")
    sequences = []
    for seed in range(seeds):
        chosen = candidates[torch.randperm(len(candidates), generator=torch.Generator().manual_seed(seed))[:length]]
        sequences.append(chosen.tolist() * 2)
    return sequences


def probe_inputs(model: ExplorerModel, kind: str, sequences: list[list[int]]):
    """(source batch or None, target batch or None, the rows as the attention reads them, where the first repeat
    starts) for one self-attention kind."""
    if Kind(kind) is Kind.ENCODER:
        lead, trail = special_frame(model)
        rows = [lead + sequence + trail for sequence in sequences]
        return model.pad(rows), None, rows, len(lead)
    source_ids = model.encode(FIXED_SOURCE).ids if model.has("encoder") else []
    rows = [model.decoder_input(source_ids, sequence)[0] for sequence in sequences]
    start = len(rows[0]) - len(sequences[0])
    source = model.pad([source_ids] * len(rows)) if model.has("encoder") else None
    return source, model.pad(rows), rows, start


def longest_length(model: ExplorerModel, requested: int) -> int:
    """The longest repeat that fits the model's positions with its special tokens and decoder prefix (≥ 1)."""
    lead, trail = special_frame(model)
    room = model.max_positions - max(len(lead) + len(trail),
                                     len(model.decoder_prefix()) if model.has("encoder") and model.has("decoder") else 0)
    return max(1, min(requested, room // 2))


@torch.no_grad()
def detect_heads(model: ExplorerModel, seeds: int = DEFAULT_SEEDS, length: int = DEFAULT_LENGTH) -> HeadDetection:
    """Previous-token, duplicate-token, induction and prefix-matching scores of every self-attention head."""
    length = longest_length(model, length)
    sequences = repeated_random_tokens(model, seeds, length)
    scores, chance, ceiling, positions, seed_scores = {}, {}, {}, {}, {}
    for kind in (k for k in SELF_ATTENTION if model.has(k)):
        source, target, rows, start = probe_inputs(model, kind, sequences)
        _, cache = model.run_with_cache(source, target, [attention_hook(kind, "*", "pattern")])
        patterns = cache.layers(kind, "pattern").double().cpu().numpy()        # [seeds, layers, heads, query, key]
        n = patterns.shape[-1]
        second_repeat = np.arange(start + length, start + 2 * length)
        allowed = allowed_keys(kind, n)
        uniform = allowed / allowed.sum(-1, keepdims=True)
        per_seed = {name: [] for name in DETECTORS}
        uniform_seed, perfect_seed = {name: [] for name in DETECTORS}, {name: [] for name in DETECTORS}
        for seed, row in enumerate(rows):
            found = detection_patterns(row)
            found["prefix_matching"] = found["induction"]
            for name in DETECTORS:
                only = second_repeat if name == "prefix_matching" else None
                per_seed[name].append(mul_score(patterns[seed], found[name], only))
                uniform_seed[name].append(mul_score(uniform, found[name], only))
                reachable = ((found[name] * allowed).sum(-1) > 0).astype(float)
                perfect_seed[name].append(reachable[only].mean() if only is not None else reachable.mean())
        seed_scores[kind] = {name: np.array(values) for name, values in per_seed.items()}
        scores[kind] = {name: np.mean(values, axis=0) for name, values in per_seed.items()}
        chance[kind] = {name: float(np.mean(values)) for name, values in uniform_seed.items()}
        ceiling[kind] = {name: float(np.mean(values)) for name, values in perfect_seed.items()}
        positions[kind] = n
    not_scored = {}
    if model.has("cross"):
        not_scored["cross"] = ("cross-attention is not self-attention: its queries (the output) and keys (the "
                               "source) are different sequences, so there is no previous or repeated token to find")
    return HeadDetection(model.name, seeds, length, scores, chance, ceiling, positions,
                         FIXED_SOURCE if model.has("encoder") and model.has("decoder") else "", not_scored, seed_scores)


def detection_table(detection: HeadDetection) -> pd.DataFrame:
    """A row per self-attention head: its score for every detector."""
    rows = []
    for kind, by_name in detection.scores.items():
        layers, heads = next(iter(by_name.values())).shape
        short = {"encoder": "enc", "decoder": "dec"}[kind]
        rows += [{"head": f"{short}.{layer}.{head}", **{DETECTOR_TITLES[name]: float(values[layer, head])
                                                       for name, values in by_name.items()}}
                 for layer in range(layers) for head in range(heads)]
    return pd.DataFrame(rows).set_index("head")


def reference_table(detection: HeadDetection) -> pd.DataFrame:
    """Chance (a uniform head) and the best possible score (a perfect head) per kind and detector."""
    return pd.DataFrame([{"attention": kind, "score of": what, **{DETECTOR_TITLES[name]: value
                                                                 for name, value in values[kind].items()}}
                         for kind in detection.scores
                         for what, values in (("chance (uniform head)", detection.chance),
                                              ("best (perfect head)", detection.ceiling))]).set_index(["attention", "score of"])
