"""Turning what a person typed into model input, with messages a person understands."""

from __future__ import annotations

import re
from dataclasses import dataclass

from explorer.capture.input_kinds import TEXT, input_kind
from explorer.models.errors import ExplorerError
from explorer.models.interface import ExplorerModel
from explorer.models.tokenizer import clean_text


class InputError(ExplorerError):
    """Input the model cannot translate; the message says what to do instead."""


@dataclass
class PreparedSource:
    text: str            # cleaned: normalised Unicode, control characters replaced, whitespace collapsed
    ids: list[int]       # pieces + EOS, at most max_len
    pieces: list[str]
    truncated: bool      # the sentence was longer than the model's maximum and was cut
    recased_from: str = ""   # the cleaned text as typed, when it was all capitals or all lower case and was recased


LONE_I = re.compile(r"\bi\b")
MIN_CASED_LETTERS = 4     # "OK", "I" and "a" are not a casing choice


def sentence_case(text: str) -> str | None:
    """The sentence as a caption is written, when it was typed all in capitals or all in lower case.

    Why: the training captions are in sentence case. Models trained without casing variants wrote
    `WAAAAAAAAAA.` for `THE DOG IS RUNNING.`; even the bundled models, trained with 15% of casing variants,
    translate all-caps input worse (docs/models.md, benchmarks/casing.py). None when the casing is mixed (left as typed)
    or already sentence case. A sentence that starts with a digit keeps its first letter ("2 dogs run.").
    """
    cased = [c for c in text if c.lower() != c.upper()]
    if len(cased) < MIN_CASED_LETTERS:
        return None
    if all(c.isupper() for c in cased):
        lowered = LONE_I.sub("I", text.lower())
    elif all(c.islower() for c in cased):
        lowered = LONE_I.sub("I", text)
    else:
        return None
    recased = lowered[:1].upper() + lowered[1:]
    return recased if recased != text else None


def app_casing(model, asked: bool) -> bool:
    """Whether the app feeds a sentence in sentence case: asked (its checkbox, on by default) and the model was
    trained on sentence-case text (TextInput.reads_sentence_case: the bundled translators). Any other model reads
    the text as typed, as the command line and the notebook do unless asked (--recase, recase=True)."""
    return asked and bool(getattr(model, "reads_sentence_case", False))


def prepare_source(text: str, model: ExplorerModel, fix_casing: bool = False) -> PreparedSource:
    """The source as the model reads it. fix_casing: feed an all-caps or all-lower-case sentence in sentence case
    (what a person typing expects); corpus analyses leave it off, so that they measure the model on the text as
    it is."""
    if not isinstance(text, str):
        raise InputError("The sentence must be text.")
    kind = input_kind(model)
    if kind is not TEXT:        # a Vision Transformer has no tokenizer: say what it reads instead of failing inside
        raise InputError(f"{model.name} reads {kind.reads}, not text: give it {kind.what} (explorer.trace_{kind.name}"
                         f"(model, …) in a notebook, --{kind.name} on the command line)")
    cleaned = clean_text(text)
    if not cleaned:
        raise InputError("Please type a sentence (the input is empty).")
    recased = sentence_case(cleaned) if fix_casing else None
    encoded = model.encode(recased or cleaned)
    return PreparedSource(recased or cleaned, encoded.ids, encoded.pieces, encoded.truncated,
                          cleaned if recased else "")
