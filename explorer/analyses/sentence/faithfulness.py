"""Does attention point where the output depends? Attention-derived token scores against two references, per sentence
and over a corpus, in the manner of Abnar & Zuidema 2020 ("Quantifying Attention Flow in Transformers", ACL, §4:
Spearman correlation of raw attention, rollout and flow with input gradients and blank-out importance).

Choices, stated once (the Faithfulness page and docs/analyses.md repeat them):
- The output is the model's own: its greedy translation or continuation with its end token, or, for a masked
  language model, the token it fills in. Its log-probability is summed over the output tokens under teacher
  forcing (explorer/capture/forcing.py); nothing of a reference enters.
- Scored tokens: the source's, special tokens (BOS, EOS, [CLS], [SEP], padding, the [MASK] itself) left out. An
  encoder–decoder's source is the encoder's input; a decoder-only model's the prompt; a masked language model's
  the sentence with the [MASK] the person typed, or else its middle token hidden behind [MASK] (the Decoding page's
  default). A sentence encoder (Embeds) writes no token: what is explained is the cosine similarity of the
  sentence's embedding to a second sentence's (the Translation page's comparison), which mean pooling reads from
  every position alike (over a corpus: the similarity to CORPUS_COMPARED, a generic caption).
- Leave-one-out (the reference): log p(output | source) − log p(output | source with token i replaced by the
  model's unknown token, or its mask token where it has none), every blanked variant in one batch.
- Gradient × input: ‖∂ log p(output)/∂x_i ⊙ x_i‖₂, the L2 norm over the input vector x_i (token embedding +
  position, the `encoder.input` / `decoder.input` hook point made a leaf), a magnitude like the attention scores.
  (The signed sum Σ_d, the first-order estimate of removing the vector, ranked tokens no better than chance on
  en-de-h8: ρ −0.05 with leave-one-out over 30 Multi30k sentences, against 0.21 for the L2 norm.)
- Attention scores, from the last layer, averaged over heads and over the positions that predict the output
  (decoder steps, or the masked position): an encoder–decoder's cross-attention ("last_layer"), carried back to the
  input tokens through the encoder's attention rollout ("rollout") or attention flow ("flow"), and the cross
  norms ‖α f(x)‖ of Kobayashi et al. 2020 ("norm"); a decoder-only model's and a masked language model's own
  self-attention rows, rollout and flow rows, and norms.
- Spearman's ρ (scipy.stats.spearmanr) of each against leave-one-out and against gradient × input. A sentence
  with fewer than MIN_TOKENS scored tokens is skipped with its reason; a correlation with a constant side is
  undefined and left out of the means (counted). Flow beyond explorer.analyses.sentence.flow.MAX_FLOW_TOKENS is left out likewise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.stats import spearmanr

from explorer.analyses.sentence.flow import MAX_FLOW_TOKENS, attention_flow
from explorer.analyses.sentence.rollout import attention_rollout
from explorer.capture.forcing import IGNORED, forced_batch
from explorer.capture.inputs import InputError, prepare_source
from explorer.capture.trace import decoded
from explorer.capture.value_norms import norm_attention
from explorer.models.hooks import model_run
from explorer.models.interface import Embeds, ExplorerModel
from explorer.models.vocabulary import attention_hook, stack_hook

MIN_TOKENS = 3
ROWS_PER_PASS = 16          # blanked variants per forward pass: a 58,000-piece vocabulary × 60 positions × 16 rows
METHODS = ("last_layer", "rollout", "flow", "norm", "gradient_x_input")
ATTENTION_METHODS = METHODS[:4]
METHOD_TITLES = {"leave_one_out": "leave-one-out", "gradient_x_input": "gradient × input",
                 "last_layer": "last-layer attention", "rollout": "rollout", "flow": "flow",
                 "norm": "norm ‖α f(x)‖"}
# Abnar & Zuidema 2020, Table 1: their 6-layer Transformer encoder predicting verb number (subject–verb agreement),
# layer 6, Spearman's ρ with blank-out importance, the mean over their test examples.
# A sentence encoder's second sentence over a corpus: one generic caption for every line (not a line of the corpus,
# so that a shard of it scores each line as the whole corpus does), near enough to every caption that its cosine
# with each has something to explain.
CORPUS_COMPARED = "A person is doing something outside."
ABNAR_ZUIDEMA = {"last_layer": 0.29, "rollout": 0.71, "flow": 0.70}


@dataclass
class Setup:
    """What is scored for one sentence."""

    source_ids: list[int]       # what the model reads: the encoder's input, or the prompt (BERT: with its [MASK])
    output_ids: list[int]       # its own output: greedy output + end token, or the filled-in token(s)
    positions: list[int]        # the attention rows that predict the output (decoder positions, or the masks)
    scored: list[int]           # source positions that are blanked and scored
    tokens: list[str]           # the source's pieces
    compared_ids: list[int] = field(default_factory=list)  # a sentence encoder's second sentence


@dataclass
class Faithfulness:
    tokens: list[str]                           # the scored tokens
    output: str                                 # what the scores explain
    leave_one_out: np.ndarray
    gradient_x_input: np.ndarray
    attention: dict[str, np.ndarray]            # method → score per scored token (flow absent beyond its cap)
    spearman: dict[str, float]                  # method (and gradient_x_input) → ρ with leave-one-out
    spearman_gradient: dict[str, float]         # attention method → ρ with gradient × input
    notes: list[str] = field(default_factory=list)

    def scores(self) -> dict[str, np.ndarray]:
        """Every score per token, references first."""
        return {"leave_one_out": self.leave_one_out, "gradient_x_input": self.gradient_x_input, **self.attention}


class Unscorable(InputError):
    """A sentence this analysis cannot score (too few tokens, no output, no blank token); the message says why,
    `reason` says it in a few words (the corpus report counts skipped sentences by it)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


def blank_id(model: ExplorerModel) -> int:
    blank = model.unk_id if model.unk_id is not None else model.mask_id
    if blank is None:
        raise Unscorable(f"{model.name} has neither an unknown nor a mask token to blank a token out with")
    return blank


def with_end_token(model: ExplorerModel, source_ids: list[int], output: list[int]) -> list[int]:
    """A generated output and its end token, when the model chose one before its step limit (as trace.decoded)."""
    ended = len(output) < model.step_limit(len(source_ids))
    return output + [model.end_id] if ended else output


def setup_for(model: ExplorerModel, text: str, fix_casing: bool = False, output: list[int] | None = None,
              compared: str = "") -> Setup:
    """output: the model's greedy output with its end token, when already generated (a corpus: in batches).
    compared: the second sentence a sentence encoder's similarity is explained against."""
    source = prepare_source(text, model, fix_casing)
    ids = list(source.ids)
    compared_ids = []
    if isinstance(model, Embeds):                   # every position is pooled: every row predicts the output
        if not compared.strip():
            raise Unscorable(f"{model.name} writes no token: its faithfulness explains the cosine similarity to a "
                             "second sentence, and none was given", "no second sentence to compare with")
        compared_ids = prepare_source(compared, model, fix_casing).ids
        output, positions, masked = [], list(range(len(ids))), set()
    elif model.has("decoder"):
        if output is None:
            _, output = decoded(model, ids)         # greedy, with the end token when the model chose one
        if not output:
            raise Unscorable("the model produced no output for this sentence")
        target, first = model.decoder_input(ids, output[:-1])
        positions = list(range(first, first + len(output)))
        masked = set()
    else:                                           # a masked language model: explain the filled-in token
        if model.mask_id is None:
            raise Unscorable(f"{model.name} neither generates nor fills in masks")
        if model.mask_id not in ids:
            words = [i for i, token in enumerate(ids) if token not in model.special_ids]
            if not words:
                raise Unscorable("the sentence has no token to mask")
            ids[words[len(words) // 2]] = model.mask_id
        positions = [i for i, token in enumerate(ids) if token == model.mask_id]
        with torch.no_grad():
            logits = model.forward(model.pad([ids]))[0, positions].float()
        logits[:, sorted(model.special_ids | {model.pad_id})] = -torch.inf     # a word, not [SEP] or [MASK]
        output = logits.argmax(-1).tolist()
        masked = set(positions)
    scored = [i for i, token in enumerate(ids)
              if token not in model.special_ids and i not in masked and token != blank_id(model)]
    return Setup(ids, output, positions, scored, model.pieces(ids), compared_ids)


def widened(values: torch.Tensor) -> torch.Tensor:
    """float32 at least (a half-precision model's logits), float64 kept."""
    return values.to(torch.promote_types(values.dtype, torch.float32))


def output_log_probs(model: ExplorerModel, setup: Setup, rows: list[list[int]]) -> torch.Tensor:
    """log p(setup's output | each source row), summed over the output tokens: [rows]. For a sentence encoder, the
    cosine of each row's embedding with the second sentence's instead."""
    if setup.compared_ids:
        embeddings = widened(model.embed(model.pad(rows + [setup.compared_ids])))
        return torch.nn.functional.cosine_similarity(embeddings[:-1], embeddings[-1:], dim=-1)
    if not model.has("decoder"):
        logits = widened(model.forward(model.pad(rows))[:, setup.positions])
        chosen = torch.tensor(setup.output_ids)[None, :, None].expand(len(rows), -1, 1)
        return torch.log_softmax(logits, -1).gather(-1, chosen)[..., 0].sum(-1)
    source, target, labels = forced_batch(model, [(row, setup.output_ids) for row in rows])
    log_probs = torch.log_softmax(widened(model.forward(source, target)), -1)
    picked = log_probs.gather(-1, labels.clamp_min(0)[..., None])[..., 0]
    return (picked * (labels != IGNORED)).sum(-1)


@torch.no_grad()
def leave_one_out(model: ExplorerModel, setup: Setup) -> np.ndarray:
    """log p(output | source) − log p(output | source with token i blanked), for each scored position i."""
    blank = blank_id(model)
    rows = [setup.source_ids]
    for position in setup.scored:
        row = list(setup.source_ids)
        row[position] = blank
        rows.append(row)
    totals = torch.cat([output_log_probs(model, setup, rows[start: start + ROWS_PER_PASS])
                        for start in range(0, len(rows), ROWS_PER_PASS)])
    return (totals[0] - totals[1:]).cpu().numpy()


def input_gradient(model: ExplorerModel, setup: Setup) -> tuple[torch.Tensor, torch.Tensor]:
    """(∂ log p(output)/∂x, x) for the stack's input vectors x [1, positions, d_model]: the `encoder.input` (or
    `decoder.input`) hook point replaced by a leaf that requires grad."""
    name = stack_hook("encoder" if model.has("encoder") else "decoder", "input")
    leaf = {}

    def as_leaf(value: torch.Tensor, _: str) -> torch.Tensor:
        leaf["x"] = widened(value.detach()).requires_grad_(True)
        return leaf["x"].to(value.dtype)

    with torch.enable_grad(), model_run(hooks={name: as_leaf}, hook_names=model.hook_names):
        total = output_log_probs(model, setup, [setup.source_ids])[0]
        (gradient,) = torch.autograd.grad(total, leaf["x"])
    return gradient, leaf["x"].detach()


def gradient_x_input(model: ExplorerModel, setup: Setup) -> np.ndarray:
    """‖∂ log p(output)/∂x_i ⊙ x_i‖₂ at each scored position i, x the stack's input vectors."""
    gradient, inputs = input_gradient(model, setup)
    return torch.linalg.vector_norm(gradient * inputs, dim=-1)[0, setup.scored].cpu().numpy()


@torch.no_grad()
def captured_attention(model: ExplorerModel, setup: Setup) -> dict[str, dict[str, np.ndarray]]:
    """kind → {"pattern", "norm"} [layers, heads, query, key] for the sentence with its output."""
    encoder = model.pad([setup.source_ids]) if model.has("encoder") else None
    decoder = None
    if model.has("decoder"):
        decoder = model.pad([model.decoder_input(setup.source_ids, setup.output_ids[:-1])[0]])
    names = [attention_hook(kind, "*", value) for kind in model.kinds for value in ("pattern", "v")]
    _, cache = model.run_with_cache(encoder, decoder, names)
    captured = {}
    for kind in model.kinds:
        pattern = cache.layers(kind, "pattern")[0].float().cpu().numpy()
        captured[kind] = {"pattern": pattern,
                          "norm": norm_attention(model, kind, pattern, cache.layers(kind, "v")[0].float().cpu().numpy())}
    return captured


def attention_scores(model: ExplorerModel, setup: Setup) -> tuple[dict[str, np.ndarray], list[str]]:
    """method → score per scored source token, and notes (flow beyond its cap)."""
    captured, notes = captured_attention(model, setup), []
    rows = setup.positions
    if model.has("cross"):          # the output's cross-attention, carried back through the encoder
        cross = captured["cross"]
        last = cross["pattern"][-1].mean(0)[rows].mean(0)
        scores = {"last_layer": last, "norm": cross["norm"][-1].mean(0)[rows].mean(0)}
        encoder = captured["encoder"]["pattern"]
        scores["rollout"] = last @ attention_rollout(encoder)[-1]
        if len(setup.source_ids) <= MAX_FLOW_TOKENS:
            scores["flow"] = last @ attention_flow(encoder)
    else:                           # its own self-attention: the decoder's rows, or the masked position's
        kind = "decoder" if model.has("decoder") else "encoder"
        pattern, norm = captured[kind]["pattern"], captured[kind]["norm"]
        scores = {"last_layer": pattern[-1].mean(0)[rows].mean(0), "norm": norm[-1].mean(0)[rows].mean(0),
                  "rollout": attention_rollout(pattern)[-1][rows].mean(0)}
        if pattern.shape[-1] <= MAX_FLOW_TOKENS:
            scores["flow"] = attention_flow(pattern, rows).mean(0)
    if "flow" not in scores:
        notes.append(f"Attention flow is left out: it takes at most {MAX_FLOW_TOKENS} tokens "
                     "(explorer/analyses/sentence/flow.py).")
    ordered = {method: scores[method][setup.scored] for method in ATTENTION_METHODS if method in scores}
    return ordered, notes


def rank_correlation(scores: np.ndarray, reference: np.ndarray) -> float:
    """Spearman's ρ; NaN when either side is constant (no ranking to compare)."""
    if np.ptp(scores) == 0 or np.ptp(reference) == 0:
        return float("nan")
    return float(spearmanr(scores, reference).statistic)


def faithfulness(model: ExplorerModel, text: str, fix_casing: bool = False,
                 output: list[int] | None = None, compared: str = "") -> Faithfulness:
    """The per-token scores of one sentence and their rank correlations. Raises Unscorable (an InputError) with the
    reason when the sentence cannot be scored. output: its greedy output, when already generated. compared: a
    sentence encoder's second sentence."""
    setup = setup_for(model, text, fix_casing, output, compared)
    if len(setup.scored) < MIN_TOKENS:
        raise Unscorable(f"only {len(setup.scored)} scorable source token(s) (special tokens excluded); a rank "
                         f"correlation needs at least {MIN_TOKENS}", f"fewer than {MIN_TOKENS} scorable tokens")
    reference = leave_one_out(model, setup)
    gradient = gradient_x_input(model, setup)
    attention, notes = attention_scores(model, setup)
    spearman = {method: rank_correlation(values, reference) for method, values in attention.items()}
    spearman["gradient_x_input"] = rank_correlation(gradient, reference)
    if setup.compared_ids:
        with torch.no_grad():
            similarity = float(output_log_probs(model, setup, [setup.source_ids])[0])
        output = f"cosine {similarity:.3f} with “{compared}”"
    elif model.has("decoder"):
        output = model.detokenize(setup.output_ids)
    else:
        output = " ".join(model.pieces(setup.output_ids))
    return Faithfulness([setup.tokens[i] for i in setup.scored], output, reference, gradient, attention, spearman,
                        {method: rank_correlation(values, gradient) for method, values in attention.items()}, notes)


def faithfulness_tallies(model: ExplorerModel, sentences: list[str],
                         progress: Callable[[float], None] | None = None) -> dict:
    """Additive sums over sentences (one shard's): per method the sum of ρ and the count of defined ρ, against
    leave-one-out and against gradient × input; skipped sentences counted by reason."""
    tallies = {"sentences": 0, "skipped": {}, "sum": {}, "count": {}, "sum_gradient": {}, "count_gradient": {},
               "per_sentence": []}
    outputs = greedy_outputs(model, sentences)
    for number, (text, output) in enumerate(zip(sentences, outputs), start=1):
        if progress:
            progress((number - 1) / len(sentences))
        try:
            result = faithfulness(model, text, fix_casing=False, output=output,
                                  compared=CORPUS_COMPARED if isinstance(model, Embeds) else "")
        except InputError as error:                    # Unscorable, or an empty line
            reason = getattr(error, "reason", str(error))
            tallies["skipped"][reason] = tallies["skipped"].get(reason, 0) + 1
            continue
        tallies["sentences"] += 1
        # each sentence's ρ per method, for intervals over sentences (the Papers bench's verdicts)
        tallies["per_sentence"].append({method: float(rho) for method, rho in result.spearman.items()})
        for sums, counts, values in (("sum", "count", result.spearman),
                                     ("sum_gradient", "count_gradient", result.spearman_gradient)):
            for method, rho in values.items():
                if not np.isnan(rho):
                    tallies[sums][method] = tallies[sums].get(method, 0.0) + rho
                    tallies[counts][method] = tallies[counts].get(method, 0) + 1
    if progress:
        progress(1.0)
    return tallies


def greedy_outputs(model: ExplorerModel, sentences: list[str]) -> list[list[int] | None]:
    """Each sentence's greedy output with its end token, generated model.generation_batch sentences at a time (a
    shard that starts at a multiple of it batches every sentence as one process does: the same outputs); None for
    a line that is no sentence, or for a model that does not generate."""
    outputs: list[list[int] | None] = [None] * len(sentences)
    if not model.has("decoder"):
        return outputs
    size = max(1, model.generation_batch)
    for start in range(0, len(sentences), size):
        sources = {}
        for index in range(start, min(start + size, len(sentences))):
            try:
                sources[index] = prepare_source(sentences[index], model).ids
            except InputError:
                continue                            # faithfulness() says why
        generated = model.generate(list(sources.values())) if sources else []
        for (index, ids), output in zip(sources.items(), generated):
            outputs[index] = with_end_token(model, ids, output[: model.max_positions - 1])
    return outputs


def merge_tallies(parts: list[dict]) -> dict:
    merged = {"sentences": 0, "skipped": {}, "sum": {}, "count": {}, "sum_gradient": {}, "count_gradient": {},
              "per_sentence": []}
    for part in parts:
        merged["sentences"] += part["sentences"]
        merged["per_sentence"] += part.get("per_sentence", [])
        for name in ("skipped", "sum", "count", "sum_gradient", "count_gradient"):
            for key, value in part[name].items():
                merged[name][key] = merged[name].get(key, 0) + value
    return merged


def summary(tallies: dict) -> dict:
    """The JSON report: per method the mean ρ with leave-one-out (and with gradient × input) and its count."""
    methods = {}
    for method in METHODS:
        if method not in tallies["count"]:
            continue
        entry = {"spearman": round(tallies["sum"][method] / tallies["count"][method], 4),
                 "sentences": tallies["count"][method]}
        if method in tallies["count_gradient"]:
            entry["spearman_gradient_x_input"] = round(
                tallies["sum_gradient"][method] / tallies["count_gradient"][method], 4)
        methods[method] = entry
    return {"sentences": tallies["sentences"], "skipped": dict(sorted(tallies["skipped"].items())),
            "methods": methods}
