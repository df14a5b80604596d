"""M2M100 and NLLB (facebook/m2m100_418M, facebook/nllb-200-distilled-600M): multilingual encoder–decoders laid
out as BART is. Sinusoidal positions (all the sin dimensions, then the cos ones) whose rows start at the padding
id + 1; the decoder reads its start token and then the target language's token (which transformers' generate is
forced to produce first) before the output proper."""

from __future__ import annotations

import copy
import re

from .hf_encoder_decoder import EncoderDecoder
from .interface import Architecture, Multilingual
from .tokenizer import clean_text

NAMES = {"de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "nl": "Dutch", "pt": "Portuguese",
         "ru": "Russian", "zh": "Chinese", "ja": "Japanese", "en": "English", "ro": "Romanian", "cs": "Czech"}
NLLB_CODE = re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$")         # deu_Latn
NLLB_NAMES = {"deu_Latn": "de", "fra_Latn": "fr", "spa_Latn": "es", "ita_Latn": "it", "nld_Latn": "nl",
              "por_Latn": "pt", "rus_Cyrl": "ru", "zho_Hans": "zh", "jpn_Jpan": "ja", "eng_Latn": "en",
              "ron_Latn": "ro", "ces_Latn": "cs"}


def language_ids(tokenizer) -> dict[str, int]:
    """code → the id of its language token: M2M100's `__de__` tokens, or NLLB's `deu_Latn` tokens."""
    if getattr(tokenizer, "lang_code_to_id", None):
        return dict(tokenizer.lang_code_to_id)
    tokens = list(getattr(tokenizer, "additional_special_tokens", None) or [])
    return {token: tokenizer.convert_tokens_to_ids(token) for token in tokens if NLLB_CODE.match(token)}


class MultilingualEncoderDecoder(EncoderDecoder, Multilingual):
    norm_placement = "pre"
    def __post_init__(self) -> None:
        super().__post_init__()
        self.languages = language_ids(self.tokenizer)
        self.target_languages = tuple(sorted(self.languages))
        self.special_ids = self.special_ids | frozenset(self.languages.values())
        if not self.target_language:
            self.target_language = next((code for code in ("de", "deu_Latn") if code in self.languages),
                                        self.target_languages[0] if self.target_languages else "")
        # a fixed sinusoidal table (`weights`, not trained), rows from padding id + 1
        steps = self.architecture.embedding_steps
        self.architecture = Architecture("sinusoidal-halves", norm_placement="pre", embedding_steps=(
            steps[0], "+ sinusoidal position (rows from padding id + 1)", steps[2]))

    def for_target_language(self, language: str) -> MultilingualEncoderDecoder:
        """A shallow copy sharing weights, tokenizer and everything derived from them: asked on every rerun of a
        page, it must cost nothing (dataclasses.replace would derive it all again)."""
        if language == self.target_language:
            return self
        view = copy.copy(self)
        view.target_language = language
        return view

    @property
    def output_title(self) -> str:
        code = self.target_language
        name = NAMES.get(NLLB_NAMES.get(code, code))
        return f"{name} ({code})" if name else code

    def detokenize(self, ids: list[int]) -> str:
        return super().detokenize([i for i in ids if i not in self.special_ids])

    def decoder_prefix(self) -> list[int]:
        """The start token, then the target language's: the output proper begins after it."""
        return [self.start_id, self.languages[self.target_language]]

    def generation_options(self) -> dict:
        return {"forced_bos_token_id": self.languages[self.target_language]}

    def encode_reference(self, text: str) -> list[int]:
        """The text's pieces and the end token (the language token is part of the decoder's prefix; the shared
        tokenizer's own target language is never changed: sessions may want different ones)."""
        pieces = self.tokenize(clean_text(text), add_special_tokens=False).input_ids[: self.max_positions - 3]
        return pieces + [self.end_id]
