"""One sentence through a Hugging Face model (models/hugging_face.py), into the explorer's Trace.

Encoder–decoders (Marian, BART) translate: transformers' own `generate` decodes (greedy or beam, with the head
mask of the call in force), then one teacher-forced pass over the start token + output captures every hook
point, as for our models. Decoder-only models (GPT-2) continue the prompt the same way; the trace's
target ids are the prompt and the continuation, as fed to the decoder. Encoder-only models (BERT) are traced in
one pass over the sentence. The trace holds the kinds of attention the model has.
"""

from __future__ import annotations

from pathlib import Path

import torch

from explorer.inputs import InputError
from explorer.trace import PER_HEAD_VALUES, Trace, step_distributions
from models.hooks import model_run
from models.hugging_face import HuggingFaceError, HuggingFaceModel
from models.tokenizer import clean_text
from models.vocabulary import attention_hook, stack_hook

CONTINUATION_TOKENS = 30      # how far a decoder-only model continues a prompt


def load_tokenizer(folder: str | Path):
    """The folder's own tokenizer (SentencePiece for Marian, WordPiece for BERT, byte-level BPE for GPT-2…)."""
    import warnings

    from transformers import AutoTokenizer

    try:
        with warnings.catch_warnings():       # Marian's "Recommended: pip install sacremoses" (a text normaliser)
            warnings.filterwarnings("ignore", message=".*sacremoses")
            return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, TypeError) as error:
        raise HuggingFaceError(f"{folder}: no tokenizer the explorer can load ({str(error).splitlines()[0]})") from None


def piece_labels(tokenizer):
    """ids → the pieces as the figures label them. Byte-level BPE (GPT-2, BART, RoBERTa) stores a piece as bytes
    mapped to letters (a space is Ġ, é is Ã©); its labels are the piece's text with a leading space written ▁,
    as SentencePiece writes it. Other tokenizers' pieces are already text."""
    byte_level = any(token.startswith("Ġ") for token in tokenizer.convert_ids_to_tokens(
        tokenizer(" a", add_special_tokens=False).input_ids))
    if not byte_level:
        return tokenizer.convert_ids_to_tokens
    special = set(tokenizer.all_special_tokens)

    def labels(ids: list[int]) -> list[str]:
        tokens = tokenizer.convert_ids_to_tokens(ids)
        return [token if token in special else tokenizer.convert_tokens_to_string([token]).replace(" ", "▁")
                for token in tokens]
    return labels


def positions_limit(loaded: HuggingFaceModel) -> int:
    config = loaded.model.config
    return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 512


def source_step_limit(loaded: HuggingFaceModel, source_length: int) -> int:
    """At most this many new tokens for a translation of a source of source_length ids."""
    return min(positions_limit(loaded) - 1, 2 * source_length + 10)


def _masks(cache, loaded: HuggingFaceModel, attention: dict) -> dict:
    """kind → [query, key] bool (True = may attend): as captured, or what no mask means for that kind."""
    masks = {}
    for kind in loaded.kinds:
        queries, keys = attention[kind]["pattern"].shape[-2:]
        name = attention_hook(kind, 0, "mask")
        if name in cache:
            masks[kind] = cache[name][0, 0].expand(queries, keys).numpy().copy()
        else:   # transformers passed no mask: nothing hidden, except the future for a decoder
            full = torch.ones(queries, keys, dtype=torch.bool)
            masks[kind] = (full.tril(keys - queries) if kind == "decoder" else full).numpy()
    return masks


@torch.no_grad()
def trace_hugging_face(loaded: HuggingFaceModel, tokenizer, text: str, beam_size: int = 1,
                       head_mask: dict | None = None, pruned_text: str = "", top_k: int = 10) -> Trace:
    """Translate (or continue, or encode) one sentence and capture every attention, mask and decoding step."""
    cleaned = clean_text(text) if isinstance(text, str) else ""
    if not cleaned:
        raise InputError("Please type a sentence (the input is empty).")
    model, config, limit = loaded.model, loaded.model.config, positions_limit(loaded)
    head_mask = head_mask or {}
    pieces = piece_labels(tokenizer)
    full_length = len(tokenizer(cleaned).input_ids)
    source_ids, target_ids, chosen, translation, steps_from = [], [], [], "", 0
    if "cross" in loaded.kinds:                                  # encoder–decoder: translate
        encoded = tokenizer(cleaned, truncation=True, max_length=limit, return_tensors="pt")
        with model_run(head_mask=head_mask):
            sequence = model.generate(**encoded, num_beams=beam_size, do_sample=False,
                                      max_new_tokens=source_step_limit(loaded, encoded.input_ids.shape[1]))[0].tolist()
        body = sequence[1:]
        ended = bool(body) and body[-1] == config.eos_token_id
        output = body[:-1] if ended else body
        source_ids, target_ids, chosen = encoded.input_ids[0].tolist(), sequence[:1] + output, body
        translation = tokenizer.decode(output, skip_special_tokens=True)
        inputs = dict(encoded, decoder_input_ids=torch.tensor([target_ids]))
    elif "decoder" in loaded.kinds:                              # decoder-only: continue the prompt
        prompt = tokenizer(cleaned, return_tensors="pt").input_ids[:, : limit - CONTINUATION_TOKENS]
        with model_run(head_mask=head_mask):
            sequence = model.generate(prompt, attention_mask=torch.ones_like(prompt), num_beams=beam_size,
                                      do_sample=False, max_new_tokens=CONTINUATION_TOKENS,
                                      pad_token_id=config.eos_token_id)[0].tolist()
        target_ids, chosen = sequence, sequence[prompt.shape[1]:]
        steps_from = prompt.shape[1] - 1                         # the position that chose the first new token
        translation = tokenizer.decode(chosen, skip_special_tokens=True)
        inputs = {"input_ids": torch.tensor([sequence])}
    else:                                                        # encoder-only: one pass
        encoded = tokenizer(cleaned, truncation=True, max_length=limit, return_tensors="pt")
        source_ids, inputs = encoded.input_ids[0].tolist(), dict(encoded)
    output, cache = loaded.run_with_cache("*", head_mask=head_mask, **inputs)
    attention = {kind: {value: cache.layers(kind, value)[0].float().numpy() for value in PER_HEAD_VALUES}
                 for kind in loaded.kinds}
    log_probs = torch.log_softmax(output.logits[0].float(), -1)[steps_from: steps_from + len(chosen)]
    steps = step_distributions(log_probs, chosen, pieces, top_k) if chosen and target_ids else []
    d_model = getattr(config, "d_model", None) or config.hidden_size
    sides = {side: stack for side, stack in (("source", "encoder"), ("target", "decoder"))
             if stack_hook(stack, "input") in cache}           # the sides the model has
    stacked = {value: {side: cache[stack_hook(stack, value)][0].float().numpy() for side, stack in sides.items()}
               for value in ("pos_encoding", "embed", "input")}
    return Trace(
        text=cleaned, translation=translation, source_ids=source_ids, target_ids=target_ids,
        source_tokens=pieces(source_ids), target_tokens=pieces(target_ids), output_tokens=pieces(chosen),
        truncated=full_length > limit, decoding=f"beam {beam_size}" if beam_size > 1 else "greedy",
        pruned=pruned_text, d_k=d_model // loaded.heads, attention=attention, masks=_masks(cache, loaded, attention),
        positional=stacked["pos_encoding"], embeddings=stacked["embed"], inputs=stacked["input"], steps=steps,
        first_step_position=steps_from)
