"""What a sentence encoder's output is to a person: the sentence's embedding, its cosine similarity to a second
sentence, and its nearest captions among the Multi30k validation captions; and what pruning heads does to them
(the cosine between the pruned and the whole model's embedding, and how many of the whole model's nearest captions
the pruned model still finds).

The captions' embeddings by the whole model are computed once per weights and kept on disk (CAPTIONS_CACHE, an .npy
keyed by the weights' sha256); a pruned model embeds them again (in memory only: every pruning is another model)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import explorer.settings as settings
from explorer.capture.head_sets import HeadSpec, head_mask
from explorer.capture.inputs import prepare_source
from explorer.models.data import read_lines
from explorer.models.hooks import model_run
from explorer.models.interface import Embeds

CAPTIONS_CACHE = settings.CACHE / "embeddings"
NEAREST = 5
BATCH = 64
# The lecture's pair: the second sentence the Translation page compares the first with, unless the person types one.
PAIR_SENTENCE = "The animal didn't cross the street because it was too wide."


@torch.no_grad()
def embed_texts(model: Embeds, texts: list[str], pruned: list[HeadSpec] = ()) -> np.ndarray:
    """[texts, d] embeddings (unit length for a normalising encoder) with these heads pruned, in batches."""
    gates = head_mask(list(pruned), model)
    rows = [prepare_source(text, model, fix_casing=False).ids for text in texts]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))       # similar lengths together: less padding
    embeddings = np.zeros((len(rows), model.d_model), dtype=np.float32)
    with model_run(head_mask=gates):
        for start in range(0, len(order), BATCH):
            chosen = order[start: start + BATCH]
            embeddings[chosen] = model.embed(model.pad([rows[i] for i in chosen])).float().cpu().numpy()
    return embeddings


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


def caption_embeddings(model: Embeds, captions: list[str], weights_hash: str, folder: Path | None = CAPTIONS_CACHE
                       ) -> np.ndarray:
    """The whole model's embeddings of the captions: read from `folder` when computed before for these weights and
    these captions, else computed and kept there (None: never written)."""
    key = hashlib.sha256((weights_hash + "\n" + "\n".join(captions)).encode()).hexdigest()[:32]
    path = None if folder is None else folder / f"{key}.npy"
    if path is not None and path.is_file():
        try:
            kept = np.load(path, allow_pickle=False)
            if kept.shape == (len(captions), model.d_model):
                return kept
        except (OSError, ValueError):
            pass                    # a torn or foreign file: computed again below
    embeddings = embed_texts(model, captions)
    if path is not None:
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(partial, embeddings)
        partial.replace(path)       # whole or absent: another session never reads half a file
    return embeddings


@dataclass(frozen=True)
class Neighbour:
    caption: str
    index: int
    cosine: float


def nearest(embedding: np.ndarray, captions: list[str], embeddings: np.ndarray, count: int = NEAREST
            ) -> list[Neighbour]:
    """The `count` captions whose embeddings have the highest cosine with `embedding`, best first."""
    norms = np.linalg.norm(embeddings, axis=1) * max(np.linalg.norm(embedding), 1e-12)
    cosines = embeddings @ embedding / np.maximum(norms, 1e-12)
    order = np.argsort(-cosines, kind="stable")[:count]
    return [Neighbour(captions[i], int(i), float(cosines[i])) for i in order]


@dataclass(frozen=True)
class PruningEffect:
    cosine: float                   # between the pruned and the whole model's embedding of the sentence
    whole: list[Neighbour]          # the whole model's nearest captions
    pruned: list[Neighbour]         # the pruned model's, among its own embeddings of the captions
    kept: int                       # how many of `whole` are among `pruned`


def pruning_effect(model: Embeds, text: str, pruned: list[HeadSpec], captions: list[str],
                   whole_captions: np.ndarray, pruned_captions: np.ndarray) -> PruningEffect:
    """What pruning did to one sentence's embedding and to its nearest captions (each model searching its own
    embeddings of the captions)."""
    whole_sentence, pruned_sentence = embed_texts(model, [text])[0], embed_texts(model, [text], pruned)[0]
    before = nearest(whole_sentence, captions, whole_captions)
    after = nearest(pruned_sentence, captions, pruned_captions)
    kept = len({n.index for n in before} & {n.index for n in after})
    return PruningEffect(cosine(whole_sentence, pruned_sentence), before, after, kept)


def validation_captions() -> list[str]:
    """The Multi30k validation captions the nearest ones are searched among."""
    return [line for line in read_lines(settings.CAPTIONS) if line.strip()]
