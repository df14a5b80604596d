"""What a model reads is answered in one place (explorer/capture/input_kinds.py): every other module above models/
dispatches on input_kind(model), never on the input capabilities themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from explorer.capture.input_kinds import IMAGE, INPUT_KINDS, TEXT, input_kind
from explorer.models.interface import ImageInput, TextInput

ROOT = Path(__file__).resolve().parents[1]
CAPABILITIES = {"ImageInput", "TextInput"}


def asks_what_a_model_reads(tree: ast.AST) -> list[int]:
    """Lines that test an input capability directly: isinstance(x, ImageInput) and the like."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and len(node.args) == 2:
            named = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if {ast.unparse(n).split(".")[-1] for n in named} & CAPABILITIES:
                lines.append(node.lineno)
    return lines


def test_the_check_finds_a_planted_question():
    planted = ast.parse("a = isinstance(model, ImageInput)\nb = isinstance(m, (Generates, interface.TextInput))\n"
                        "c = input_kind(model) is IMAGE\n")
    assert asks_what_a_model_reads(planted) == [1, 2]


@pytest.mark.slow
def test_only_the_registry_asks_what_a_model_reads():
    asking = {}
    for package in ("explorer", "pages"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "input_kinds.py":
                continue
            found = asks_what_a_model_reads(ast.parse(path.read_text(encoding="utf-8")))
            if found:
                asking[str(path.relative_to(ROOT))] = found
    assert asking == {}


def test_each_kind_is_registered_once_and_answers_for_the_bundled_models():
    from explorer.models.loader import open_model

    assert [kind.capability for kind in INPUT_KINDS] == [TextInput, ImageInput]
    assert input_kind(open_model(ROOT / "models" / "en-de-h1")) is TEXT
    assert input_kind(open_model(ROOT / "models" / "digits-vit")) is IMAGE
    assert (TEXT.reads, IMAGE.reads) == ("text", "images")
