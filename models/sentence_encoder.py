"""Sentence encoders as sentence-transformers saves them (all-MiniLM-L6-v2): a bare BERT-like encoder (BertModel)
whose folder also holds `1_Pooling/config.json`, saying how the last layer becomes one vector: the mean over the
real tokens (or the [CLS] token's row), then scaled to length 1 when modules.json lists a Normalize module. The
output is that embedding; there is no head that predicts tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Self, cast

import torch

from .hf_encoder import BertLayout
from .hugging_face import HuggingFaceError
from .interface import Batch, Embeds

POOLING = Path("1_Pooling") / "config.json"
# config.json's model_type → the bare encoder's transformers class
ENCODERS = {"bert": "BertModel", "roberta": "RobertaModel"}


def is_sentence_encoder(folder: Path, family: str) -> bool:
    """Whether a Hugging Face folder of this model_type is a sentence-transformers folder the explorer reads."""
    return family in ENCODERS and (folder / POOLING).is_file()


def _read_json(path: Path) -> dict | list:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise HuggingFaceError(f"{path}: not readable JSON ({error.__class__.__name__})") from None


class SentenceEncoder(BertLayout, Embeds):
    pooling = "mean"            # "mean" over the real tokens, or "cls"
    normalized = True           # scaled to length 1 (a Normalize module)

    @classmethod
    def open(cls, folder: Path, family: str, transformers_class: str) -> Self:
        pooling = cast(dict, _read_json(folder / POOLING))     # sentence-transformers writes an object here
        modes = [mode for mode in ("mean", "cls") if pooling.get(f"pooling_mode_{mode}_tokens" if mode == "mean"
                                                                 else "pooling_mode_cls_token")]
        if len(modes) != 1:
            raise HuggingFaceError(f"{folder / POOLING}: the explorer reads mean or [CLS] pooling alone; this folder "
                                   f"asks for {', '.join(k for k, v in pooling.items() if v is True) or 'none'}")
        modules = _read_json(folder / "modules.json") if (folder / "modules.json").is_file() else []
        model = super().open(folder, family, ENCODERS[family])
        model.pooling = modes[0]
        model.normalized = any(str(m.get("type", "")).endswith("Normalize") for m in modules if isinstance(m, dict))
        model.mask_id = None        # no head was trained to fill a mask
        model.info["description"] = (f"Hugging Face sentence encoder ({family}, {model.pooling} pooling"
                                     f"{', unit length' if model.normalized else ''})")
        return model

    def forward(self, source: Batch | None = None, target: Batch | None = None) -> torch.Tensor:
        assert source is not None               # an encoder reads the source alone
        return self.model(input_ids=source.ids, attention_mask=source.present.long()).last_hidden_state

    def embed(self, source: Batch) -> torch.Tensor:
        states = self.forward(source)
        if self.pooling == "cls":
            pooled = states[:, 0]
        else:
            present = source.present.to(states.dtype)[..., None]
            pooled = (states * present).sum(1) / present.sum(1).clamp_min(1)
        return torch.nn.functional.normalize(pooled, dim=-1) if self.normalized else pooled

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        raise ValueError(f"{self.name} reads out no vocabulary: its output is the sentence's embedding")
