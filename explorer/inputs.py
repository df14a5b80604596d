"""Turning what a person typed into model input, with messages a person understands."""

from __future__ import annotations

from dataclasses import dataclass

from models.tokenizer import UNK, Tokenizer, clean_text


class InputError(ValueError):
    """Input the model cannot translate; the message says what to do instead."""


@dataclass
class PreparedSource:
    text: str            # cleaned: normalised Unicode, control characters replaced, whitespace collapsed
    ids: list[int]       # pieces + EOS, at most max_len
    pieces: list[str]
    truncated: bool      # the sentence was longer than the model's maximum and was cut

    def notice(self, max_len: int) -> str:
        return (f"The sentence is longer than the model's maximum of {max_len} tokens; "
                f"only its first {max_len - 1} pieces are translated.") if self.truncated else ""


def unknown_characters(text: str, tokenizer: Tokenizer) -> list[str]:
    """The text of the pieces the vocabulary does not have (emoji, CJK …): the model reads <unk> for each."""
    cleaned = clean_text(text)
    surfaces, ids = tokenizer.sp.encode(cleaned, out_type=str), tokenizer.sp.encode(cleaned)
    return list(dict.fromkeys(s.lstrip("▁") for s, i in zip(surfaces, ids) if i == UNK and s.lstrip("▁")))


def prepare_source(text: str, tokenizer: Tokenizer, max_len: int) -> PreparedSource:
    if not isinstance(text, str):
        raise InputError("The sentence must be text.")
    cleaned = clean_text(text)
    if not cleaned:
        raise InputError("Please type a sentence to translate (the input is empty).")
    encoded = tokenizer.encode(cleaned, max_len)
    return PreparedSource(cleaned, encoded.ids, encoded.pieces, encoded.truncated)
