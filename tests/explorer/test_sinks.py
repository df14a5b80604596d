"""Attention sinks: shares on a planted pattern computed by hand, a corpus as the mean of its sentences, every
family, and the CLI."""

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from explorer import cli
from explorer.analyses.sentence.sinks import OVER_CHANCE, SINK_THRESHOLD, corpus_sinks, sink_keys, sinks
from explorer.capture.trace import HeadValues, trace_sentence
from explorer.models.loader import open_model
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model


def planted(trace, weights: np.ndarray, lengths: np.ndarray):
    """The trace with encoder layer 0 replaced: head 0's rows are `weights`, every other head uniform; norms are
    α·‖f(x)‖ with the given ‖f(x)‖ per key."""
    pattern = np.array(trace.attention["encoder"].value("pattern"))
    keys = pattern.shape[-1]
    pattern[0] = 1.0 / keys
    pattern[0, 0] = weights
    attention = dict(trace.attention, encoder=HeadValues(pattern, norm=pattern * lengths))
    return replace(trace, attention=attention)


def test_planted_sink_shares_equal_a_hand_computation(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "Two big dogs run in the deep white snow, very fast.")
    tokens = trace.source_tokens
    comma, stop, end = tokens.index(","), tokens.index("."), len(tokens) - 1
    assert tokens[end] == "</s>" and 0 not in (comma, stop)
    n = len(tokens)
    content = [p for p in range(n) if p not in (0, comma, stop, end)]
    row = np.zeros(n)
    row[0], row[end], row[stop], row[comma] = 0.4, 0.2, 0.1, 0.1
    row[content] = 0.2 / len(content)
    lengths = np.ones(n)
    lengths[[0, end, stop, comma]] = 0.1              # sinks' f(x) short, as Kobayashi et al. found
    rows = {r["spec"]: r for r in sinks(tiny_checkpoint, planted(trace, np.tile(row, (n, 1)), lengths))}

    head = rows["enc.0.0"]
    assert head["weight_first"] == pytest.approx(0.4) and head["weight_special"] == pytest.approx(0.2)
    assert head["weight_punctuation"] == pytest.approx(0.2) and head["weight"] == pytest.approx(0.8)
    # by norm: the row is 0.04, 0.02, 0.01, 0.01 on the sinks and 0.2 on the content, total 0.28
    assert head["norm_first"] == pytest.approx(0.04 / 0.28) and head["norm"] == pytest.approx(0.08 / 0.28)
    assert head["sink"] and head["token"] == tokens[0]
    uniform = rows["enc.0.1"]
    assert uniform["weight"] == pytest.approx(4 / n) == pytest.approx(uniform["chance"])
    assert not uniform["sink"] and head["chance"] == pytest.approx(4 / n) and 2 * 4 / n < 0.8


def test_no_head_is_a_sink_where_chance_alone_gives_the_share(tiny_checkpoint):
    """Three of four tokens are sinks in "A dog." + </s>: uniform attention gives 0.75, so 0.8 is not a sink."""
    trace = trace_sentence(tiny_checkpoint, "A dog.")
    assert trace.source_tokens == ["▁A", "▁dog", ".", "</s>"]
    row = np.array([0.6, 0.2, 0.1, 0.1])
    head = next(r for r in sinks(tiny_checkpoint, planted(trace, np.tile(row, (4, 1)), np.ones(4)))
                if r["spec"] == "enc.0.0")
    assert head["weight"] == pytest.approx(0.8) and head["chance"] == pytest.approx(0.75) and not head["sink"]


def test_the_every_head_grid_outlines_flagged_heads():
    from explorer.figures.attention import heads_grid

    pattern = np.full((2, 3, 4, 4), 0.25)
    figure = heads_grid(pattern, list("abcd"), list("abcd"), flags={(1, 2): "sink 0.83 · norm 0.10"})
    [note] = figure.layout.annotations
    assert note.text == "sink 0.83 · norm 0.10"
    [box] = figure.layout.shapes
    gap = 1 + 4 // 8
    assert (box.x0, box.x1, box.y0, box.y1) == (2 * (4 + gap) - 0.5, 2 * (4 + gap) + 3.5, 1 * (4 + gap) - 0.5,
                                                1 * (4 + gap) + 3.5)


def test_sink_keys_split_first_special_and_punctuation(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "Dogs run, fast.")
    keys = sink_keys(tiny_checkpoint, trace, "encoder")
    tokens = trace.source_tokens
    assert keys == {"first": [0], "special": [len(tokens) - 1],
                    "punctuation": [tokens.index(","), tokens.index(".")]}
    decoder = sink_keys(tiny_checkpoint, trace, "decoder")
    assert decoder["first"] == [0] and trace.target_tokens[0] == "<s>"
    assert 0 not in decoder["special"]


def test_a_corpus_is_the_mean_of_its_sentences(tiny_checkpoint):
    sentences = ["Two dogs play in the snow.", "", "A man, a plan."]
    report = corpus_sinks(tiny_checkpoint, sentences)
    assert report["sentences"] == 2
    each = [sinks(tiny_checkpoint, trace_sentence(tiny_checkpoint, s)) for s in sentences if s]
    for position, row in enumerate(report["heads"]):
        for field in ("weight", "norm", "weight_first", "norm_punctuation", "chance"):
            assert row[field] == pytest.approx((each[0][position][field] + each[1][position][field]) / 2)
        assert row["sink"] == (row["weight"] >= max(SINK_THRESHOLD, OVER_CHANCE * row["chance"]))
    assert report["sink_heads"] == [row["spec"] for row in report["heads"] if row["sink"]]


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family(family, tmp_path_factory):
    model = open_model(str(saved_model(family, tmp_path_factory)))
    trace = trace_sentence(model, SENTENCE)
    rows = sinks(model, trace)
    assert {row["kind"] for row in rows} == set(model.kinds)
    assert len(rows) == sum(model.layers(kind) for kind in model.kinds) * model.heads
    for row in rows:
        assert 0 <= row["norm"] <= 1 + 1e-6 and 0 <= row["weight"] <= 1 + 1e-6
        assert row["weight"] == pytest.approx(row["weight_first"] + row["weight_special"] + row["weight_punctuation"])
    kind = model.kinds[0]
    ids = trace.source_ids or trace.target_ids
    specials = [p for p, token in enumerate(ids) if token in model.special_ids and p > 0]
    assert sink_keys(model, trace, kind)["special"] == specials      # BERT's [SEP], </s>, none for GPT-2


def test_cli_prints_one_json_object_and_one_line_errors(tiny_checkpoint, tmp_path, capsys):
    text = tmp_path / "sentences.txt"
    text.write_text("Two dogs play in the snow.\nA man runs.\n")
    assert cli.main(["sinks", "--model", str(tiny_checkpoint.path), "--src", str(text), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sentences"] == 2 and report["corpus"] == "sentences.txt" and report["threshold"] == 0.5
    assert cli.main(["sinks", "--model", str(tiny_checkpoint.path), "--src", str(tmp_path / "missing.txt")]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "missing.txt" in error and error.count("\n") == 1
    assert cli.main(["sinks", "--model", str(tiny_checkpoint.path), "--src", str(text), "--threshold", "2"]) == 1
    assert "--threshold 2" in capsys.readouterr().err


def test_notebook_sinks_table(tiny_checkpoint):
    import explorer

    trace = trace_sentence(tiny_checkpoint, "Two dogs play in the snow.")
    table = explorer.attention_sinks(tiny_checkpoint, trace)
    with pytest.warns(DeprecationWarning, match="give the model first"):        # the order before 2026-11-28
        pd.testing.assert_frame_equal(explorer.attention_sinks(trace, tiny_checkpoint), table)
    rows = sinks(tiny_checkpoint, trace)
    assert list(table.index) == [row["spec"] for row in rows]
    np.testing.assert_allclose(table["norm"], [row["norm"] for row in rows])
