"""The linter and the type checker: ruff is clean on the whole tree, and mypy on models/ and on the capture code
(explorer/capture), each with its configuration in pyproject.toml. mypy reads the package as it is installed
(explorer.models is the folder models/): a tree of links shaped like the wheel, so the capture code's imports of
explorer.models resolve to their real types."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

CHECKED = ("explorer.models", "explorer.capture")


def package_view(folder) -> None:
    """folder/explorer: explorer/'s own files, with models/ and pages/ where the wheel puts them."""
    view = folder / "explorer"
    view.mkdir()
    for entry in (ROOT / "explorer").iterdir():
        if entry.name != "__pycache__":
            (view / entry.name).symlink_to(entry)
    (view / "models").symlink_to(ROOT / "models")
    (view / "pages").symlink_to(ROOT / "pages")


@pytest.mark.slow
def test_mypy_is_clean_on_the_models_and_the_capture_code(tmp_path):
    package_view(tmp_path)
    packages = [argument for name in CHECKED for argument in ("-p", name)]
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                             "--cache-dir", str(tmp_path / ".mypy_cache"), *packages],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:]


def test_ruff_is_clean_with_the_projects_configuration():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:]
