"""The one place that knows which family a folder holds: a checkpoint of ours (a translator, or an image classifier
whose config.json says task "classify"), a Hugging Face folder (config.json with a model_type; a sentence encoder
when sentence-transformers' 1_Pooling/config.json is beside it), a Hugging Face
hub id already in the local cache, or the name of a model installed as a Python package (models/installed.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .checkpoint import load_checkpoint
from .folder_checks import damaged_tokenizer, damaged_weights
from .hf_decoder import DecoderOnly
from .hf_encoder import EncoderOnly
from .hf_encoder_decoder import EncoderDecoder
from .hf_vit import HuggingFaceImageClassifier
from .hugging_face import HuggingFaceError, pickle_only, read_config
from .installed import analyses_folder, installed_model_folder
from .interface import CLASSIFY, AttentionModel
from .llama import Llama
from .m2m100 import MultilingualEncoderDecoder
from .sentence_encoder import SentenceEncoder, is_sentence_encoder
from .t5 import T5
from .vision_transformer import load_classifier

# config.json's model_type → (transformers class, layout)
FAMILIES = {
    "marian": ("MarianMTModel", EncoderDecoder),
    "bart": ("BartForConditionalGeneration", EncoderDecoder),
    "mbart": ("MBartForConditionalGeneration", EncoderDecoder),
    "m2m_100": ("M2M100ForConditionalGeneration", MultilingualEncoderDecoder),     # M2M100 and NLLB
    "t5": ("T5ForConditionalGeneration", T5),
    "bert": ("BertForMaskedLM", EncoderOnly),
    "roberta": ("RobertaForMaskedLM", EncoderOnly),
    "gpt2": ("GPT2LMHeadModel", DecoderOnly),
    "llama": ("LlamaForCausalLM", Llama),       # rotary positions, grouped-query attention
    "qwen2": ("Qwen2ForCausalLM", Llama),
    "mistral": ("MistralForCausalLM", Llama),
    "vit": ("ViTForImageClassification", HuggingFaceImageClassifier),
}


def hub_snapshot(model_id: str) -> Path | None:
    """The folder of a hub model already in the local Hugging Face cache (never the network), or None."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(model_id, local_files_only=True))
    except (LocalEntryNotFoundError, ValueError):
        return None


def hugging_face_folder(model: str | Path) -> Path | None:
    """The folder to open for `model` if it is a Hugging Face model (a folder whose config.json has a
    model_type, or a hub id in the local cache); None if it is not one (e.g. a checkpoint of ours)."""
    folder = Path(model).expanduser()
    if (folder / "config.json").is_file():
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        return folder if isinstance(config, dict) and "model_type" in config else None
    if not folder.exists() and re.fullmatch(r"[\w.-]+(/[\w.-]+)?", str(model)):
        snapshot = hub_snapshot(str(model))
        if snapshot is None:
            raise HuggingFaceError(f"{model}: not a folder, and no copy of this Hugging Face model is in the local "
                                   "cache; download it once where there is a network (hf download "
                                   f"{model}) or give the folder that holds its config.json")
        return snapshot
    return None


def open_hugging_face(folder: Path) -> AttentionModel:
    refused = pickle_only(folder)
    if refused:
        raise HuggingFaceError(
            f"{folder}: has only pickle weights ({', '.join(refused)}), and loading pickle can run code, so the "
            "explorer refuses it. Convert it once, where you trust the file: "
            "AutoModel.from_pretrained(folder).save_pretrained(folder, safe_serialization=True)")
    family = read_config(folder).get("model_type")
    if family not in FAMILIES:
        raise HuggingFaceError(f"{folder}: model_type {family!r} is not supported; the explorer opens "
                               f"{', '.join(FAMILIES)}")
    damaged = damaged_weights(folder) or damaged_tokenizer(folder)      # named here: transformers would not
    if damaged:
        raise HuggingFaceError(damaged)
    if is_sentence_encoder(folder, family):     # a sentence-transformers folder: the bare encoder and its pooling
        return SentenceEncoder.open(folder, family, "")
    transformers_class, layout = FAMILIES[family]
    return layout.open(folder, family, transformers_class)


def classifier_info(path: str | Path) -> dict | None:
    """config.json of a folder of ours that holds an image classifier (task "classify"), else None."""
    config = Path(path).expanduser() / "config.json"
    try:
        info = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return info if isinstance(info, dict) and info.get("task") == CLASSIFY else None


BUNDLED = Path(__file__).parent        # the bundled models' folders: models/en-de-h8, models/digits-vit, …


def bundled_folder(name: str | Path) -> Path | None:
    """A bundled model's folder for its bare name ("en-de-h8", as the sidebar and the docs call it) when no folder
    of that name is where the person is; None for anything else."""
    text = str(name)
    if "/" in text or Path(text).exists() or not (BUNDLED / text / "config.json").is_file():
        return None
    return BUNDLED / text


def open_model(path: str | Path) -> AttentionModel:
    """The model at path; CheckpointError (HuggingFaceError for Hugging Face inputs) with a one-line reason. A
    registered name (all-MiniLM-L6-v2) is resolved first: it opens its installed package's folder, weights checked;
    a bundled model's bare name (en-de-h8) opens its folder under models/."""
    installed = installed_model_folder(path)
    if installed is not None:
        folder, entry = installed
        model = open_hugging_face(folder)
        model.path = Path(str(path))            # named by its name: what the CLI and the pages show
        # Named by the package, never by its folder: a shared server's pages show no path of its file system.
        model.info = {**model.info, "description": f"{entry.description} (the package {entry.package})",
                      "summary": entry.summary, "analyses_folder": str(analyses_folder(str(path)))}
        return model
    path = bundled_folder(path) or path
    folder = hugging_face_folder(path)
    if folder is None:
        classifier = classifier_info(path)
        if classifier is not None:
            return load_classifier(Path(path).expanduser(), classifier)
        return load_checkpoint(path)
    model = open_hugging_face(folder)
    model.path = Path(path)
    return model
