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
    assert sorted(weights) == ["models/digits-vit/model.safetensors",
                               *[f"models/en-de-h{h}/model.safetensors" for h in sorted(SHIPPED)]] and 8 in SHIPPED


def imported_modules(path, package_modules: set[str]) -> set[str]:
    """The project modules a file imports, at its top or inside a function."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}   # `from explorer import trace`
    return found & package_modules


def test_explorer_and_models_import_no_cycle_and_nothing_asks_for_a_family():
    """The import graph of explorer/ and models/ is acyclic (models/ never imports explorer/), and no code above
    models/ asks which family a model is."""
    files = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for folder in ("explorer", "models") for p in (ROOT / folder).rglob("*.py")}
    graph = {module: imported_modules(path, set(files)) - {module} for module, path in files.items()}
    assert {"models.interface", "explorer.capture.inputs"} <= graph["explorer.capture.trace"]       # the walk sees imports
    assert not [m for m, imports in graph.items() if m.startswith("models") and any(i.startswith("explorer") for i in imports)]
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(graph[module]):
            assert state.get(imported) != "open", f"import cycle: {' → '.join(path + [module, imported])}"
            if imported not in state:
                visit(imported, path + [module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    # A family shows itself by its class, its own error, its files' attribute or its kind of positions: above
    # models/ code asks what a model can do instead (model.has(kind), model.position_bias, model.files …).
    asks = re.compile(r"is_hugging_face|isinstance\([^)]*HuggingFace|\.family\b|getattr\([^)]*[\"']folder[\"']"
                      r"|positional\s*==\s*[\"']relative|from models\.(checkpoint|hugging_face|hf_\w+|t5|m2m100) import")
    for name in tracked_files():
        if name.startswith(("explorer/", "pages/")) and name.endswith(".py"):
            assert not asks.search((ROOT / name).read_text(encoding="utf-8")), name
    assert not [p for p in (ROOT / "explorer").glob("hugging_face*.py")]


def test_explorer_never_imports_streamlit_and_pages_hold_no_tensor_math():
    """explorer/ and models/ work without a browser (the CLI, the notebook); pages/ draws what explorer/ computed.
    The one torch line a page may hold is the app's thread setting (pages/app.py)."""
    imports_streamlit = re.compile(r"^\s*(import streamlit|from streamlit)", re.MULTILINE)
    tensor_math = re.compile(r"\btorch\.(?!set_num_threads\b)|^\s*from torch\b", re.MULTILINE)
    for name in tracked_files():
        if not name.endswith(".py"):
            continue
        text = (ROOT / name).read_text(encoding="utf-8")
        if name.startswith(("explorer/", "models/")):
            assert not imports_streamlit.search(text), name
        if name.startswith("pages/"):
            assert not tensor_math.search(text), name
    assert tensor_math.search("x = torch.softmax(scores, -1)") and imports_streamlit.search("import streamlit as st")


def test_the_public_names_stay_where_people_use_them():
    """The notebook API and every CLI command keep their names whatever moves inside explorer/ (issue 32)."""
    import explorer
    from explorer.cli import build_parser

    assert explorer.__all__ == ["load", "trace_sentence", "translate", "attention_figure", "heads_figure", "head_view",
                                "model_view", "HtmlView", "word_trace", "attention_sinks", "attention_flow",
                                "faithfulness_of", "logit_lens_of", "patch", "detect_heads", "sample", "trace_image",
                                "image_attention_figure"]
    assert all(callable(getattr(explorer, name)) for name in explorer.__all__)
    commands = next(action for action in build_parser()._actions if action.dest == "command").choices
    assert sorted(commands) == sorted(["translate", "generate", "evaluate", "trace", "roles", "evolution", "heads",
                                       "importance", "prune-curve", "detect", "patch", "faithfulness", "sinks",
                                       "replicate"])


def test_pages_share_the_head_analyses_through_one_module():
    """What the Heads page computes (roles, importance, its thresholds) reaches Prune and Compare through
    pages/components/head_analyses.py, not through session keys two pages agree on by convention."""
    convention = re.compile(r"""f["'](roles|importance):|["']role_thresholds["']""")
    pages = [path for path in (ROOT / "pages").rglob("*.py") if path.name != "head_analyses.py"]
    assert len(pages) > 20
    assert [path.name for path in pages if convention.search(path.read_text(encoding="utf-8"))] == []
