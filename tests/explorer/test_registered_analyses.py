"""Every registered analysis (explorer/analyses/registry.py) reaches the command line, the notebook API, the corpus
job, the figures, the Glossary and the docs' list from its one definition; checked here for each, so that a new
analysis's own test only checks its numbers."""

import json

import numpy as np
import pytest

import explorer
from explorer import cli
from explorer.analyses.jobs.job_registry import JOBS
from explorer.analyses.records import HeadScores
from explorer.analyses.registry import Analysis, Option, registered
from explorer.capture.trace import trace_sentence
from explorer.figures.registered import figure_of
from explorer.teaching.glossary import GLOSSARY
from scripts.analyses_table import PAGE, rows

ANALYSES = list(registered())
SENTENCES = ["Two dogs play in the snow.", "A man runs.", "Three women talk at a table."]


def test_the_recipes_example_is_registered_from_its_folder():
    assert "entropy" in ANALYSES
    assert all(isinstance(analysis, Analysis) for analysis in registered().values())


@pytest.mark.parametrize("name", ANALYSES)
def test_command_line_json_equals_the_notebook_and_the_figure_draws_it(name, tiny_checkpoint, capsys):
    sentence = SENTENCES[0]
    assert cli.main([name, "--model", str(tiny_checkpoint.path), "--text", sentence, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    record = explorer.analyse(name, tiny_checkpoint, sentence)
    direct = registered()[name].run(tiny_checkpoint, trace_sentence(tiny_checkpoint, sentence))
    assert printed == record.to_json() == direct.to_json()
    figure = figure_of(record)
    drawn = [np.array(trace.z, dtype=float) for trace in figure.data]
    assert len(drawn) == len(record.scores)
    for values, expected in zip(drawn, record.scores.values()):
        np.testing.assert_allclose(values, expected)
    assert cli.main([name, "--model", str(tiny_checkpoint.path), "--text", sentence]) == 0
    table = capsys.readouterr().out
    assert record.measure in table and "h0" in table


@pytest.mark.parametrize("name", ANALYSES)
def test_a_corpus_in_shards_is_the_mean_of_its_sentences(name, tiny_checkpoint, tmp_path, capsys):
    job = JOBS["registered"]
    options = {"analysis": name, "fix_casing": True}
    shards = job.shard(tiny_checkpoint, {"sentences": SENTENCES}, options, 2)
    merged = job.merge(tiny_checkpoint, {}, options, [job.run(tiny_checkpoint, shard) for shard in shards])
    one_by_one = [explorer.analyse(name, tiny_checkpoint, sentence).scores for sentence in SENTENCES]
    assert merged.sentences == len(SENTENCES)
    for kind, values in merged.scores.items():
        np.testing.assert_allclose(values, np.mean([scores[kind] for scores in one_by_one], axis=0), rtol=1e-9)
    corpus = tmp_path / "sentences.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n")
    assert cli.main([name, "--model", str(tiny_checkpoint.path), "--src", str(corpus), "--json"]) == 0
    printed = HeadScores.from_json(json.loads(capsys.readouterr().out))
    for kind, values in merged.scores.items():
        np.testing.assert_allclose(printed.scores[kind], values, rtol=1e-9)


def test_bad_options_and_inputs_get_one_line(tiny_checkpoint, tmp_path, capsys):
    name = ANALYSES[0]
    with pytest.raises(ValueError, match=f"{name} has no option colour"):
        explorer.analyse(name, tiny_checkpoint, "A man runs.", colour="red")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert cli.main([name, "--model", str(tiny_checkpoint.path), "--src", str(empty)]) == 1
    assert cli.main([name, "--model", str(tiny_checkpoint.path), "--text", "", "--json"]) == 1
    errors = capsys.readouterr().err.strip().split("\n")
    assert len(errors) == 2 and all(line.startswith("error: ") for line in errors) and "empty.txt" in errors[0]


def test_options_become_flags_of_their_type():
    from explorer.cli.registered import command_of

    analysis = Analysis("planted", "Planted", "a planted analysis", run=lambda model, trace, **options: None,
                        options=(Option("normalised", False, "a switch"), Option("top", 3, "a number"),
                                 Option("by", "weight", "a choice", ("weight", "norm"))))
    import argparse

    parser = argparse.ArgumentParser()
    command_of(analysis).add_options(parser)
    args = parser.parse_args(["--model", "m", "--text", "t", "--normalised", "--top", "5", "--by", "norm"])
    assert (args.normalised, args.top, args.by) == (True, 5, "norm")
    assert (parser.parse_args(["--model", "m", "--text", "t"]).top) == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "m", "--text", "t", "--by", "colour"])


def test_every_term_is_in_the_glossary_and_every_analysis_in_the_docs():
    for analysis in registered().values():
        for term, definition in analysis.terms.items():
            assert GLOSSARY[term].definition == definition and analysis.title in GLOSSARY[term].see
    page = PAGE.read_text(encoding="utf-8")
    missing = [line for line in rows() if line not in page]
    assert not missing, f"docs/analyses.md is out of date: run `python -m scripts.analyses_table` ({missing})"
