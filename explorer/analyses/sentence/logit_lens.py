"""The logit lens (nostalgebraist 2020, "interpreting GPT: the logit lens", LessWrong): read the residual stream
after every layer as if it were the last one, through the model's own final norm and output projection
(ExplorerModel.unembed), and see what the model "would predict" at that depth.

For a trace's output, teacher-forced: at each decoding step and each decoder layer (and the embeddings, the input
to layer 0), the top-k tokens with their probabilities and the probability and rank of the token the step finally
chose. The last layer's row is the model's own output distribution. A masked language model (BERT), which does
not decode, gets the lens over its encoder layers at one masked position. Written once on the model interface.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from explorer.capture.decoding_steps import maskable_positions
from explorer.capture.head_sets import head_mask, parse_heads
from explorer.capture.inputs import InputError
from explorer.capture.trace import Trace, trace_sentence
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import layer_hook, stack_hook

EMBEDDINGS = "embeddings"


@dataclass
class LogitLens:
    layers: list[str]               # row labels, first to last: "embeddings", "layer 0" … (the last: the output)
    steps: list[str]                # the token each step chose (the trace's output and its end token)
    chosen_ids: list[int]
    chosen_probs: np.ndarray        # [layers, steps]: the chosen token's probability through each layer's lens
    chosen_ranks: np.ndarray        # [layers, steps]: its rank there, 1 = the lens's top token
    top_ids: np.ndarray             # [layers, steps, k]
    top_tokens: list[list[list[str]]]
    top_probs: np.ndarray           # [layers, steps, k]
    stack: str                      # "decoder", or "encoder" for a masked language model
    what: str = "step"              # what a column is: a decoding "step", or the "masked" position
    input_ids: list[int] = field(default_factory=list)     # the token each step reads (a decoding lens's only)

    def settles_at(self) -> list[int | None]:
        """Per step, the row from which the chosen token is the lens's top token at every later layer (None when
        it is not even at the last layer, as a beam search's choice may not be)."""
        settled = []
        for ranks in self.chosen_ranks.T:
            row = None
            for index in range(len(ranks) - 1, -1, -1):
                if ranks[index] != 1:
                    break
                row = index
            settled.append(row)
        return settled


def mean_settling_layer(lens: LogitLens) -> tuple[float | None, int]:
    """(the layer, embeddings = −1, from which the chosen token is the lens's top token to the end, averaged over
    the steps where it is at the end; how many steps those are)."""
    settled = [row - 1 for row in lens.settles_at() if row is not None]
    return (sum(settled) / len(settled) if settled else None), len(settled)


def settling_counts(lens: LogitLens) -> list[tuple[str, int]]:
    """(row label, how many steps' chosen token becomes the lens's top token there and stays it to the output),
    first to last, the rows no step settles at left out."""
    counts = Counter(row for row in lens.settles_at() if row is not None)
    return [(lens.layers[row], counts[row]) for row in sorted(counts)]


def reads_input(lens: LogitLens, row: int) -> int:
    """How many steps' top token through the lens at `row` is the token the step reads (its input)."""
    return sum(int(top) == token for top, token in zip(lens.top_ids[row, :, 0], lens.input_ids))


def lens_note(lens: LogitLens) -> str:
    """The figure's reading in plain words: at which layer each step's choice becomes the top prediction for
    good (counts per layer), and why the first columns show each step's input token when they do."""
    steps = len(lens.steps)
    counts = settling_counts(lens)
    if not counts:
        return "At no step is the chosen token the top prediction at the output (the last layer)."
    where = [f"at {'the ' if name == EMBEDDINGS else ''}{name} for {count}{f' of {steps}' if i == 0 else ''} "
             f"step{'' if (steps if i == 0 else count) == 1 else 's'}" for i, (name, count) in enumerate(counts)]
    settled = sum(count for _, count in counts)
    note = ("The chosen token becomes the top prediction, and stays it up to the output, " + ", ".join(where)
            + (f"; at the other {steps - settled} it is not the output's top token (a beam search may choose "
               "another)" if settled < steps else "") + ".")
    if lens.input_ids:
        echoed = [(name, reads_input(lens, row)) for row, name in enumerate(lens.layers[:2])]
        shown = [f"{name} ({count} of {steps} steps)" for name, count in echoed if count * 2 > steps]
        if echoed[0][1] * 2 > steps:
            note += (f" The {' and '.join(shown)} column{'s' if len(shown) > 1 else ''} mostly show"
                     f"{'' if len(shown) > 1 else 's'} each step's input token (the one chosen at the step before) "
                     "rather than its prediction: the output projection is the embedding matrix itself (tied "
                     "weights), so the lens on a residual stream that is still mostly the input's embedding reads "
                     "that token back.")
    return note


def lens_rows(model: ExplorerModel, stack: str, source, target, positions: list[int],
              gates: dict) -> tuple[list[str], torch.Tensor]:
    """(row labels, log-probabilities [rows, positions, vocab]) of the embeddings and every layer of `stack`."""
    layers = model.layers(stack)
    names = [stack_hook(stack, "input")] + [layer_hook(stack, layer) for layer in range(layers)]
    _, cache = model.run_with_cache(source, target, names, head_mask=gates)
    hidden = torch.stack([cache[name][0, positions] for name in names])        # [rows, positions, d_model]
    with torch.no_grad():
        log_probs = torch.log_softmax(model.unembed(stack, hidden).float(), -1)
    return [EMBEDDINGS] + [f"layer {layer}" for layer in range(layers)], log_probs


def read_lens(model: ExplorerModel, labels: list[str], log_probs: torch.Tensor, chosen: list[int], stack: str,
              top_k: int, what: str) -> LogitLens:
    probs = log_probs.exp()
    index = torch.tensor(chosen)[None, :, None].expand(probs.shape[0], -1, 1)
    chosen_probs = probs.gather(-1, index)[..., 0]
    ranks = (probs > chosen_probs[..., None]).sum(-1) + 1
    top_probs, top_ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    rows, steps, k = top_ids.shape
    flat = model.pieces(top_ids.reshape(-1).tolist())
    top_tokens = [[flat[(r * steps + s) * k: (r * steps + s + 1) * k] for s in range(steps)] for r in range(rows)]
    return LogitLens(labels, model.pieces(chosen), list(chosen), chosen_probs.cpu().numpy(), ranks.cpu().numpy(),
                     top_ids.cpu().numpy(), top_tokens, top_probs.cpu().numpy(), stack, what)


def logit_lens(model: ExplorerModel, trace: Trace, top_k: int = 5) -> LogitLens:
    """The lens over the decoder for every step of the trace's output, teacher-forced (the trace's pruned heads
    stay pruned). InputError when the model has no decoder (masked_logit_lens) or the trace chose nothing."""
    if not model.has("decoder"):
        raise InputError(f"{model.name} has no decoder: it does not decode step by step, so the lens looks at a "
                         "masked position instead")
    if not trace.steps:
        raise InputError("The trace has no decoding steps to look through.")
    chosen = [step.chosen_id for step in trace.steps]
    positions = [trace.first_step_position + i for i in range(len(chosen))]
    source = model.pad([trace.source_ids]) if model.has("encoder") else None
    gates = head_mask(parse_heads(trace.pruned, model), model)
    labels, log_probs = lens_rows(model, "decoder", source, model.pad([trace.target_ids]), positions, gates)
    lens = read_lens(model, labels, log_probs, chosen, "decoder", top_k, "step")
    lens.input_ids = [trace.target_ids[position] for position in positions]
    return lens


def masked_logit_lens(model: ExplorerModel, trace: Trace, position: int, top_k: int = 5) -> LogitLens:
    """A masked language model's lens: the token at `position` hidden behind the mask token, and what each encoder
    layer would fill in (one column; chosen = the hidden token)."""
    if model.has("decoder"):
        raise InputError(f"{model.name} is not a masked language model: its lens reads the decoder's steps")
    if model.mask_id is None:
        raise InputError(f"{model.name} predicts no token (no decoder, no mask token): the logit lens reads a "
                         "model's layers through its output over the vocabulary, and this one has none")
    ids = list(trace.source_ids)
    hidden = ids[position]
    ids[position] = model.mask_id
    gates = head_mask(parse_heads(trace.pruned, model), model)
    labels, log_probs = lens_rows(model, "encoder", model.pad([ids]), None, [position], gates)
    return read_lens(model, labels, log_probs, [hidden], "encoder", top_k, "masked")


def lens_table(lens: LogitLens) -> pd.DataFrame:
    """One row per (layer, step): the chosen token's probability and rank, and the lens's top tokens."""
    rows = []
    for r, layer in enumerate(lens.layers):
        for s, token in enumerate(lens.steps):
            row = {"layer": layer, "step": s, "chosen": token, "p(chosen)": float(lens.chosen_probs[r, s]),
                   "rank": int(lens.chosen_ranks[r, s])}
            for i, (top, p) in enumerate(zip(lens.top_tokens[r][s], lens.top_probs[r, s])):
                row[f"top {i + 1}"], row[f"p{i + 1}"] = top, float(p)
            rows.append(row)
    return pd.DataFrame(rows)


def lens_of(model: ExplorerModel, sentence: str | Trace, top_k: int = 5, position: int | None = None) -> LogitLens:
    """The notebook's lens (explorer.analyses.sentence.logit_lens): over a sentence's output (traced here) or a trace's; a masked
    language model's at the masked `position` (default: a token near the middle)."""
    trace = trace_sentence(model, sentence) if isinstance(sentence, str) else sentence
    if model.has("decoder"):
        return logit_lens(model, trace, top_k)
    positions = maskable_positions(model, trace)
    if not positions:
        raise InputError("The sentence has no token to mask.")
    return masked_logit_lens(model, trace, positions[len(positions) // 2] if position is None else position, top_k)
