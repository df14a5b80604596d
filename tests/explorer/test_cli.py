"""python -m explorer: right output on good input, one clear line and a non-zero exit on bad input."""

import gzip
import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
import torch

from explorer.analyses.corpus.roles import analyse_roles
from explorer.cli import main
from explorer.models.checkpoint import load_checkpoint, save_checkpoint
from explorer.models.data import read_lines
from explorer.models.transformer import Transformer
from tests.conftest import MULTI30K, ROOT, tiny_config


def cli(*args: str) -> subprocess.CompletedProcess:
    """The command line's own code, run in this process (a new interpreter costs seconds a call): its exit code
    (argparse's included) and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = exit_.code
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.mark.slow
def test_translate_prints_one_line_per_sentence(tiny_checkpoint):
    """`python -m explorer` itself, in a process of its own."""
    result = subprocess.run([sys.executable, "-m", "explorer", "translate", "--model", str(tiny_checkpoint.path),
                             "A dog runs.", "Two men.", "Ein Test"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3
    assert cli("translate", "--model", str(tiny_checkpoint.path), "A dog runs.").stdout == \
        result.stdout.splitlines()[0] + "\n"


def test_evaluate_json_is_exactly_one_object(tiny_checkpoint, tmp_path):
    src, ref = tmp_path / "src.en.gz", tmp_path / "ref.de"
    with gzip.open(src, "wt", encoding="utf-8") as handle:
        handle.write("A dog runs.\nTwo men talk.\n\nA girl.\n")
    ref.write_text("Ein Hund rennt.\nZwei Männer reden.\nLeer.\nEin Mädchen.\n", encoding="utf-8")
    result = cli("evaluate", "--model", str(tiny_checkpoint.path), "--src", str(src), "--ref", str(ref), "--json",
                 "--limit", "3", "--prune", "enc.0.*")
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)
    # One rule for blank lines: the pair with the blank source is left out, and said so.
    assert set(value) == {"bleu", "chrf", "sentences", "skipped", "seconds"}
    assert (value["sentences"], value["skipped"]) == (2, 1)
    assert 0 <= value["bleu"] <= 100 and value["seconds"] > 0


@pytest.mark.slow
def test_trace_writes_npz_and_json(tiny_checkpoint, tmp_path):
    for suffix in ("npz", "json"):
        out = tmp_path / f"trace.{suffix}"
        result = cli("trace", "--model", str(tiny_checkpoint.path), "--text", "A dog runs.", "--out", str(out))
        assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "trace.npz") as data:
        pattern = data["cross.pattern"]
        meta = json.loads(str(data["metadata"]))
    assert pattern.shape[:2] == (2, 4) and pattern.shape[-1] == len(meta["source_tokens"])
    np.testing.assert_allclose(pattern.sum(-1), 1, atol=1e-5)
    document = json.loads((tmp_path / "trace.json").read_text())
    assert document["source_tokens"] == meta["source_tokens"]
    assert np.allclose(np.array(document["arrays"]["encoder.pattern"]).sum(-1), 1, atol=1e-4)
    assert len(document["steps"][0]["top_probs"]) == 10


@pytest.mark.parametrize("case", ["no-model", "file-as-model", "bad-spec", "misaligned", "binary-src",
                                  "missing-ref", "bad-suffix", "empty-text", "bad-beam", "unknown-flag"])
def test_bad_input_gives_one_clear_line(case, tiny_checkpoint, tmp_path):
    model = str(tiny_checkpoint.path)
    src, ref = tmp_path / "src.en", tmp_path / "ref.de"
    src.write_text("A dog.\nA cat.\n")
    ref.write_text("Ein Hund.\n")
    binary = tmp_path / "weights.bin"
    binary.write_bytes(bytes(range(256)) * 10)
    args = {
        "no-model": ["translate", "--model", str(tmp_path / "missing"), "A dog."],
        "file-as-model": ["translate", "--model", str(binary), "A dog."],
        "bad-spec": ["translate", "--model", model, "--prune", "enc.9.0", "A dog."],
        "misaligned": ["evaluate", "--model", model, "--src", str(src), "--ref", str(ref)],
        "binary-src": ["evaluate", "--model", model, "--src", str(binary), "--ref", str(ref)],
        "missing-ref": ["evaluate", "--model", model, "--src", str(src), "--ref", str(tmp_path / "nope.de")],
        "bad-suffix": ["trace", "--model", model, "--text", "A dog.", "--out", str(tmp_path / "trace.txt")],
        "empty-text": ["translate", "--model", model, "  "],
        "bad-beam": ["translate", "--model", model, "--beam", "0", "A dog."],
        "unknown-flag": ["translate", "--model", model, "--colour", "A dog."],
    }[case]
    result = cli(*args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and result.stdout == ""
    # One clear line: ours is "error: ..." alone; argparse's usage errors print the usage, then one error line.
    lines = result.stderr.strip().splitlines()
    if case in ("bad-beam", "unknown-flag"):
        assert lines[0].startswith("usage: python -m explorer") and "error:" in lines[-1]
        assert sum("error" in line for line in lines) == 1
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), lines


@pytest.mark.slow
def test_roles_importance_and_prune_curve_commands(tiny_checkpoint, tmp_path):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_checkpoint.path, model)
    ewt = MULTI30K.parent / "ud" / "en_ewt-ud-dev.conllu.gz"
    text = str(MULTI30K / "val.en.gz")
    # The tiny model's 400 pieces are all among the 500 most frequent: without switching Voita et al.'s filter off
    # no sentence would count for the rare-token statistics.
    roles = cli("roles", "--model", str(model), "--text", text, "--conllu", str(ewt), "--limit", "20", "--json",
                "--positional", "0.5", "--rare-common-top", "0")
    assert roles.returncode == 0, roles.stderr
    report = json.loads(roles.stdout)
    assert len(report["heads"]) == 24 and report["seconds"] > 0 and report["thresholds"]["positional"] == 0.5
    assert report["corpus"]["text"] == {"name": "val.en.gz", "sentences": 20, "skipped": 0, "rare_common_top": 0}
    assert report["corpus"]["treebank"]["name"] == "en_ewt-ud-dev.conllu.gz"
    head = report["heads"][0]
    assert {"kind", "layer", "head", "roles", "confidence", "positional", "syntactic", "syntactic_short",
            "rare_token"} <= set(head)
    assert {"rate", "chance", "rate_top2", "chance_top2"} <= set(head["rare_token"])
    (model / "head_roles.json").write_text(roles.stdout)

    src, ref = str(MULTI30K / "val.en.gz"), str(MULTI30K / "val.de.gz")
    importance = cli("importance", "--model", str(model), "--src", src, "--ref", ref, "--limit", "12", "--json")
    assert importance.returncode == 0, importance.stderr
    scores = json.loads(importance.stdout)
    assert len(scores["heads"]) == 24 and "bleu_change" in scores["heads"][5]
    assert scores["heads"][0]["roles"] == head["roles"]
    (model / "head_importance.json").write_text(importance.stdout)

    test_src, test_ref = str(MULTI30K / "test_2016_flickr.en.gz"), str(MULTI30K / "test_2016_flickr.de.gz")
    curve = cli("prune-curve", "--model", str(model), "--src", test_src, "--ref", test_ref, "--limit", "8",
                "--kinds", "enc,all", "--steps", "2", "--seeds", "1", "--compare-normalisations", "--json")
    assert curve.returncode == 0, curve.stderr
    result = json.loads(curve.stdout)
    data = result["kinds"]
    assert set(data) == {"enc", "all"} and data["all"]["pruned"] == [0, 12, 24] and len(data["enc"]["random_mean"]) == 3
    assert (result["corpus"], result["importance_corpus"], result["measure"]) == ("test_2016_flickr.en.gz", "val.en.gz", "raw")
    assert list(data["all"]["other_orders"]) == ["layer"] and len(data["all"]["other_orders"]["layer"]) == 3

    # Two snapshots that differ: an earlier, other random initialisation (epoch 1) and the model itself (epoch 2).
    torch.manual_seed(1)
    earlier = save_checkpoint(tmp_path / "earlier", Transformer(tiny_config()), model / "tokenizer.model",
                              {"name": "earlier"})
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    for epoch, folder in ((1, earlier), (2, model)):
        shutil.copy(folder / "model.safetensors", snapshots / f"epoch-{epoch}.safetensors")
    evolution = cli("evolution", "--model", str(model), "--snapshots", str(snapshots), "--text", text, "--limit", "6")
    assert evolution.returncode == 0, evolution.stderr
    lines = json.loads(evolution.stdout)
    assert lines["epochs"] == [1, 2] and len(lines["heads"]) == 24
    # Each epoch's line holds the roles of its own weights, each model opened from its own folder; they differ.
    sentences = read_lines(MULTI30K / "val.en.gz")[:6]
    for epoch, folder in enumerate((earlier, model)):
        measured = {entry["spec"]: entry for entry in analyse_roles(load_checkpoint(folder), sentences).heads}
        assert [(h["confidence"][epoch], h["share"][epoch]) for h in lines["heads"]] == \
            [(measured[h["spec"]]["confidence"], (measured[h["spec"]].get("positional") or {}).get("share"))
             for h in lines["heads"]]
    assert sum(h["confidence"][0] != h["confidence"][1] for h in lines["heads"]) >= 20

    least = cli("evaluate", "--model", str(model), "--src", src, "--ref", ref, "--limit", "5",
                "--prune-least-important", "0.5", "--json")
    assert least.returncode == 0 and json.loads(least.stdout)["sentences"] == 5


@pytest.mark.parametrize("args, message", [
    (["prune-curve", "--kinds", "enc,foo"], "foo"),
    (["prune-curve", "--importance", "/nonexistent.json"], "not a readable importance report"),
    (["evaluate", "--prune-least-important", "0.3"], "head_importance.json: missing"),
])
def test_pruning_commands_explain_what_is_missing(tiny_checkpoint, args, message):
    src, ref = str(MULTI30K / "val.en.gz"), str(MULTI30K / "val.de.gz")
    result = cli(args[0], "--model", str(tiny_checkpoint.path), "--src", src, "--ref", ref, *args[1:])
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_curve_without_an_importance_file_orders_by_importance_on_its_own_corpus(tiny_checkpoint):
    src, ref = str(MULTI30K / "val.en.gz"), str(MULTI30K / "val.de.gz")
    result = cli("prune-curve", "--model", str(tiny_checkpoint.path), "--src", src, "--ref", ref, "--limit", "5",
                 "--kinds", "enc", "--steps", "2", "--seeds", "1", "--json")
    assert result.returncode == 0 and "in-sample" in result.stderr
    curve = json.loads(result.stdout)
    assert curve["importance_corpus"] == curve["corpus"] == "val.en.gz" and curve["metric"] == "BLEU"
    assert curve["kinds"]["enc"]["pruned"] == [0, 4, 8]


def test_roles_needs_a_corpus_and_evolution_needs_snapshots(tiny_checkpoint, tmp_path):
    result = cli("roles", "--model", str(tiny_checkpoint.path))
    assert result.returncode == 1 and "--text" in result.stderr and "Traceback" not in result.stderr
    result = cli("evolution", "--model", str(tiny_checkpoint.path), "--snapshots", str(tmp_path), "--text",
                 str(MULTI30K / "val.en.gz"))
    assert result.returncode == 1 and "no epoch-N.safetensors" in result.stderr and "Traceback" not in result.stderr


def test_roles_on_a_file_that_is_not_conllu(tiny_checkpoint, tmp_path):
    bad = tmp_path / "trees.conllu"
    bad.write_text("this is not\ta treebank\n\n")
    result = cli("roles", "--model", str(tiny_checkpoint.path), "--conllu", str(bad))
    assert result.returncode == 1 and "error:" in result.stderr and "Traceback" not in result.stderr


def test_translate_says_what_the_model_does_not_see(tiny_checkpoint):
    long = "A dog runs. " * 40                         # far over the tiny model's 64 tokens
    result = cli("translate", "--model", str(tiny_checkpoint.path), long, "A dog 😀 runs 一只狗.")
    assert result.returncode == 0 and len(result.stdout.splitlines()) == 2
    notes = result.stderr.strip().splitlines()
    assert notes[0].startswith("note: sentence 1 is longer than the model's maximum of 64 tokens")
    assert notes[1].startswith("note: sentence 2: the vocabulary has no piece for") and "😀" in notes[1]


def test_text_is_read_as_typed_unless_recase_is_asked_and_then_it_says_so(tiny_checkpoint, tmp_path):
    fixed = cli("translate", "--model", str(tiny_checkpoint.path), "--recase", "THE DOG IS RUNNING.", "A dog runs.")
    assert fixed.returncode == 0
    assert fixed.stderr.strip().splitlines() == [
        "note: sentence 1 is all capitals or all lower case; fed as “The dog is running.” (--recase)"]
    as_typed = cli("translate", "--model", str(tiny_checkpoint.path), "THE DOG IS RUNNING.")
    kept = cli("translate", "--model", str(tiny_checkpoint.path), "--keep-casing", "THE DOG IS RUNNING.")
    assert as_typed.returncode == kept.returncode == 0 and as_typed.stderr.strip() == kept.stderr.strip() == ""
    assert as_typed.stdout == kept.stdout                       # --keep-casing, the old switch, is the default now
    # trace says it too, and the saved trace records what was typed
    traced = cli("trace", "--model", str(tiny_checkpoint.path), "--text", "THE DOG IS RUNNING.", "--recase",
                 "--out", str(tmp_path / "t.json"))
    assert traced.returncode == 0 and "fed as “The dog is running.” (--recase)" in traced.stderr
    assert json.loads((tmp_path / "t.json").read_text())["recased_from"] == "THE DOG IS RUNNING."


def test_every_command_is_one_entry_of_the_registry():
    """COMMANDS (explorer/cli/__init__.py) is the one list: every module of explorer/cli/ with a run() is reached
    through it, and the parser shows its commands, in its order, with its help."""
    import importlib

    from explorer.cli import COMMANDS, build_parser

    runs = {command.run for command in COMMANDS.values()}
    for path in sorted((ROOT / "explorer" / "cli").glob("[!_]*.py")):
        module = importlib.import_module(f"explorer.cli.{path.stem}")
        assert getattr(module, "run", None) in runs | {None}, f"{path.name}: its run() is not in COMMANDS"
    commands = next(action for action in build_parser()._actions if action.dest == "command")
    assert list(commands.choices) == list(COMMANDS)
    assert [choice.help for choice in commands._choices_actions] == [command.help for command in COMMANDS.values()]
