"""Any model the explorer opens: a checkpoint folder of ours, a Hugging Face folder (config.json with a
model_type), or a Hugging Face hub id already in the local cache. One place decides which, for the app."""

from __future__ import annotations

from pathlib import Path

from models.checkpoint import Checkpoint, load_checkpoint
from models.hugging_face import HuggingFaceCheckpoint, hugging_face_folder, load_hugging_face


def open_model(path: str | Path) -> Checkpoint | HuggingFaceCheckpoint:
    """The model at path; CheckpointError (HuggingFaceError for Hugging Face inputs) with a one-line reason."""
    folder = hugging_face_folder(path)
    if folder is None:
        return load_checkpoint(path)
    from explorer.hugging_face_trace import load_tokenizer

    loaded = load_hugging_face(folder)
    return HuggingFaceCheckpoint(Path(path), loaded, load_tokenizer(folder),
                                 {"description": f"Hugging Face {loaded.family} model ({', '.join(loaded.kinds)} "
                                                 f"attention), from {folder}"})


def is_hugging_face(checkpoint) -> bool:
    return isinstance(checkpoint, HuggingFaceCheckpoint)


def token_pieces(checkpoint):
    """ids → the tokenizer's pieces, for either kind of model."""
    if is_hugging_face(checkpoint):
        from explorer.hugging_face_trace import piece_labels

        return piece_labels(checkpoint.tokenizer)
    return checkpoint.tokenizer.pieces


def token_text(checkpoint):
    """ids → text (special tokens left out), for either kind of model."""
    if is_hugging_face(checkpoint):
        return lambda ids: checkpoint.tokenizer.decode(ids, skip_special_tokens=True)
    return checkpoint.tokenizer.decode
