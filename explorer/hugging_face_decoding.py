"""Decoding views of a Hugging Face model: the beam search tree, teacher forcing of a reference (or of a
continuation, for GPT-2), why decoding stopped, and BERT's masked-token view.

The beam tree is the explorer's own beam search (models/decoding.search_beams, GNMT length penalty α) over the
model's next-token distributions, so every live beam of every step can be drawn; transformers' `generate` keeps
only the finished ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.decoding_steps import TeacherForcing
from explorer.hugging_face_trace import CONTINUATION_TOKENS, piece_labels, positions_limit, source_step_limit
from explorer.inputs import InputError
from explorer.trace import StepDistribution, Trace, step_distributions
from models.decoding import BeamResult, search_beams
from models.hooks import capture, model_run
from models.hugging_face import HuggingFaceCheckpoint
from models.tokenizer import clean_text
from models.vocabulary import attention_hook


def _text(text: str, what: str = "a sentence") -> str:
    cleaned = clean_text(text) if isinstance(text, str) else ""
    if not cleaned:
        raise InputError(f"Please type {what} (the input is empty).")
    return cleaned


@torch.no_grad()
def beam_tree(checkpoint: HuggingFaceCheckpoint, text: str, beam_size: int, alpha: float = 0.6) -> BeamResult:
    """Every live beam at every step, for a translation (encoder–decoder) or a continuation (GPT-2)."""
    loaded, tokenizer = checkpoint.model, checkpoint.tokenizer
    model, config, limit = loaded.model, loaded.model.config, positions_limit(loaded)
    text = _text(text)
    if "cross" in loaded.kinds:
        encoded = tokenizer(text, truncation=True, max_length=limit, return_tensors="pt")
        memory = model.get_encoder()(**encoded)
        start = config.decoder_start_token_id

        def next_log_probs(last, histories):
            decoder_ids = torch.tensor([[start] + history for history in histories])
            output = model(encoder_outputs=(memory.last_hidden_state.expand(len(histories), -1, -1),),
                           attention_mask=encoded.attention_mask.expand(len(histories), -1),
                           decoder_input_ids=decoder_ids)
            return torch.log_softmax(output.logits[:, -1].float(), -1)

        max_steps = source_step_limit(loaded, encoded.input_ids.shape[1])
    else:
        prompt = tokenizer(text).input_ids[: limit - CONTINUATION_TOKENS]
        start = config.eos_token_id

        def next_log_probs(last, histories):
            output = model(input_ids=torch.tensor([prompt + history for history in histories]))
            return torch.log_softmax(output.logits[:, -1].float(), -1)

        max_steps = CONTINUATION_TOKENS
    # Each step reads the whole history again (no cache to reorder): simple, and fast enough for one sentence.
    return search_beams(next_log_probs, lambda parents: None, start, config.eos_token_id, beam_size, alpha, max_steps)


@torch.no_grad()
def teacher_forcing(checkpoint: HuggingFaceCheckpoint, text: str, reference: str) -> TeacherForcing:
    """Each reference token's probability given the ones before: a translation's tokens for an encoder–decoder,
    the continuation's for GPT-2 (after the prompt)."""
    loaded, tokenizer = checkpoint.model, checkpoint.tokenizer
    model, config, limit = loaded.model, loaded.model.config, positions_limit(loaded)
    text, reference = _text(text), _text(reference, "a reference")
    if "cross" in loaded.kinds:
        encoded = tokenizer(text, truncation=True, max_length=limit, return_tensors="pt")
        target = tokenizer(text_target=reference, truncation=True, max_length=limit - 1).input_ids
        decoder_ids = torch.tensor([[config.decoder_start_token_id] + target[:-1]])
        log_probs = torch.log_softmax(model(**encoded, decoder_input_ids=decoder_ids).logits[0].float(), -1)
    else:
        prompt = tokenizer(text).input_ids[: limit // 2]
        target = tokenizer(" " + reference).input_ids[: limit - len(prompt)]
        logits = model(input_ids=torch.tensor([prompt + target])).logits[0].float()
        log_probs = torch.log_softmax(logits, -1)[len(prompt) - 1: len(prompt) - 1 + len(target)]
    chosen = log_probs[torch.arange(len(target)), target]
    ranks = (log_probs > chosen[:, None]).sum(-1) + 1
    return TeacherForcing(piece_labels(tokenizer)(target), chosen.exp().tolist(), ranks.tolist(),
                          float(-chosen.mean()))


def stopping_reason(trace: Trace, checkpoint: HuggingFaceCheckpoint) -> str:
    """Why decoding stopped: the model chose its end token, or the explorer's limit on new tokens was reached."""
    end = piece_labels(checkpoint.tokenizer)([checkpoint.model.model.config.eos_token_id])[0]
    if trace.steps and trace.steps[-1].chosen_id == checkpoint.model.model.config.eos_token_id:
        return f"It stopped because the model chose {end} at step {len(trace.steps) - 1}."
    return f"It stopped at the explorer's limit of {len(trace.steps)} new tokens without choosing {end}."


@dataclass
class MaskedWord:
    """BERT's view of one token hidden behind [MASK]: its predictions, and which heads carried them."""

    tokens: list[str]           # the input with the token masked
    position: int
    prediction: StepDistribution    # chosen = the hidden token; top-k = what the model fills in
    head_effect: np.ndarray     # [layers, heads] |∂ log p(hidden token) / ∂ gate| (Michel et al. 2019, one example)
    attention: np.ndarray       # [layers, heads, keys]: where the [MASK] position attended


def maskable_positions(trace: Trace, checkpoint: HuggingFaceCheckpoint) -> list[int]:
    """The source positions that hold a real token (not [CLS], [SEP], <s>, </s>…)."""
    special = set(checkpoint.tokenizer.all_special_ids)
    return [i for i, token_id in enumerate(trace.source_ids) if token_id not in special]


def masked_word(checkpoint: HuggingFaceCheckpoint, trace: Trace, position: int, top_k: int = 10) -> MaskedWord:
    """Mask the token at `position` of the trace's input and ask the model to fill it in."""
    loaded, tokenizer = checkpoint.model, checkpoint.tokenizer
    if tokenizer.mask_token_id is None:
        raise InputError(f"{checkpoint.name} has no mask token: the masked-token view is for BERT-like models.")
    ids = list(trace.source_ids)
    hidden = ids[position]
    ids[position] = tokenizer.mask_token_id
    gates = {"encoder": torch.ones(loaded.layers("encoder"), loaded.heads, requires_grad=True)}
    names = [attention_hook("encoder", "*", "pattern")]
    with torch.enable_grad(), model_run(head_mask=gates), capture(loaded.hook_names, names) as cache:
        logits = loaded.model(input_ids=torch.tensor([ids])).logits[0, position].float()
        log_probs = torch.log_softmax(logits, -1)
        (gradient,) = torch.autograd.grad(log_probs[hidden], [gates["encoder"]])
    labels = piece_labels(tokenizer)
    prediction = step_distributions(log_probs.detach()[None], [hidden], labels, top_k)[0]
    attention = cache.layers("encoder", "pattern")[0, :, :, position].numpy()
    return MaskedWord(labels(ids), position, prediction, gradient.abs().numpy(), attention)


@torch.no_grad()
def compare_steps(checkpoint: HuggingFaceCheckpoint, trace: Trace, pruned_gates: dict):
    """The unpruned output teacher-forced through the model with and without the pruned heads, step by step."""
    from explorer.pruning import StepComparison

    loaded = checkpoint.model
    if "cross" in loaded.kinds:
        inputs = {"input_ids": torch.tensor([trace.source_ids]), "decoder_input_ids": torch.tensor([trace.target_ids])}
    else:
        inputs = {"input_ids": torch.tensor([trace.target_ids])}
    rows = torch.arange(len(trace.steps)) + trace.first_step_position
    chosen = torch.tensor([step.chosen_id for step in trace.steps])
    base = torch.log_softmax(loaded.model(**inputs).logits[0].float(), -1)[rows]
    with model_run(head_mask=pruned_gates):
        changed = torch.log_softmax(loaded.model(**inputs).logits[0].float(), -1)[rows]
    index = torch.arange(len(rows))
    kl = (base.exp() * (base - changed)).sum(-1)
    return StepComparison([step.chosen for step in trace.steps], base[index, chosen].exp().tolist(),
                          changed[index, chosen].exp().tolist(), kl.clamp_min(0).tolist())
