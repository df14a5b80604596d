"""The joint English+German SentencePiece vocabulary, and text clean-up before it sees a sentence."""

from __future__ import annotations

import io
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def clean_text(text: str) -> str:
    """NFC-normalise and replace control / format characters by spaces, so odd Unicode cannot break decoding."""
    text = unicodedata.normalize("NFC", text)
    kept = [" " if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") else ch for ch in text]
    return " ".join("".join(kept).split())


@dataclass
class Encoded:
    """A text as a model reads it (ExplorerModel.encode's answer, for every family)."""

    ids: list[int]          # input ids, special tokens included, at most the model's maximum
    pieces: list[str]       # their labels (▁ for a leading space, as SentencePiece writes it)
    truncated: bool         # True when the text was cut to fit


class Tokenizer:
    def __init__(self, model_path: str | Path) -> None:
        self.path = Path(model_path)
        self.sp = spm.SentencePieceProcessor(model_file=str(self.path))

    @classmethod
    def train(cls, sentences: Iterable[str], model_path: str | Path, vocab_size: int = 8000) -> Tokenizer:
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(list(sentences)), model_writer=model, vocab_size=vocab_size,
            model_type="unigram", character_coverage=1.0, pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
            input_sentence_size=1_000_000, shuffle_input_sentence=True, num_threads=2, minloglevel=2,
        )
        Path(model_path).write_bytes(model.getvalue())
        return cls(model_path)

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str, max_len: int = 256) -> Encoded:
        """Source side: pieces followed by EOS, cut to max_len ids."""
        ids = self.sp.encode(clean_text(text))
        truncated = len(ids) > max_len - 1
        ids = ids[: max_len - 1] + [EOS]
        return Encoded(ids, self.pieces(ids), truncated)

    def encode_ids(self, text: str) -> list[int]:
        return self.sp.encode(clean_text(text))

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode([i for i in ids if i not in (PAD, BOS, EOS)])

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.sp.id_to_piece(int(i)) for i in ids]

    def piece_frequencies(self, sentences: Iterable[str]) -> list[int]:
        """How often each piece id occurs in a corpus (for rare-token analysis)."""
        counts: Counter[int] = Counter()
        for sentence in sentences:
            counts.update(self.encode_ids(sentence))
        return [counts.get(i, 0) for i in range(self.vocab_size)]
