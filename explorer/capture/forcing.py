"""Teacher forcing, for every model the explorer opens: feed a given output to the decoder (after its start
token, or after the prompt) and read the distribution each of its tokens was predicted from. Written once on
the model interface's decoder_input; used by the trace's siblings (teacher forcing, pruned-vs-unpruned steps)
and by the corpus scorers."""

from __future__ import annotations

import torch

from explorer.models.interface import Batch, ExplorerModel, Generates

IGNORED = -100                  # label of a position that is not scored (transformers' convention)


def forced_batch(model: ExplorerModel, pairs: list[tuple[list[int], list[int]]]
                 ) -> tuple[Batch | None, Batch, torch.Tensor]:
    """(source batch or None, target batch, labels [rows, target positions]) for (source, output) pairs: the
    target position that predicts output token i is labelled with it, every other position IGNORED."""
    assert isinstance(model, Generates)             # only a model that writes has a decoder to force
    targets: list[list[int]] = []
    labels: list[list[int]] = []
    for source_ids, output in pairs:
        target, first = model.decoder_input(source_ids, output[:-1])
        row = [IGNORED] * len(target)
        row[first: first + len(output)] = output
        targets.append(target)
        labels.append(row)
    source = model.pad([source for source, _ in pairs]) if model.has("encoder") else None
    return source, model.pad(targets), Batch.of(labels, IGNORED).ids


def forced_log_probs(model: ExplorerModel, source_ids: list[int], output_ids: list[int]) -> torch.Tensor:
    """[len(output_ids), vocab]: the log-probabilities each output token was predicted from, given the ones
    before it (the head gates of the current call apply)."""
    source, target, labels = forced_batch(model, [(source_ids, output_ids)])
    logits = model.forward(source, target)
    assert logits is not None                       # with a target, forward gives its logits
    return torch.log_softmax(logits[0].float()[labels[0] != IGNORED], -1)
