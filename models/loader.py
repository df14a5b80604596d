"""The one place that knows which family a folder holds: a checkpoint of ours (a translator, or an image classifier
whose config.json says task "classify"), a Hugging Face folder (config.json with a model_type; a sentence encoder
when sentence-transformers' 1_Pooling/config.json is beside it), a Hugging Face hub id (from the local cache, else
downloaded: models/hub.py), or the name of a model installed as a Python package (models/installed.py)"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from .checkpoint import CheckpointError, load_checkpoint
from .folder_checks import damaged_tokenizer, damaged_weights
from .hf_decoder import DecoderOnly
from .hf_encoder import EncoderOnly
from .hf_encoder_decoder import EncoderDecoder
from .hf_vit import HuggingFaceImageClassifier
from .hub import cached_snapshot, hub_folder, looks_like_hub_id
from .hugging_face import HuggingFaceAttention, HuggingFaceError, pickle_only, read_config
from .installed import INSTALLED, analyses_folder, installed_model_folder
from .interface import CLASSIFY, AttentionModel
from .llama import Llama
from .m2m100 import MultilingualEncoderDecoder
from .sentence_encoder import SentenceEncoder, is_sentence_encoder
from .t5 import T5
from .vision_transformer import load_classifier

# config.json's model_type → (transformers class, layout)
FAMILIES: dict[str, tuple[str, type[HuggingFaceAttention]]] = {
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


def hugging_face_folder(model: str | Path, download: bool = True) -> Path | None:
    """The folder to open for `model` if it is a Hugging Face model (a folder whose config.json has a
    model_type, or a hub id: from the local cache, else downloaded when `download` allows); None if it is not one
    (e.g. a checkpoint of ours). A path that names no folder is told so."""
    folder = Path(model).expanduser()
    if (folder / "config.json").is_file():
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        return folder if isinstance(config, dict) and "model_type" in config else None
    if folder.exists():
        return None
    if looks_like_hub_id(str(model)):
        return hub_folder(str(model), download)
    raise CheckpointError(f"{model}: no such folder")


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


def local_folder(name: str | Path) -> Path:
    """The folder a model's name leads to on this machine, without opening or downloading anything: an installed
    model's package folder, a bundled model's, a hub id's copy in the local cache, or the path itself."""
    installed = INSTALLED.get(str(name))
    return ((installed.installed_folder() if installed else None) or bundled_folder(name)
            or (cached_snapshot(str(name)) if looks_like_hub_id(str(name)) else None) or Path(name))


def open_model(path: str | Path, download: bool = True, device: str = "auto") -> AttentionModel:
    """The model at path, on `device` ("cpu", "cuda", "cuda:1" or "auto": a GPU when torch sees one); CheckpointError
    (HuggingFaceError for Hugging Face inputs) with a one-line reason. A registered name (all-MiniLM-L6-v2) is
    resolved first: it opens its installed package's folder, weights checked; a bundled model's bare name (en-de-h8)
    opens its folder under models/; a hub id not in the local cache is downloaded when `download` allows."""
    where = resolve_device(device)
    model = open_on_cpu(path, download)
    if where.type != "cpu":
        place(model, where)
    return model


def open_on_cpu(path: str | Path, download: bool) -> AttentionModel:
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
    hugging_face = hugging_face_folder(path, download)
    if hugging_face is None:
        classifier = classifier_info(path)
        if classifier is not None:
            return load_classifier(Path(path).expanduser(), classifier)
        return load_checkpoint(path)
    model = open_hugging_face(hugging_face)
    model.path = Path(path)
    # Where it came from, by the name a person gave: a hub id, or the folder's own name, never a path of this
    # machine (a served explorer shows the description to its visitors).
    source = f"{path} on the Hugging Face hub" if hugging_face != Path(path).expanduser() else f"the folder {model.name}"
    model.info = {**model.info, "description": f"{model.info['description']}, from {source}"}
    return model


DEVICES = ("auto", "cpu", "cuda")


def place(model: AttentionModel, device: torch.device) -> None:
    """Move the weights to `device`, and every tensor a call hands the torch module after them: the pages, the
    analyses and the notebook build their inputs on the CPU and never ask where the model is."""
    module = model.model
    module.to(device)

    def inputs_to_device(_module, args, kwargs):
        return (tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args),
                {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()})
    module.register_forward_pre_hook(inputs_to_device, with_kwargs=True)


def resolve_device(device: str) -> torch.device:
    """"auto" → the first GPU torch sees, else the CPU; "cuda" where torch sees none → one line saying so."""
    name = str(device).strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        where = torch.device(name)
    except RuntimeError:
        raise CheckpointError(f"--device {device}: not a device (cpu, cuda, cuda:N or auto)") from None
    if where.type == "cuda" and not torch.cuda.is_available():
        raise CheckpointError(f"--device {device}: torch sees no CUDA GPU on this machine (use cpu or auto)")
    if where.type not in {"cpu", "cuda"}:
        raise CheckpointError(f"--device {device}: the explorer runs on cpu or cuda")
    return where
