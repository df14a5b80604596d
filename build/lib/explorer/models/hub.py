"""Models by Hugging Face hub id, as transformers opens them: from the local cache, else downloaded once into it.

A download happens only where the caller allows it (a person's own command line or notebook; never for a visitor of
a served explorer) and the hub is not switched off (HF_HUB_OFFLINE=1, or `--offline`). It fetches only what the
explorer opens: the configuration, the tokenizer and safetensors weights, never pickle files. HF_ENDPOINT points
huggingface_hub at another hub (a mirror, or a test's stand-in on 127.0.0.1).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from .folder_checks import first_line
from .hugging_face import HuggingFaceError

# What a model folder needs: config, tokenizer files (SentencePiece, WordPiece, BPE), safetensors weights, and a
# sentence encoder's pooling settings. Not pickle weights (pytorch_model.bin), ONNX or other frameworks' copies.
WANTED = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "1_Pooling/*"]
UNWANTED = ["onnx/*", "openvino/*", "*.onnx", "*.bin", "*.h5", "*.msgpack", "*.ckpt*", "*.pt", "*.pth", "*.pkl"]
HUB_ID = re.compile(r"[\w.-]+(/[\w.-]+)?")


class HubError(HuggingFaceError):
    """A hub id that cannot be opened; the message names the id and what to do."""


def offline() -> bool:
    """Whether the hub is switched off for this process, as huggingface_hub reads it."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "on", "yes", "true"}


def looks_like_hub_id(name: str) -> bool:
    """"gpt2" or "Helsinki-NLP/opus-mt-en-de", and not a path a person meant as one: "./models/x", "~/x", "/x", or
    "models/en-de-h9" where a folder models/ is right here."""
    if not HUB_ID.fullmatch(name) or name.startswith((".", "~")):
        return False
    first = name.split("/")[0]
    return "/" not in name or not Path(first).is_dir()


def cached_snapshot(model_id: str) -> Path | None:
    """The folder of a hub model already in the local Hugging Face cache (never the network), or None."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(model_id, local_files_only=True, allow_patterns=WANTED,
                                      ignore_patterns=UNWANTED))
    except (LocalEntryNotFoundError, ValueError):
        return None


def hub_folder(model_id: str, download: bool = True) -> Path:
    """The local folder of a hub model: the cached copy, else (when allowed) a fresh download into the cache."""
    snapshot = cached_snapshot(model_id)
    if snapshot is not None:
        return snapshot
    if not download or offline():
        why = ("the explorer is offline (--offline or HF_HUB_OFFLINE=1)" if offline() or download
               else "a served explorer downloads nothing for its visitors")
        raise HubError(f"{model_id}: not a folder, and no copy of this Hugging Face model is in the local cache; "
                       f"{why}. Download it once where that is allowed (hf download {model_id}) or give the folder "
                       "that holds its config.json")
    return download_snapshot(model_id)


def download_snapshot(model_id: str) -> Path:
    """Download what the explorer opens of a hub model into the Hugging Face cache, saying what and how much on one
    line first, with huggingface_hub's progress bars on stderr."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        info = HfApi().model_info(model_id, files_metadata=True)
    except RepositoryNotFoundError:
        raise HubError(f"{model_id}: no such model on the Hugging Face hub (nor a folder here)") from None
    except (HfHubHTTPError, OSError) as error:
        raise HubError(f"{model_id}: the Hugging Face hub could not be reached ({first_line(error)}); "
                       "give a folder, or try again with a network") from None
    files = [sibling for sibling in info.siblings or [] if wanted(sibling.rfilename)]
    if not any(sibling.rfilename.endswith(".safetensors") for sibling in files):
        raise HubError(f"{model_id}: has no safetensors weights on the hub, and loading pickle can run code, so the "
                       "explorer does not download it")
    size = sum(sibling.size or 0 for sibling in files)
    print(f"Downloading {model_id} from the Hugging Face hub: {len(files)} files, {size / 1e6:,.1f} MB, into the "
          "Hugging Face cache (once; later runs read the cache)", file=sys.stderr, flush=True)
    try:
        return Path(snapshot_download(model_id, allow_patterns=WANTED, ignore_patterns=UNWANTED))
    except (HfHubHTTPError, OSError) as error:
        raise HubError(f"{model_id}: the download stopped ({first_line(error)}); run the command again to resume "
                       "it") from None


def wanted(name: str) -> bool:
    from fnmatch import fnmatch

    return (any(fnmatch(name, pattern) for pattern in WANTED)
            and not any(fnmatch(name, pattern) for pattern in UNWANTED))
