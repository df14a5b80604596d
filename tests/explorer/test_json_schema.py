"""One JSON schema (issue 47): every command's `--json` output (and `evolution`'s) validated against the JSON
Schema written in docs/cli-and-notebook.md, so that the page and the commands cannot drift apart; every fixed key
snake_case, every head named the one way (spec, kind, layer, head), every list a list."""

from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest
import torch

from explorer.analyses.registry import registered
from explorer.cli import COMMANDS
from explorer.models.checkpoint import save_checkpoint
from explorer.models.transformer import Transformer
from tests.conftest import MULTI30K, ROOT, tiny_config
from tests.explorer.test_cli import cli

DOC = ROOT / "docs" / "cli-and-notebook.md"
VAL_EN, VAL_DE = str(MULTI30K / "val.en.gz"), str(MULTI30K / "val.de.gz")
TREEBANK = str(MULTI30K.parent / "ud" / "en_ewt-ud-dev.conllu.gz")
SNAKE = re.compile(r"[a-z][a-z0-9_]*")
# Maps keyed by data, not by name (the doc says so for each): their keys are not checked for snake_case.
REGISTERED = "ANALYSIS"     # the heading of the one schema of every registered analysis's --json
DATA_KEYED = {"histogram", "syntactic", "syntactic_short", "top_word_counts", "skipped", "kinds", "other_orders",
              "unpruned", "numbers", "scores"}


def documented() -> dict[str, dict]:
    """Each "### `COMMAND --json`" (or "### `evolution`") section's JSON block, with the shared $defs merged in."""
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^### (.+?)\n(?:.*?\n)*?```json\n(.*?)\n```", text, flags=re.MULTILINE | re.DOTALL)
    schemas = {heading: json.loads(body) for heading, body in blocks}
    shared = schemas.pop("Shared definitions")["$defs"]
    found = {}
    for heading, schema in schemas.items():
        command = re.match(r"`([A-Za-z-]+)", heading).group(1)
        schema["$defs"] = {**shared, **schema.get("$defs", {})}
        jsonschema.Draft202012Validator.check_schema(schema)
        found[command] = schema
    return found


def fixed_keys(value, path: str = "") -> list[str]:
    """Every key that names a field (not data) and is not snake_case, with where it is."""
    wrong = []
    if isinstance(value, dict):
        for key, item in value.items():
            if not SNAKE.fullmatch(key):
                wrong.append(f"{path}.{key}")
            if key not in DATA_KEYED:
                wrong += fixed_keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value[:3]:
            wrong += fixed_keys(item, path + "[]")
    return wrong


@pytest.fixture(scope="module")
def outputs(tiny_checkpoint, h8, tmp_path_factory) -> dict[str, dict]:
    """Every JSON command's output on the tiny model (its own analyses computed first, as scripts/ship_analyses.sh
    does) or on h8 where a command needs a trained model's shipped files."""
    folder = tmp_path_factory.mktemp("json") / "model"
    shutil.copytree(tiny_checkpoint.path, folder)
    model = str(folder)
    runs = {
        "evaluate": ["evaluate", "--model", model, "--src", VAL_EN, "--ref", VAL_DE, "--limit", "3", "--json"],
        "roles": ["roles", "--model", model, "--text", VAL_EN, "--conllu", TREEBANK, "--limit", "8", "--json"],
        "importance": ["importance", "--model", model, "--src", VAL_EN, "--ref", VAL_DE, "--limit", "4", "--json"],
        "prune-curve": ["prune-curve", "--model", model, "--src", VAL_EN, "--ref", VAL_DE, "--limit", "3", "--kinds",
                        "enc,all", "--steps", "2", "--seeds", "1", "--compare-normalisations", "--json"],
        "heads": ["heads", "--model", str(h8.path), "--json"],
        "detect": ["detect", "--model", model, "--seeds", "2", "--length", "6", "--json"],
        "focus": ["focus", "--model", str(h8.path), "--text", "The animal didn't cross the street because it was "
                  "too tired.", "--word", "it", "--json"],
        "patch": ["patch", "--model", str(h8.path), "--clean", "A dog runs in the snow.", "--corrupt",
                  "A cat runs in the snow.", "--json"],
        "sinks": ["sinks", "--model", model, "--src", VAL_EN, "--limit", "3", "--json"],
        "faithfulness": ["faithfulness", "--model", model, "--src", VAL_EN, "--limit", "3", "--json"],
        "replicate": ["replicate", "--model", model, "--paper", "jain_wallace", "--paper", "xiao", "--paper",
                      "clark_layers", "--sentences", "4", "--json"],
        "atlas": ["atlas", "--model", model, "--text", VAL_EN, "--limit", "3", "--json"],
        "search-heads": ["search-heads", "--model", model, "--text", VAL_EN, "--limit", "3", "--workers", "1",
                         "--json"],
    }
    found = {}
    for name, arguments in runs.items():
        result = cli(*arguments)
        assert result.returncode == 0, (name, result.stderr[-2000:])
        found[name] = json.loads(result.stdout)
        if name in ("roles", "importance"):         # what prune-curve and heads read, as shipped
            (folder / f"head_{name}.json").write_text(result.stdout)
    # evolution: two weight snapshots of different models, as a training run keeps them
    torch.manual_seed(1)
    earlier = save_checkpoint(folder.parent / "earlier", Transformer(tiny_config()), folder / "tokenizer.model",
                              {"name": "earlier"})
    snapshots = folder.parent / "snapshots"
    snapshots.mkdir()
    for epoch, source in ((1, earlier), (2, folder)):
        shutil.copy(source / "model.safetensors", snapshots / f"epoch-{epoch}.safetensors")
    result = cli("evolution", "--model", model, "--snapshots", str(snapshots), "--text", VAL_EN, "--limit", "4")
    assert result.returncode == 0, result.stderr[-2000:]
    found["evolution"] = json.loads(result.stdout)
    return found


@pytest.mark.slow
def test_every_json_command_is_documented():
    json_commands = {name for name, command in COMMANDS.items()
                     if "--json" in command_options(name) and name not in registered()} | {"evolution"}
    assert json_commands | {REGISTERED} == set(documented())     # the registered analyses share one schema


def test_each_commands_help_names_the_keys_its_schema_requires():
    """--help tells the truth about --json: the keys it names are the ones the documented schema requires."""
    from explorer.cli import build_parser

    schemas = documented()
    commands = next(action for action in build_parser()._actions if action.dest == "command").choices
    checked = 0
    for name, parser in commands.items():
        option = next((action for action in parser._actions if "--json" in action.option_strings), None)
        if option is None:
            continue
        schema = schemas[REGISTERED if name in registered() else name]
        assert set(re.findall(r'"([a-z_]+)"', option.help)) == set(schema["required"]), name
        checked += 1
    assert checked >= 12


@pytest.mark.parametrize("name", list(registered()))
def test_each_registered_analysis_follows_the_shared_schema(name, tiny_checkpoint, capsys):
    from explorer import cli as command_line

    assert command_line.main([name, "--model", str(tiny_checkpoint.path), "--text", "A dog runs.", "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    errors = sorted(jsonschema.Draft202012Validator(documented()[REGISTERED]).iter_errors(output), key=str)
    assert not errors, [f"{'/'.join(map(str, error.absolute_path))}: {error.message[:300]}" for error in errors[:5]]
    assert fixed_keys(output) == []


def command_options(name: str) -> str:
    result = cli(name, "--help")
    return result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("command", ["evaluate", "roles", "importance", "prune-curve", "evolution", "heads", "detect",
                                     "focus", "patch", "sinks", "faithfulness", "replicate", "atlas",
                                     "search-heads"])
def test_each_output_follows_its_documented_schema(outputs, command):
    output = outputs[command]
    errors = sorted(jsonschema.Draft202012Validator(documented()[command]).iter_errors(output), key=str)
    assert not errors, [f"{'/'.join(map(str, error.absolute_path))}: {error.message[:300]}" for error in errors[:5]]
    assert fixed_keys(output) == []


@pytest.mark.slow
def test_heads_are_named_one_way_everywhere(outputs):
    rows = (outputs["heads"]["heads"] + outputs["roles"]["heads"] + outputs["importance"]["heads"] +
            outputs["focus"]["heads"] + outputs["sinks"]["heads"] + outputs["evolution"]["heads"]
            + outputs["atlas"]["heads"] + outputs["search-heads"]["heads"])
    short = {"encoder": "enc", "decoder": "dec", "cross": "cross"}
    assert all(row["spec"] == f"{short[row['kind']]}.{row['layer']}.{row['head']}" for row in rows)
    assert all(isinstance(row["roles"], list) for row in outputs["heads"]["heads"])


@pytest.mark.slow
def test_the_schemas_can_fail():
    """A key with a space, roles as a string or a head named another way are each refused."""
    schemas = documented()
    good = {"model": "m", "heads": [{"spec": "enc.0.1", "kind": "encoder", "layer": 0, "head": 1, "roles": []}]}
    validator = jsonschema.Draft202012Validator(schemas["heads"])
    assert validator.is_valid(good)
    for broken in ({**good["heads"][0], "offset share": 0.2}, {**good["heads"][0], "roles": "positional"},
                   {**good["heads"][0], "spec": "encoder.0.1"}):
        assert not validator.is_valid({"model": "m", "heads": [broken]})
    assert fixed_keys({"rank_correlation": {"a vs b": 1}}) == [".rank_correlation.a vs b"]


def test_the_roles_say_which_thresholds_are_the_papers_and_which_the_projects_own(outputs):
    from dataclasses import fields

    from explorer.analyses.defaults import Thresholds

    sources = outputs["roles"]["threshold_sources"]
    assert set(sources) == {item.name for item in fields(Thresholds)} == set(outputs["roles"]["thresholds"])
    assert sources["positional"].startswith("Voita et al. 2019, §5.1")
    assert sources["syntactic_margin"].startswith("Voita et al. 2019, §5.2")
    assert all(sources[name].startswith("this project's own")
               for name in ("syntactic_min_count", "rare_rate", "rare_over_chance"))
