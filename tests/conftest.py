"""Shared fixtures: a tiny random model (fast mechanics tests) and the shipped trained checkpoints."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

# One OpenBLAS thread for numpy (before it is imported), as the launcher sets for the app (pages/launch.py); the
# Streamlit servers the browser tests start inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The analyses' disk cache (explorer/analyses/corpus/shipped_analyses.py) in a folder of this run, not the repository's .cache: no
# test passes, or runs faster, because an earlier run left its result there (a clean clone computed six role
# tables the checkout read back). The app servers the browser tests start inherit it.
_ANALYSES_CACHE = tempfile.mkdtemp(prefix="explorer-analyses-")
os.environ["ATTENTION_EXPLORER_CACHE"] = _ANALYSES_CACHE
# No test reaches the internet: a hub id outside the cache is refused, as offline. The download's own tests run a
# stand-in hub on 127.0.0.1 and lift this for their processes (tests/models/test_hub_download.py).
os.environ["HF_HUB_OFFLINE"] = "1"
atexit.register(shutil.rmtree, _ANALYSES_CACHE, ignore_errors=True)

# The settings above are read when these modules are imported (explorer.settings reads ATTENTION_EXPLORER_CACHE).
import pytest  # noqa: E402
import torch  # noqa: E402

from explorer import settings  # noqa: E402
from explorer.models.checkpoint import Checkpoint, load_checkpoint, save_checkpoint  # noqa: E402
from explorer.models.data import read_lines  # noqa: E402
from explorer.models.tokenizer import Tokenizer  # noqa: E402
from explorer.models.transformer import Transformer, TransformerConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The repository's folders as the installed package names them (pyproject.toml): models/ → explorer.models.
PACKAGE_OF_FOLDER = {"explorer": "explorer", "models": "explorer.models", "pages": "explorer.pages"}


def module_name(path: Path) -> str:
    """models/interface.py → explorer.models.interface; explorer/capture/__init__.py → explorer.capture."""
    folder, *rest = path.resolve().relative_to(ROOT).with_suffix("").parts
    return ".".join([PACKAGE_OF_FOLDER[folder], *rest]).removesuffix(".__init__")


# One torch thread per computation, as the app runs (pages/app.py): tiny models gain nothing from two, and two
# threads each for this process and the app server the browser tests start would fight over 2 cores.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Every test starts on one thread, whatever the one before set (models/train.py takes a thread per core by
    default): with two threads beside the other xdist worker, each product waited on a busy core and the tests
    after a training run in the same process were 10-60x slower (a 0.3 s test took 20 s)."""
    torch.set_num_threads(1)
    yield


@pytest.fixture(autouse=True, scope="session")
def one_scan_for_streamlit_components():
    """Streamlit's AppTest looks for installed v2 components anew on each new AppTest, parsing the metadata of
    every installed package (~0.4 s; 110 CPU-s of a whole run, sampled with py-spy). The installed packages do not
    change during a run, so the first scan's answer serves them all. The served app scans once, at its start."""
    from streamlit.components.v2 import manifest_scanner

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest_scanner, "scan_component_manifests", functools.cache(manifest_scanner.scan_component_manifests))
        yield


def pytest_configure(config):
    """At the end pytest collects garbage five times over to find unraisable exceptions: 2 s for each xdist worker
    on the heap the models leave (py-spy). Once finds them; pytest's own tester turns it off the same way."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:         # a pytest without the setting: its default, nothing lost
        return
    config.stash[gc_collect_iterations_key] = 1


# The markers (pyproject.toml) a test gets from where it is and what it reads, so none is forgotten: browser (a real
# Chromium: tests/browser), ray (a real Ray: the xdist group "ray" or the local_ray fixture), shipped (the bundled
# trained checkpoints: a page, the h8 fixture, or a module that names them). slow is marked by hand on the test.
SHIPPED_NAMES = ("BUNDLED", "SHIPPED", "settings.CHECKPOINTS", "en-de-h", "digits-vit", "all-MiniLM-L6-v2")
_NAMES_SHIPPED: dict[Path, bool] = {}


def names_shipped_models(path: Path) -> bool:
    if path not in _NAMES_SHIPPED:
        _NAMES_SHIPPED[path] = any(name in path.read_text(encoding="utf-8") for name in SHIPPED_NAMES)
    return _NAMES_SHIPPED[path]


def pytest_collection_modifyitems(items):
    for item in items:
        parts = item.path.relative_to(ROOT).parts
        if parts[:2] == ("tests", "browser"):
            item.add_marker(pytest.mark.browser)
        groups = [marker.args[0] for marker in item.iter_markers("xdist_group") if marker.args]
        if "ray" in groups or "local_ray" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
        if (parts[:2] == ("tests", "app") or "h8" in getattr(item, "fixturenames", ())
                or names_shipped_models(item.path)):
            item.add_marker(pytest.mark.shipped)


DATA = settings.DATA
MULTI30K = settings.MULTI30K
BUNDLED = {heads: settings.CHECKPOINTS / f"en-de-h{heads}" for heads in (1, 2, 8)}
# The shipped checkpoints present in this checkout (h8 always; h1 and h2 once trained).
SHIPPED = {heads: path for heads, path in BUNDLED.items() if (path / "config.json").is_file()}

SENTENCES = [
    "A man in an orange hat starring at something.",
    "Two dogs play in the snow.",
    "A little girl is climbing the stairs of a wooden playhouse.",
    "The woman holds her umbrella because it is raining.",
]


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory) -> Tokenizer:
    sentences = read_lines(MULTI30K / "train.en.gz")[:1500] + read_lines(MULTI30K / "train.de.gz")[:1500]
    return Tokenizer.train(sentences, tmp_path_factory.mktemp("tokenizer") / "tiny.model", vocab_size=400)


def tiny_config(**overrides) -> TransformerConfig:
    values = dict(vocab_size=400, d_model=32, heads=4, encoder_layers=2, decoder_layers=2, d_ff=64,
                  dropout=0.1, max_len=64)
    values.update(overrides)
    return TransformerConfig(**values)


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_tokenizer, tmp_path_factory) -> Checkpoint:
    """A random (untrained) 4-head model saved and loaded like a real checkpoint."""
    torch.manual_seed(0)
    model = Transformer(tiny_config())
    folder = save_checkpoint(tmp_path_factory.mktemp("tiny") / "tiny-h4", model, tiny_tokenizer.path,
                             {"name": "tiny-h4"}, frequencies={"source": [1] * 400, "target": [1] * 400})
    return load_checkpoint(folder)


@pytest.fixture(scope="session")
def h8() -> Checkpoint:
    return load_checkpoint(BUNDLED[8])


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray with two CPUs for every Ray test of a process (they share the xdist group "ray", so one
    process): starting one costs ~6 s alone, ~16 s beside the other test process."""
    import ray

    from explorer.analyses.jobs.distributed import connect, let_workers_go

    connect(2, None)
    yield ray
    let_workers_go()
    ray.shutdown()


def batch_of(tokenizer: Tokenizer, sentences: list[str]) -> torch.Tensor:
    from explorer.models.data import pad_batch

    return pad_batch([tokenizer.encode(s).ids for s in sentences])
