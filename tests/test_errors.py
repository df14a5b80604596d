"""One error base for everything a person can cause (models/errors.py), caught in one place by the command line and
one by the pages; no code catches a bare ValueError, which would turn a bug into "cannot use these files"."""

from __future__ import annotations

import ast
import importlib

import pytest

from explorer.models.errors import ExplorerError
from tests.conftest import ROOT, module_name

PACKAGES = ("models", "explorer", "pages")


def python_files(*packages: str):
    for package in packages:
        yield from sorted((ROOT / package).rglob("*.py"))




def defined_errors() -> list[tuple[str, str]]:
    """(module, class) of every exception class the project defines: a class whose name ends in Error, or that
    derives from an exception class by name."""
    found = []
    for path in python_files("models", "explorer"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base) for base in node.bases]
                if node.name.endswith(("Error", "Missing")) or any(b.endswith(("Error", "Exception")) for b in bases):
                    found.append((module_name(path), node.name))
    return found


@pytest.mark.slow
def test_every_error_the_project_defines_derives_from_the_one_base():
    errors = defined_errors()
    assert len(errors) >= 10, errors            # the walk finds them: ModelError, CorpusError, InputError, …
    for module, name in errors:
        error = getattr(importlib.import_module(module), name)
        assert issubclass(error, ExplorerError), f"{module}.{name} is not an ExplorerError"


def caught_names(handler: ast.ExceptHandler) -> list[str]:
    if handler.type is None:
        return ["<bare except>"]
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return [ast.unparse(t) for t in types]


def parses_a_number(body: list[ast.stmt]) -> bool:
    """A try whose body only turns a string into a number (float(text)): its ValueError is the text's, not a bug's."""
    return (len(body) == 1 and isinstance(body[0], ast.Assign) and isinstance(body[0].value, ast.Call)
            and ast.unparse(body[0].value.func) in ("float", "int"))


@pytest.mark.slow
def test_no_code_catches_a_bare_value_error_or_everything():
    offenders = []
    for path in python_files(*PACKAGES):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            for handler in node.handlers:
                names = caught_names(handler)
                if "<bare except>" in names or ("ValueError" in names and not parses_a_number(node.body)
                                                and path.parts[-2] in ("pages", "components", "cli")):
                    offenders.append(f"{path.relative_to(ROOT)}:{handler.lineno} {names}")
    assert not offenders, offenders


def test_the_command_line_and_the_pages_each_catch_the_base_in_one_place():
    cli = (ROOT / "explorer/cli/__init__.py").read_text(encoding="utf-8")
    assert cli.count("except ExplorerError") == 1
    app = (ROOT / "pages/app.py").read_text(encoding="utf-8")
    assert "with errors_as_messages():" in app
    catching = [path.relative_to(ROOT) for path in python_files("pages")
                if "except ExplorerError" in path.read_text(encoding="utf-8")]
    # pages/components/errors.py is the one catch; jobs.py reports a corpus job's failure beside its progress bar;
    # launch.py, the app's own command line, refuses a host's --models or --device in one line before it starts.
    assert sorted(map(str, catching)) == ["pages/components/errors.py", "pages/components/jobs.py", "pages/launch.py"]


def test_a_person_error_becomes_one_line_and_a_bug_keeps_its_traceback(tmp_path, capsys):
    from explorer.cli import main

    assert main(["translate", "--model", str(tmp_path / "nowhere"), "A dog."]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "nowhere" in err[0]


def test_the_pages_catch_shows_the_message(monkeypatch):
    from streamlit.testing.v1 import AppTest

    def page():
        from explorer.models.errors import ExplorerError
        from explorer.pages.components.errors import errors_as_messages

        with errors_as_messages():
            raise ExplorerError("“<b>your file</b>”: not a CoNLL-U treebank")

    at = AppTest.from_function(page).run()
    assert not at.exception
    assert [e.value for e in at.error] == ["“<b>your file</b>”: not a CoNLL-U treebank"]


@pytest.mark.parametrize("error", ["ModelError", "CorpusError", "InputError", "HeadSpecError", "DistributedError"])
def test_each_kind_is_still_a_value_error_for_old_callers(error):
    module = {"ModelError": "explorer.models.interface", "CorpusError": "explorer.models.data",
              "InputError": "explorer.capture.inputs", "HeadSpecError": "explorer.capture.head_sets",
              "DistributedError": "explorer.analyses.jobs.distributed"}[error]
    assert issubclass(getattr(importlib.import_module(module), error), ValueError)
