"""Where the explorer's own files are and which models it bundles: the one place that knows.

Everything here is inside the package (a clone or a `pip install` with nothing beside it works):

- DATA: the corpora it ships (Multi30k, UD English EWT dev; explorer/data/README.md has their licences), or the
  folder that ATTENTION_EXPLORER_DATA names;
- CHECKPOINTS: the bundled models' folders (models/ in a clone, explorer/models/ once installed);
- CACHE: results computed once and kept (ATTENTION_EXPLORER_CACHE, or the user's cache folder);
- BUNDLED: the bundled models, by the name a person types (`--model en-de-h8`) and the label the sidebar shows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# models/ in a clone, explorer/models/ once installed: found where the package's own mapping puts it, without
# importing it (its code has nothing to say here).
CHECKPOINTS = Path(list(find_spec("explorer.models").submodule_search_locations)[0]).resolve()
DATA = Path(os.environ.get("ATTENTION_EXPLORER_DATA") or PACKAGE / "data").expanduser()
MULTI30K = DATA / "multi30k"
TREEBANK = DATA / "ud" / "en_ewt-ud-dev.conllu.gz"
CAPTIONS = MULTI30K / "val.en.gz"          # the default corpus of the sentence-level analyses
CACHE = Path(os.environ.get("ATTENTION_EXPLORER_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-explorer").expanduser()
# bertviz's views need require.js, d3 and jQuery: copies inside the package (explorer/scripts/README.md), never a CDN.
SCRIPTS = PACKAGE / "scripts"


@dataclass(frozen=True)
class BundledModel:
    name: str           # what a person types: --model en-de-h8, explorer.load("en-de-h8")
    label: str          # what the sidebar shows

    @property
    def folder(self) -> Path:
        return CHECKPOINTS / self.name


BUNDLED = (
    BundledModel("en-de-h8", "8 heads (en-de-h8)"),
    BundledModel("en-de-h2", "2 heads (en-de-h2)"),
    BundledModel("en-de-h1", "1 head (en-de-h1)"),
    BundledModel("digits-vit", "Digits ViT (digits-vit)"),
)
TRANSLATORS = {heads: CHECKPOINTS / f"en-de-h{heads}" for heads in (1, 2, 8)}     # the 1-, 2- and 8-head models


def bundled(name: str) -> BundledModel:
    return next(model for model in BUNDLED if model.name == name)


def shown_path(path: str | Path) -> str:
    """How a model's folder is named to a person and in saved results: a bundled model by its name (`en-de-h8`),
    wherever the package is installed; any other folder as given."""
    folder = Path(path).expanduser()
    try:
        resolved = folder.resolve()
    except OSError:
        return str(path)
    if resolved.parent == CHECKPOINTS and (resolved / "config.json").is_file():
        return resolved.name
    return str(path)


def command_name(path: str | Path) -> str:
    """The model as a command shown to a person names it: a bundled model by its name, a folder by its own name, a
    hub id ("Helsinki-NLP/opus-mt-en-de") as it is: never a path of the machine the explorer runs on."""
    shown = shown_path(path)
    if shown != str(path):
        return shown
    text = str(path)
    is_hub_id = not Path(text).expanduser().exists() and not text.startswith(("/", ".", "~")) and text.count("/") <= 1
    return text if is_hub_id else Path(text).name or text
