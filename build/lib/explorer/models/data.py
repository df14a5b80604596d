"""Reading parallel corpora (plain or .gz, one sentence per line) and batching them by token count."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import torch

from .errors import ExplorerError
from .tokenizer import BOS, EOS, PAD


class CorpusError(ExplorerError):
    """A corpus file that cannot be used; the message names the file and the problem."""


def file_bytes(path: str | Path) -> bytes:
    """The bytes of a file a person named, or a CorpusError that names it and says what is wrong."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise CorpusError(f"{path}: is a folder; give the path of a file")
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    try:
        return path.read_bytes()
    except OSError as error:
        raise CorpusError(f"{path}: cannot be read ({error.strerror})") from None


def decode_text(data: bytes, name: str, what: str = "UTF-8 text file") -> str:
    """The text of a plain or gzip file's bytes (told apart by gzip's magic bytes, so an uploaded file needs no
    name); errors name `name`, the person's own file."""
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError) as error:
        raise CorpusError(f"{name}: not a readable {what} ({error.__class__.__name__})") from None


def lines_of(data: bytes, name: str) -> list[str]:
    """One sentence per line (a final newline ends the last line, it does not start an empty one)."""
    text = decode_text(data, name)
    return [line.rstrip("\r") for line in (text[:-1] if text.endswith("\n") else text).split("\n")] if text else []


def read_lines(path: str | Path) -> list[str]:
    return lines_of(file_bytes(path), str(path))


def aligned(sources: list[str], references: list[str], src_name: str, ref_name: str) -> tuple[list[str], list[str]]:
    if len(sources) != len(references):
        raise CorpusError(f"{src_name} has {len(sources)} lines but {ref_name} has {len(references)}: "
                          "source and reference files must be aligned line by line")
    return sources, references


def read_parallel(src_path: str | Path, ref_path: str | Path) -> tuple[list[str], list[str]]:
    return aligned(read_lines(src_path), read_lines(ref_path), str(src_path), str(ref_path))


def pad_batch(sequences: list[list[int]]) -> torch.Tensor:
    longest = max(len(s) for s in sequences)
    return torch.tensor([s + [PAD] * (longest - len(s)) for s in sequences], dtype=torch.long)


def token_batches(pairs: list[tuple[list[int], list[int]]], max_tokens: int, seed: int) -> list[list[int]]:
    """Indices of pairs grouped into batches of similar length holding about max_tokens target tokens.

    Sorting by length (with a little noise so batches differ between epochs) keeps padding low;
    the batch order is then shuffled.
    """
    rng = random.Random(seed)
    order = sorted(range(len(pairs)), key=lambda i: max(len(pairs[i][0]), len(pairs[i][1])) + rng.random())
    batches, current, longest = [], [], 0
    for index in order:
        length = max(len(pairs[index][0]), len(pairs[index][1])) + 1
        if current and max(longest, length) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(index)
        longest = max(longest, length)
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def make_training_batch(pairs: list[tuple[list[int], list[int]]], indices: list[int]):
    """(src with EOS, decoder input BOS+tgt, decoder output tgt+EOS) as padded tensors."""
    src = pad_batch([pairs[i][0] + [EOS] for i in indices])
    tgt_in = pad_batch([[BOS] + pairs[i][1] for i in indices])
    tgt_out = pad_batch([pairs[i][1] + [EOS] for i in indices])
    return src, tgt_in, tgt_out


# Casing and punctuation variants of a training pair, applied to both sides, so that all-caps, all-lowercase
# or unpunctuated input translates like normal input instead of falling apart into letter runs.
VARIANTS = ("original", "upper", "lower", "no_final_punctuation")


def strip_final_punctuation(text: str) -> str:
    return text.rstrip().rstrip(".!?;:").rstrip()


def pair_variant(source: str, target: str, variant: str) -> tuple[str, str]:
    if variant == "upper":
        return source.upper(), target.upper()
    if variant == "lower":
        return source.lower(), target.lower()
    if variant == "no_final_punctuation":
        return strip_final_punctuation(source), strip_final_punctuation(target)
    return source, target


def choose_variants(count: int, share: float, seed: int) -> list[int]:
    """For each of `count` pairs the index into VARIANTS it is trained as this epoch.

    A share `share` of pairs is altered, split evenly over the non-original variants; a new draw every
    epoch (seeded, so a resumed run sees the same epochs) lets every sentence appear in every form over time.
    """
    rng = random.Random(seed)
    altered = len(VARIANTS) - 1
    return [1 + int(rng.random() * altered) if rng.random() < share else 0 for _ in range(count)]
