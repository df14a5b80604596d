"""Activation patching, or causal tracing (Meng, Bau, Andonian & Belinkov 2022, "Locating and Editing Factual
Associations in GPT"; Vig et al. 2020, "Causal Mediation Analysis for Interpreting Neural NLP"): run the model on a
clean sentence and on a corrupted one (one word changed), then run the corrupted sentence again with one value
taken from the clean run, and measure how much of the clean output that one value brings back.

- The target is the clean run's own output (greedy), teacher forced in every run (explorer/capture/forcing.py), so the
  decoder reads the same tokens everywhere and only the source differs. A masked language model (no decoder) is
  read at the clean sentence's first mask token, or at its last ordinary token when it has none: the clean run's
  top prediction there is the target. A sentence encoder (Embeds) is read by its embedding: the "log-probability"
  is then the cosine with the clean run's embedding (1 for the clean run itself).
- Metric: restored = (lp_patched − lp_corrupt) / (lp_clean − lp_corrupt), lp the total log-probability of the
  target ("total"), or of its first token only ("first"). 1: the value alone brings back the clean output's
  probability; 0: it changes nothing; below 0 or above 1: it overshoots either way.
- Patched values: each head's z (its output before W_O; one head's slice replaced), for every kind, layer and head;
  and each layer's output (the residual stream after it, `layer_hook`). Patching every layer's output at once
  gives the clean run's logits (the last layer's output decides them), so it restores 1; a row patching nothing
  gives the corrupted run, 0: both are computed in the batch and measured against the clean and corrupted runs
  made alone, as checks that the hooks reach their rows and no others.
Clean and corrupted sources must have the same number of pieces, so that each position has a counterpart.
All patched runs of a sentence go through the model as one batch (in chunks for a long sentence).
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.capture.forcing import IGNORED, forced_batch
from explorer.capture.inputs import InputError, PreparedSource, prepare_source
from explorer.capture.wording import plural
from explorer.models.errors import ExplorerError
from explorer.models.hooks import model_run
from explorer.models.interface import Batch, Embeds, ExplorerModel
from explorer.models.vocabulary import STACKS, attention_hook, layer_hook

METRICS = {"total": "log-probability of the whole clean output", "first": "log-probability of its first token"}
NOTHING_TO_RESTORE = 1e-4       # nats: clean and corrupted runs closer than this leave nothing to restore
CHUNK_TOKENS = 16_384           # patched rows × positions in one forward pass
LOGIT_BUDGET = 64 * 2**20       # and logits (rows × positions × vocabulary) in one pass: 256 MB of float32


@dataclass
class Patch:
    """One patched run: the hook points whose values come from the clean run, with the head (None: all of it)."""
    label: str
    values: list[tuple[str, int | None]]


@dataclass
class PatchingResult:
    clean: str
    corrupt: str
    source_tokens: list[str]            # the clean sentence's pieces (the corrupted one's in corrupt_tokens)
    corrupt_tokens: list[str]
    target_tokens: list[str]            # what is scored: the clean output's pieces (or the masked position's prediction)
    clean_output: str
    corrupt_output: str                 # what the corrupted sentence gives on its own (greedy)
    metric: str                         # "total" or "first"
    read_at: str                        # where the log-probability is read, in words
    lp_clean: float
    lp_corrupt: float
    heads: dict[str, np.ndarray] = field(default_factory=dict)          # kind → restored share [layers, heads]
    layer_outputs: dict[str, np.ndarray] = field(default_factory=dict)  # stack → restored share [layers]
    all_layers: float = float("nan")    # every layer's output patched at once: 1 (checked, not assumed)
    nothing: float = float("nan")       # the batch's unpatched row against the corrupted run alone: 0

    @property
    def nothing_to_restore(self) -> bool:
        return abs(self.lp_clean - self.lp_corrupt) < NOTHING_TO_RESTORE

    def to_json(self) -> dict:
        document = {key: value for key, value in vars(self).items() if key not in ("heads", "layer_outputs")}
        document["heads"] = {kind: np.round(values, 4).tolist() for kind, values in self.heads.items()}
        document["layer_outputs"] = {stack: np.round(values, 4).tolist() for stack, values in self.layer_outputs.items()}
        document["nothing_to_restore"] = self.nothing_to_restore
        document["definition"] = ("restored = (lp_patched − lp_corrupt) / (lp_clean − lp_corrupt), lp the "
                                  f"{METRICS[self.metric]}, teacher forced")
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in document.items()}


def piece_counts(model: ExplorerModel, words: list[str]) -> list[int] | None:
    """How many pieces each word of a sentence is, as the model reads the sentence (None when it cannot tell)."""
    aligned = model.align_words(words)
    return None if aligned is None else [len(pieces) for pieces in aligned.word_pieces]


def length_hint(model: ExplorerModel, clean: str, corrupt: str) -> str:
    """Which words differ and how many pieces each is, so a person can pick a replacement of the same length."""
    clean_words, corrupt_words = clean.split(), corrupt.split()
    clean_counts, corrupt_counts = piece_counts(model, clean_words), piece_counts(model, corrupt_words)
    if len(clean_words) != len(corrupt_words) or clean_counts is None or corrupt_counts is None:
        return "Replace one word by another of as many pieces."
    differing = [f"“{a}” is {plural(m, 'piece')}, “{b}” {plural(n, 'piece')}" for a, b, m, n
                 in zip(clean_words, corrupt_words, clean_counts, corrupt_counts) if a != b and m != n]
    return ("; ".join(differing) + ": pick a replacement word of as many pieces as the word it replaces."
            if differing else "Replace one word by another of as many pieces.")


def same_length_sources(model: ExplorerModel, clean: str, corrupt: str, fix_casing: bool = False
                        ) -> tuple[PreparedSource, PreparedSource]:
    """Both sentences as the model reads them; an InputError naming both when their piece counts differ."""
    first, second = prepare_source(clean, model, fix_casing), prepare_source(corrupt, model, fix_casing)
    if len(first.ids) != len(second.ids):
        raise InputError(f"The clean sentence “{first.text}” is {plural(len(first.ids), 'piece')} and the corrupted "
                         f"one “{second.text}” {plural(len(second.ids), 'piece')}: patching pairs each position with "
                         f"its counterpart, so both need as many. {length_hint(model, first.text, second.text)}")
    if first.ids == second.ids:
        raise InputError(f"The corrupted sentence “{second.text}” reads as the same pieces as the clean one: change "
                         "a word.")
    return first, second


def patch_list(model: ExplorerModel) -> list[Patch]:
    """Every head's z of every kind, then every layer's output, then all layers' outputs at once, then nothing."""
    patches = [Patch(f"{kind}.{layer}.{head}", [(attention_hook(kind, layer, "z"), head)])
               for kind in model.kinds for layer in range(model.layers(kind)) for head in range(model.heads)]
    stacks = [stack for stack in STACKS if model.has(stack)]
    outputs = [(layer_hook(stack, layer), None) for stack in stacks for layer in range(model.layers(stack))]
    patches += [Patch(name, [(name, None)]) for name, _ in outputs]
    return patches + [Patch("all layers", outputs), Patch("nothing", [])]


class Scorer:
    """The log-probability of the target in a batch of runs: of the clean output, teacher forced, or of a masked
    language model's prediction at one position."""

    def __init__(self, model: ExplorerModel, clean_ids: list[int], corrupt_ids: list[int], metric: str) -> None:
        self.model, self.metric = model, metric
        self.clean_embedding = None
        if isinstance(model, Embeds):
            self.inputs = (model.pad([clean_ids, corrupt_ids]), None)
            self.clean_embedding = model.embed(self.row(0)[0]).double()
            corrupt = float(torch.cosine_similarity(model.embed(self.row(1)[0]).double(), self.clean_embedding))
            self.chosen, self.output_text = [], "the clean sentence's embedding"
            self.corrupt_text = f"an embedding at cosine {corrupt:.3f} with it"
            self.read_at = "the sentence embedding: its cosine with the clean run's"
            first = scored = 0
        elif model.has("decoder"):
            # Both sentences decoded in one batch (as many pieces: no padding, so each as if alone).
            generated = model.generate([clean_ids, corrupt_ids])
            clean_output, corrupt_output = (ids[: model.max_positions - 1] for ids in generated)
            ended = len(clean_output) < model.step_limit(len(clean_ids))
            self.chosen = clean_output + [model.end_id] if ended or not clean_output else clean_output
            self.output_text, self.corrupt_text = model.detokenize(clean_output), model.detokenize(corrupt_output)
            source, target, labels = forced_batch(model, [(clean_ids, self.chosen), (corrupt_ids, self.chosen)])
            self.inputs = (source, target)
            first = int((labels[0] != IGNORED).nonzero()[0, 0])
            scored = len(self.chosen) if metric == "total" else 1
            self.read_at = ("every output token, teacher forced" if metric == "total"
                            else "the first output token, teacher forced")
        else:
            self.inputs = (model.pad([clean_ids, corrupt_ids]), None)
            masks = [i for i, token in enumerate(clean_ids) if token == model.mask_id]
            ordinary = [i for i, token in enumerate(clean_ids) if token not in model.special_ids]
            first, scored = masks[0] if masks else (ordinary or [len(clean_ids) - 1])[-1], 1
            with torch.no_grad():
                predicted = model.forward(self.inputs[0])[:, first].argmax(-1).tolist()
            self.chosen = predicted[:1]
            self.output_text, self.corrupt_text = model.pieces(predicted)
            where = "the mask token" if masks else "the last ordinary token"
            self.read_at = f"{where} (position {first}), the clean run's top prediction there"
        # the scored positions are consecutive: a slice, not an index list (which would copy the logits)
        self.positions = slice(first, first + scored)
        self.tokens = torch.tensor(self.chosen[:scored])

    def row(self, index: int) -> tuple[Batch | None, Batch | None]:
        """One row of the (clean, corrupt) inputs as a batch of one."""
        return tuple(None if part is None else Batch(part.ids[index: index + 1], part.present[index: index + 1])
                     for part in self.inputs)

    def repeated(self, index: int, rows: int) -> tuple[Batch | None, Batch | None]:
        return tuple(None if part is None else Batch(part.ids.expand(rows, -1), part.present.expand(rows, -1))
                     for part in self.row(index))

    def outputs(self, source: Batch | None, target: Batch | None) -> torch.Tensor:
        """What a run gives: logits, or a sentence encoder's embeddings."""
        return self.model.forward(source, target) if self.clean_embedding is None else self.model.embed(source)

    def log_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """[rows] the target's total log-probability in each row of logits [rows, positions, vocab]; a sentence
        encoder's: the cosine of each row's embedding [rows, d] with the clean run's."""
        if self.clean_embedding is not None:
            return torch.cosine_similarity(logits.double(), self.clean_embedding, dim=-1)
        scored = logits[:, self.positions]
        chosen = scored.gather(-1, self.tokens[None, :, None].expand(len(logits), -1, 1))[..., 0]
        return (chosen - torch.logsumexp(scored, -1)).double().sum(1)


def patched_hooks(patches: list[Patch], clean_values: dict[str, torch.Tensor]) -> dict:
    """Per hook name, a hook that puts the clean run's value (or one head's slice of it) into the rows asking."""
    wanted: dict[str, list[tuple[int, int | None]]] = {}
    for row, patch in enumerate(patches):
        for name, head in patch.values:
            wanted.setdefault(name, []).append((row, head))

    def hook_for(name: str):
        whole = [row for row, head in wanted[name] if head is None]
        sliced = [(row, head) for row, head in wanted[name] if head is not None]

        def replace(value: torch.Tensor, _: str) -> torch.Tensor:
            clean = clean_values[name][0].to(value.dtype)
            value = value.clone()
            if whole:
                value[whole] = clean
            if sliced:
                rows, heads = zip(*sliced)
                value[list(rows), list(heads)] = clean[list(heads)]
            return value
        return replace

    return {name: hook_for(name) for name in wanted}


@torch.no_grad()
def patch(model: ExplorerModel, clean: str, corrupt: str, metric: str = "total", fix_casing: bool = False
          ) -> PatchingResult:
    """How much of the clean output's log-probability each head's z and each layer's output restores when patched
    from the clean run into the corrupted one. fix_casing: feed all-caps or all-lower-case sentences in sentence
    case, as the pages do."""
    if metric not in METRICS:
        raise InputError(f"metric {metric!r}: expected one of {', '.join(METRICS)}")
    clean_source, corrupt_source = same_length_sources(model, clean, corrupt, fix_casing)
    clean_ids, corrupt_ids = clean_source.ids, corrupt_source.ids
    scorer = Scorer(model, clean_ids, corrupt_ids, metric)
    patches = patch_list(model)
    names = sorted({name for p in patches for name, _ in p.values})
    _, clean_values = model.run_with_cache(*scorer.row(0), names=names)
    clean_logits = scorer.outputs(*scorer.row(0))
    lp_clean = float(scorer.log_probs(clean_logits)[0])
    # The corrupted run alone: the batch's unpatched row must match it (restored 0), a check on the hooks.
    lp_corrupt = float(scorer.log_probs(scorer.outputs(*scorer.row(1)))[0])
    positions = max(part.ids.shape[1] for part in scorer.inputs if part is not None)
    # h8 on 20 tokens: all 80 rows at once; GPT-2 small (50,257 logits a position): ~25 rows a pass
    chunk = max(1, min(CHUNK_TOKENS // positions, LOGIT_BUDGET // (clean_logits[0].numel())))
    lps = []
    for start in range(0, len(patches), chunk):
        part = patches[start: start + chunk]
        with model_run(patched_hooks(part, clean_values), hook_names=model.hook_names):
            lps.append(scorer.log_probs(scorer.outputs(*scorer.repeated(1, len(part)))))
    lp = dict(zip((p.label for p in patches), torch.cat(lps).tolist()))
    spread = lp_clean - lp_corrupt

    def restored(label: str) -> float:
        return (lp[label] - lp_corrupt) / spread if abs(spread) >= NOTHING_TO_RESTORE else float("nan")

    heads = {kind: np.array([[restored(f"{kind}.{layer}.{head}") for head in range(model.heads)]
                             for layer in range(model.layers(kind))]) for kind in model.kinds}
    outputs = {stack: np.array([restored(layer_hook(stack, layer)) for layer in range(model.layers(stack))])
               for stack in STACKS if model.has(stack)}
    return PatchingResult(
        clean=clean_source.text, corrupt=corrupt_source.text,
        source_tokens=clean_source.pieces, corrupt_tokens=corrupt_source.pieces, target_tokens=model.pieces(scorer.chosen),
        clean_output=scorer.output_text, corrupt_output=scorer.corrupt_text, metric=metric, read_at=scorer.read_at,
        lp_clean=lp_clean, lp_corrupt=lp_corrupt, heads=heads, layer_outputs=outputs,
        all_layers=restored("all layers"), nothing=restored("nothing"))


# A corrupted sentence to start from (Meng et al. corrupt the subject): a noun of the sentence replaced by another
# noun of the same kind, so the change is one of meaning, not of grammar ("The" → "Dog" would only break the
# sentence). Singular and plural nouns are kinds apart, so the verb still agrees. Every word is one the bundled
# Multi30k models know; the order is the order of preference, the named counterpart first.
NOUN_KINDS = {
    "a person for a person": ("man", "woman", "boy", "girl", "child", "person", "lady", "guy", "kid"),
    "people for people": ("men", "women", "boys", "girls", "children", "people", "kids"),
    "an animal for an animal": ("dog", "cat", "horse", "bird", "cow", "animal"),
    "animals for animals": ("dogs", "cats", "horses", "birds", "cows", "animals"),
    "a place for a place": ("street", "road", "beach", "park", "field", "river", "lake", "city"),
    "a vehicle for a vehicle": ("bicycle", "bike", "car", "truck", "bus", "boat", "motorcycle"),
    "a garment for a garment": ("shirt", "jacket", "dress", "coat", "hat"),
    "a thing for a thing": ("ball", "book", "camera", "guitar"),
}
# Where a sentence names no noun of those kinds: a colour for a colour, a number for a number.
OTHER_KINDS = {
    "a colour for a colour": ("red", "blue", "green", "yellow", "black", "white", "brown", "orange", "pink"),
    "a number for a number": ("two", "three", "four", "five"),
}
COUNTERPARTS = {"man": "woman", "woman": "man", "boy": "girl", "girl": "boy", "men": "women", "women": "men",
                "boys": "girls", "girls": "boys", "dog": "cat", "cat": "dog", "dogs": "cats", "cats": "dogs",
                "animal": "dog", "street": "road", "road": "street", "red": "blue", "blue": "red",
                "black": "white", "white": "black", "two": "three", "three": "two"}


@dataclass(frozen=True)
class Swap:
    """A suggested corruption: the sentence with `original` replaced by `replacement`, a word of the same kind."""
    text: str
    original: str
    replacement: str
    kind: str           # "a person for a person"

    def description(self) -> str:
        return f"“{self.original}” → “{self.replacement}” ({self.kind})"


def replacements(word: str) -> tuple[str, list[str]] | None:
    """(the kind, the words of that kind to try in order) for a word of a known kind, else None."""
    for kinds in (NOUN_KINDS, OTHER_KINDS):
        for kind, words in kinds.items():
            if word in words:
                preferred = [COUNTERPARTS[word]] if word in COUNTERPARTS else []
                return kind, list(dict.fromkeys(preferred + [other for other in words if other != word]))
    return None


def suggested_swap(model: ExplorerModel, text: str) -> Swap | None:
    """One word of the sentence replaced by another of the same kind that keeps its number of pieces, so that each
    position has its counterpart: the sentence's first noun of a known kind, else its first colour or number;
    None when the sentence holds no such word or no replacement keeps the length."""
    words = text.split()
    try:
        clean_ids = model.encode(text).ids
    except ExplorerError:               # a sentence the model cannot read: no suggestion (a bug still raises)
        return None
    cores = [word.strip(".,;:!?\"'()") for word in words]
    found = [(i, replacements(core.lower())) for i, core in enumerate(cores)]
    nouns = [(i, options) for i, options in found if options and options[0] in NOUN_KINDS]
    others = [(i, options) for i, options in found if options and options[0] in OTHER_KINDS]
    for i, (kind, options) in nouns + others:
        core = cores[i]
        for option in options:
            option = option.capitalize() if core[0].isupper() else option
            candidate = " ".join(words[:i] + [words[i].replace(core, option, 1)] + words[i + 1:])
            ids = model.encode(candidate).ids
            # As many pieces, and other pieces: a small vocabulary may read both words as the same unknown piece.
            if len(ids) == len(clean_ids) and ids != clean_ids:
                return Swap(candidate, core, option, kind)
    return None


def suggest_corruption(model: ExplorerModel, text: str) -> str | None:
    """The sentence with one word replaced by another of its kind and as many pieces (suggested_swap), or None."""
    swap = suggested_swap(model, text)
    return swap.text if swap else None


def marked_changes(text: str, other: str) -> str:
    """text as HTML, escaped (a sentence may hold markup), the words that differ from other's in bold."""
    words, others = re.split(r"(\s+)", text), re.split(r"(\s+)", other)
    changed = set()
    for tag, start, end, _, _ in difflib.SequenceMatcher(None, words, others, autojunk=False).get_opcodes():
        if tag != "equal":
            changed.update(range(start, end))
    return "".join(f"<b>{html.escape(word)}</b>" if i in changed and word.strip() else html.escape(word)
                   for i, word in enumerate(words))
