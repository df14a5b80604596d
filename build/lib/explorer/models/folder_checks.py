"""A Hugging Face folder's own files, checked before transformers reads them: a damaged or missing file is named
with what to do, in one line, whichever family the folder holds. transformers and its libraries fail on such a file
deep inside (safetensors' SafetensorError, sentencepiece's RuntimeError, a JSONDecodeError without a file name),
with nothing that says which file it was.

Weights: each *.safetensors file's header must parse and its tensors must cover the file (a file cut short, at any
length, fails here). Tokenizer: each JSON file must parse, and each SentencePiece model the tokenizer names must load.
A flipped byte inside a tensor's data cannot be seen without a checksum; a bundled model's weights have one
(models/installed.py)."""

from __future__ import annotations

import json
from pathlib import Path

TOKENIZER_JSON = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                  "vocab.json")
SENTENCEPIECE_SUFFIXES = (".spm", ".model")
AGAIN = "copy or download the model again"


def first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [error.__class__.__name__])[0]


def damaged_weights(folder: Path) -> str | None:
    """The first safetensors file of `folder` that cannot be read, with why; None when all can."""
    from safetensors import SafetensorError, safe_open

    for weights in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(weights), framework="pt"):
                pass
        except (SafetensorError, OSError) as error:
            return (f"{weights}: damaged weights, cut short or altered ({first_line(error)}); {AGAIN}")
    return None


def tokenizer_files(folder: Path) -> list[str]:
    """The file names the folder's tokenizer class reads (transformers' vocab_files_names), when its
    tokenizer_config.json names a class transformers has; else none."""
    try:
        name = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return []
    import transformers

    tokenizer_class = getattr(transformers, name, None) if isinstance(name, str) else None
    return sorted(set(getattr(tokenizer_class, "vocab_files_names", {}).values()))


def damaged_tokenizer(folder: Path) -> str | None:
    """The first tokenizer file of `folder` that cannot be read, with why; None when all can."""
    for name in TOKENIZER_JSON:
        path = folder / name
        if path.exists():
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                return f"{path}: not readable JSON ({first_line(error)}); {AGAIN}"
    import sentencepiece

    named = tokenizer_files(folder)
    for path in sorted(folder.iterdir()):
        if path.suffix in SENTENCEPIECE_SUFFIXES and (not named or path.name in named):
            try:
                sentencepiece.SentencePieceProcessor(model_file=str(path))
            except (RuntimeError, OSError) as error:
                return f"{path}: not a SentencePiece model ({first_line(error)}); {AGAIN}"
    return None


def missing_tokenizer_files(folder: Path) -> list[str]:
    """Files the tokenizer class reads that the folder lacks (said when loading it fails: a missing file makes
    transformers fail with "expected str, bytes or os.PathLike object, not NoneType")."""
    return [name for name in tokenizer_files(folder) if not (folder / name).exists()]
