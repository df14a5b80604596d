"""The promises the repository itself makes: the README's two commands, CI running them, no CDN, no pickle."""

import ast
import re
import subprocess

import pytest

from tests.conftest import ROOT, SHIPPED, module_name


def tracked_files() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one():
    first_block = ROOT.joinpath("README.md").read_text().split("```")[1]
    assert "bash scripts/start.sh" in first_block and "bash scripts/test.sh" in first_block
    ci = [line for line in ROOT.joinpath(".ci/run").read_text().splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == ["bash scripts/test.sh", "bash scripts/check_package.sh"]
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


def test_nothing_reads_a_folder_beside_the_clone():
    """A clone with nothing beside it runs every test and script: the corpora are the ones it ships, read through
    explorer/settings.py (two test modules once read the corpora from a folder beside the clone, there only on the
    machine they were written on)."""
    beside = re.compile(r"""\.\./shared|["']shared["']\s*/|/\s*["']shared["']""")
    readers = [name for name in tracked_files() if name.endswith((".py", ".sh", ".toml", ".cfg"))
               and name != "tests/test_project.py"          # (this test's own pattern)
               and beside.search((ROOT / name).read_text(errors="ignore"))]
    assert readers == []


def imported_modules(tree: ast.Module, package_modules: set[str], package: str = "") -> set[str]:
    """The project modules a file imports, at its top or inside a function."""
    found = set()
    # Imports for annotations only (`if TYPE_CHECKING:`) never run: they make no cycle.
    typing_only = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                   for statement in node.body for inner in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = absolute(node, package) if node.level else node.module
            submodules = {f"{module}.{alias.name}" for alias in node.names}    # `from explorer import settings`
            found |= submodules
            if not submodules <= package_modules:       # names from the module itself, not only its submodules
                found.add(module)
    return found & package_modules


def absolute(node: ast.ImportFrom, package: str) -> str:
    """A relative import's module (`from .interface import` in explorer.models.loader → explorer.models.interface)."""
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def parsed(folders: tuple[str, ...]) -> dict[str, ast.Module]:
    """Every Python file under the folders, parsed: dotted module name → tree."""
    return {module_name(p): ast.parse(p.read_text(encoding="utf-8"), str(p))
            for folder in folders for p in (ROOT / folder).rglob("*.py")}


def package_of(module: str, trees: dict[str, ast.Module]) -> str:
    """The package a module's relative imports start from: itself for a package's __init__, else its parent."""
    return module if any(other.startswith(module + ".") for other in trees) else module.rsplit(".", 1)[0]


def import_graph() -> dict[str, set[str]]:
    """explorer/ and models/: each module → the project modules it imports."""
    trees = parsed(("explorer", "models"))
    return {module: imported_modules(tree, set(trees), package_of(module, trees)) - {module}
            for module, tree in trees.items()}


@pytest.mark.slow
def test_explorer_and_models_import_no_cycle():
    """The import graph of explorer/ and models/ is acyclic, and models/ never imports explorer/."""
    graph = import_graph()
    # the walk sees imports
    assert {"explorer.models.interface", "explorer.capture.inputs"} <= graph["explorer.capture.trace"]
    assert not [m for m, imports in graph.items()
                if m.startswith("explorer.models") and any(not i.startswith("explorer.models") for i in imports)]
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


# explorer/'s layers (docs/architecture.md): capture → analyses → figures → teaching, analyses → papers, all → cli.
# Each package → the packages of explorer/ its modules may import besides its own. A lesson draws figures, so teaching
# sits above figures; the papers' cards measure and word their results and the pages draw them, so papers uses neither
# figures nor teaching. The notebook API (explorer/__init__.py) and __main__ stand with cli, at the top.
MAY_IMPORT = {
    "capture": set(),
    "analyses": {"capture"},
    "figures": {"capture", "analyses"},
    "teaching": {"capture", "analyses", "figures"},
    "papers": {"capture", "analyses"},
    "cli": {"capture", "analyses", "figures", "teaching", "papers"},
}


def explorer_layer(module: str) -> str:
    """explorer.capture.trace → "capture"; explorer itself (the notebook API) and explorer.__main__ → "cli"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in MAY_IMPORT else "cli"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import in explorer/ that runs against the layer order."""
    return sorted(f"{module} imports {imported}" for module, imports in graph.items()
                  if module.startswith("explorer.") and not below_explorer(module)
                  for imported in imports if imported.split(".")[0] == "explorer" and not below_explorer(imported)
                  and explorer_layer(imported) not in MAY_IMPORT[explorer_layer(module)] | {explorer_layer(module)})


def below_explorer(module: str) -> bool:
    """explorer.models (models/) and explorer.settings sit under every layer of explorer/: any of them imports them."""
    return module.startswith(("explorer.models", "explorer.settings"))


@pytest.mark.slow
def test_explorer_keeps_its_layer_order_and_defines_no_model():
    """capture imports nothing above it, analyses only capture, figures and papers only those two, teaching
    figures too, and only cli (with the notebook API) anything; models live in models/, never in explorer/."""
    planted = {"explorer.capture.trace": {"explorer.analyses.sentence.norms", "explorer.models.interface"},
               "explorer.analyses.sentence.patching": {"explorer.teaching.wording", "explorer.capture.inputs"},
               "explorer.figures.common": {"explorer.teaching.wording"}, "explorer.papers.bench": {"explorer.figures.common"},
               "explorer.teaching.lesson": {"explorer.figures.lesson"}, "explorer.capture.inputs": {"explorer"}}
    assert upward_imports(planted) == ["explorer.analyses.sentence.patching imports explorer.teaching.wording",
                                       "explorer.capture.inputs imports explorer",
                                       "explorer.capture.trace imports explorer.analyses.sentence.norms",
                                       "explorer.figures.common imports explorer.teaching.wording",
                                       "explorer.papers.bench imports explorer.figures.common"]
    assert upward_imports(import_graph()) == []
    networks = [f"{module}.{node.name}" for module, tree in parsed(("explorer",)).items() for node in ast.walk(tree)
                if isinstance(node, ast.ClassDef) and any(base_name(base) == "Module" for base in node.bases)]
    assert networks == [], "explorer/ defines a model: it belongs in models/"


def base_name(node: ast.expr) -> str:
    """`nn.Module` → "Module", `ExplorerModel` → "ExplorerModel"."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def family_classes() -> tuple[set[str], set[str]]:
    """(the classes a model is made of, the modules of models/ that implement the interface): a class of models/
    whose bases lead to interface.py's (a family, its own error) or to torch's Module (its network)."""
    trees = parsed(("models",))
    interface = {node.name for node in ast.walk(trees["explorer.models.interface"]) if isinstance(node, ast.ClassDef)}
    bases = {(module, node.name): {base_name(base) for base in node.bases} for module, tree in trees.items()
             if module != "explorer.models.interface" for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    implements, networks = set(), set()
    for _ in bases:                                   # until nothing new: each pass reaches one level further down
        implements |= {name for (_, name), parents in bases.items() if parents & (interface | implements)}
        networks |= {name for (_, name), parents in bases.items() if parents & ({"Module"} | networks)}
    modules = {module for (module, name) in bases if name in implements}
    return implements | networks, modules


def task_values(node: ast.expr) -> bool:
    """A task's attribute, constant or string: `model.task`, TRANSLATE, "fill-mask", ("translate", …)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(task_values(element) for element in node.elts)
    return (isinstance(node, ast.Attribute) and node.attr == "task"
            or base_name(node) in {"TRANSLATE", "CONTINUE", "FILL_MASK", "CLASSIFY"}
            or isinstance(node, ast.Constant) and node.value in {"translate", "continue", "fill-mask", "classify"})


def what_a_model_is(tree: ast.Module, families: set[str], family_modules: set[str]) -> list[str]:
    """Where code asks which family or class a model is rather than what it can do, by line: its type's name,
    its __class__, isinstance with a family's class, a family's module imported, its .family or is_hugging_face, its
    folder read by getattr. A caught exception's type may be named in a message (`type(error).__name__`)."""
    caught = {node.name for node in ast.walk(tree) if isinstance(node, ast.ExceptHandler) and node.name}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "__class__" and base_name(node.value) not in caught:
            found.append(f"{node.lineno}: .__class__")
        elif (isinstance(node, ast.Attribute) and node.attr == "__name__" and isinstance(node.value, ast.Call)
              and base_name(node.value.func) == "type" and not (node.value.args and base_name(node.value.args[0]) in caught)):
            found.append(f"{node.lineno}: type(…).__name__")
        elif isinstance(node, ast.Call) and base_name(node.func) == "isinstance" and len(node.args) == 2:
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            found += [f"{node.lineno}: isinstance(…, {base_name(c)})" for c in classes if base_name(c) in families]
        elif isinstance(node, ast.Call) and base_name(node.func) == "getattr" and any(
                isinstance(arg, ast.Constant) and arg.value == "folder" for arg in node.args):
            found.append(f"{node.lineno}: getattr(…, \"folder\")")
        elif isinstance(node, (ast.Attribute, ast.Name)) and base_name(node) in {"family", "is_hugging_face"}:
            found.append(f"{node.lineno}: {base_name(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module in family_modules:
            found.append(f"{node.lineno}: from {node.module} import")
        elif isinstance(node, ast.Import) and {alias.name for alias in node.names} & family_modules:
            found.append(f"{node.lineno}: import of a family's module")
    return sorted(found, key=lambda place: int(place.split(":")[0]))


def task_comparisons(tree: ast.Module) -> list[str]:
    """Where code compares a task (`model.task == TRANSLATE`, `… != "fill-mask"`, `.task in (…)`, `match model.task`)
    instead of asking for a capability."""
    found = [f"{node.lineno}: a task compared" for node in ast.walk(tree)
             if isinstance(node, ast.Compare) and any(task_values(side) for side in [node.left, *node.comparators])]
    found += [f"{node.lineno}: match on a task" for node in ast.walk(tree)
              if isinstance(node, ast.Match) and task_values(node.subject)]
    return sorted(found, key=lambda place: int(place.split(":")[0]))


METRIC_NAMES = {"bleu", "perplexity"}          # any case: "BLEU", "Perplexity" …


def metric_values(node: ast.expr) -> bool:
    """A metric's name as a string: "BLEU", "perplexity", ("bleu", …)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(metric_values(element) for element in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in METRIC_NAMES


def metric_comparisons(tree: ast.Module) -> list[str]:
    """Where code compares a metric (`.metric == "BLEU"`, `quality != "perplexity"`, `metric in ("bleu", …)`) instead
    of asking the metric's Scorer (corpus_scoring.scorer_by_metric, corpus_task) for its words and its direction."""
    def names_a_metric(node: ast.expr) -> bool:
        return base_name(node) in {"metric", "quality", "metric_key"}

    return [f"{node.lineno}: a metric compared" for node in ast.walk(tree)
            if isinstance(node, ast.Compare) and any(names_a_metric(side) for side in [node.left, *node.comparators])
            and any(metric_values(side) for side in [node.left, *node.comparators])]


KIND_TEXTS = {"encoder", "decoder", "cross", "enc", "dec"}


def kind_comparisons(tree: ast.Module) -> list[str]:
    """Where code compares an attention kind's text (`kind == "encoder"`, `… != "cross"`, `kind in ("encoder", …)`,
    `"decoder" in trace.attention`) instead of asking the Kind (models/vocabulary.py) its sides, mask or names."""
    def kind_text(node: ast.expr) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(kind_text(element) for element in node.elts)
        return isinstance(node, ast.Constant) and node.value in KIND_TEXTS

    return [f"{node.lineno}: a kind's text compared" for node in ast.walk(tree)
            if isinstance(node, ast.Compare) and any(kind_text(side) for side in [node.left, *node.comparators])]


def code_above_models() -> dict[str, ast.Module]:
    return {module: tree for module, tree in parsed(("explorer", "pages")).items()}


@pytest.mark.slow
def test_nothing_above_models_asks_which_family_a_model_is():
    """A family shows itself by its class, its module, its own error or its files' attribute: above models/ code asks
    what a model can do instead (model.has(kind), isinstance(model, Generates), model.position_bias …)."""
    families, family_modules = family_classes()
    assert {"Checkpoint", "T5", "HuggingFaceError", "Transformer", "DigitsClassifier"} <= families
    assert {"ExplorerModel", "Generates", "Multilingual", "ModelError"}.isdisjoint(families)
    assert ({"explorer.models.checkpoint", "explorer.models.t5", "explorer.models.hugging_face"} <= family_modules
            and "explorer.models.interface" not in family_modules)
    planted = ast.parse("name = type(model).__name__\nkind = model.__class__\nok = isinstance(model, (Generates, T5))\n"
                        "from explorer.models.t5 import T5\nfolder = getattr(model, 'folder', None)\nmodel.family\n"
                        "try:\n    pass\nexcept OSError as error:\n    print(type(error).__name__, error.__class__)\n"
                        "fine = isinstance(model, Multilingual) and model.has('cross')\n")
    assert what_a_model_is(planted, families, family_modules) == [
        "1: type(…).__name__", "2: .__class__", "3: isinstance(…, T5)", "4: from explorer.models.t5 import",
        "5: getattr(…, \"folder\")", "6: family"]
    asking = {module: found for module, tree in code_above_models().items()
              if (found := what_a_model_is(tree, families, family_modules))}
    assert asking == {}
    assert not [p for p in (ROOT / "explorer").glob("hugging_face*.py")]


@pytest.mark.slow
def test_nothing_above_models_compares_a_task():
    """`task` is a label for people and JSON (models/interface.py): code branches on a capability instead."""
    planted = ast.parse("a = model.task == TRANSLATE\nb = checkpoint.task != 'fill-mask'\nc = model.task in (CONTINUE,)\n"
                        "d = mode == 'translate'\ne = kind in ('continue', 'x')\nf = model.has('cross')\n"
                        "match model.task:\n    case _:\n        pass\n")
    assert task_comparisons(planted) == ["1: a task compared", "2: a task compared", "3: a task compared",
                                         "4: a task compared", "5: a task compared", "7: match on a task"]
    comparing = {module: found for module, tree in code_above_models().items() if (found := task_comparisons(tree))}
    assert comparing == {}


def test_nothing_above_models_compares_an_attention_kinds_text():
    """A kind knows its query and key sides, whether it is causal, self- or cross-attention, its names
    (explorer.models.vocabulary.Kind): code above models/ asks it, so a kind's meaning is written in one place."""
    planted = ast.parse("a = kind == 'encoder'\nb = looked_at != \"cross\"\nc = kind in ('encoder', 'cross')\n"
                        "d = 'decoder' in trace.attention\ne = kind.is_self\nf = model.has('cross')\n"
                        "g = pruned['hardest'] == 'cross'\nh = kind is Kind.ENCODER\n")
    assert kind_comparisons(planted) == ["1: a kind's text compared", "2: a kind's text compared",
                                         "3: a kind's text compared", "4: a kind's text compared",
                                         "7: a kind's text compared"]
    comparing = {module: found for module, tree in code_above_models().items() if (found := kind_comparisons(tree))}
    assert comparing == {}


@pytest.mark.slow
def test_nothing_above_models_compares_a_metric_but_its_scorer():
    """What a metric is measured on, which way is better and how its statistics become scores are the Scorer's
    (explorer/analyses/corpus/corpus_scoring.py): code above models/ asks it rather than comparing a metric's name."""
    planted = ast.parse("a = report.quality == 'BLEU'\nb = curve.metric != \"perplexity\"\n"
                        "c = metric in ('bleu', 'x')\nd = scorer.metric_key == 'Perplexity'\ne = measure == 'BLEU'\n"
                        "f = scorer.metric == other.metric\ng = 'BLEU' if quality == 'BLEU' else 'lines'\n")
    assert metric_comparisons(planted) == ["1: a metric compared", "2: a metric compared", "3: a metric compared",
                                           "4: a metric compared", "7: a metric compared"]
    comparing = {module: found for module, tree in code_above_models().items()
                 if module != "explorer.analyses.corpus.corpus_scoring" and (found := metric_comparisons(tree))}
    assert comparing == {}


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


@pytest.mark.slow
def test_the_public_names_stay_where_people_use_them():
    """The notebook API and every CLI command keep their names whatever moves inside explorer/ (issue 32)."""
    import explorer
    from explorer.analyses.registry import registered
    from explorer.cli import build_parser

    assert explorer.__all__ == ["load", "trace_sentence", "translate", "attention_figure", "heads_figure", "head_view",
                                "model_view", "HtmlView", "word_trace", "attention_sinks", "attention_flow",
                                "faithfulness_of", "logit_lens_of", "patch", "detect_heads", "sample",
                                "word_focus_table", "run_with_hooks", "hook_names", "head_value", "ablate_head",
                                "patch_head", "patch_positions", "trace_image", "image_attention_figure", "analyse",
                                "analysis_names", "analysis_figure", "run_with_cache", "roles", "importance",
                                "prune_curve", "replicate", "atlas", "search_heads", "query_key_space"]
    assert all(callable(getattr(explorer, name)) for name in explorer.__all__)
    commands = next(action for action in build_parser()._actions if action.dest == "command").choices
    assert sorted(commands) == sorted(["app", "serve", "translate", "generate", "evaluate", "trace", "roles",
                                       "evolution", "heads", "importance", "prune-curve", "detect", "focus", "patch",
                                       "faithfulness", "sinks", "replicate", "lesson", "atlas", "search-heads",
                                       *registered()])


def test_pages_share_the_head_analyses_through_one_module():
    """What the Heads page computes (roles, importance, its thresholds) reaches Prune and Compare through
    pages/components/head_analyses.py, not through session keys two pages agree on by convention."""
    convention = re.compile(r"""f["'](roles|importance):|["']role_thresholds["']""")
    pages = [path for path in (ROOT / "pages").rglob("*.py") if path.name != "head_analyses.py"]
    assert len(pages) > 20
    assert [path.name for path in pages if convention.search(path.read_text(encoding="utf-8"))] == []
