"""The promises the repository itself makes: the README's two commands, CI running them, no CDN, no pickle."""

import re
import subprocess

from tests.conftest import ROOT, SHIPPED


def tracked_files() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one():
    first_block = ROOT.joinpath("README.md").read_text().split("```")[1]
    assert "bash scripts/start.sh" in first_block and "bash scripts/test.sh" in first_block
    ci = [line for line in ROOT.joinpath(".ci/run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == ["bash scripts/test.sh"]
    assert "torch==2.13.0" in ROOT.joinpath("requirements.txt").read_text().split()


def test_no_cdn_and_no_pickled_weights_are_tracked():
    cdn = re.compile(r"cdnjs\.cloudflare|unpkg\.com|cdn\.jsdelivr|cdn\.plot\.ly|code\.jquery")
    for name in tracked_files():
        if name.endswith((".py", ".js", ".html", ".json", ".sh", ".txt", ".toml")) and name != "js/package-lock.json":
            assert not cdn.search((ROOT / name).read_text(errors="ignore")), name
        assert not name.endswith((".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".bin")), name
    weights = [n for n in tracked_files() if n.endswith("model.safetensors")]
    assert sorted(weights) == [f"models/en-de-h{h}/model.safetensors" for h in sorted(SHIPPED)] and 8 in SHIPPED
