"""Long inputs: figures of many tokens stay bounded and legible, small multiples are pooled with numbers that
match an independent computation, and sentences up to 45 tokens render exactly as before."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from plotly.io.json import to_json_plotly

from explorer.analyses.corpus.pruning import StepComparison
from explorer.analyses.sentence.internals import Walkthrough
from explorer.capture.decoding_steps import TeacherForcing
from explorer.capture.trace import Generated, HeadValues, StepDistribution
from explorer.figures.attention import heads_grid, layer_heads
from explorer.figures.common import position_labels
from explorer.figures.decoding import attention_row_described, plotly_bars, steps_described, teacher_forcing_figure
from explorer.figures.internals import (
    embedding_sum_figure,
    learned_positions_figure,
    positional_encoding_figure,
    scores_mask_softmax,
)
from explorer.figures.matrix import MASK, SIGNED, Matrix, plotly_heatmap
from explorer.figures.pruning import step_comparison_described
from explorer.figures.walkthrough import walkthrough_figure
from explorer.models.vocabulary import Kind
from tests.explorer.test_focus_window import row_labels
from tests.explorer.test_thumbnails import assert_drawn, image_of
from tests.explorer.test_thumbnails import tiles as thumbnails

WORDS = ["▁A", "▁man", "▁in", "▁a", "▁red", "▁shirt", "▁is", "▁riding", "▁bi", "cycle", ".", "</s>",
         "<b>x</b>"]


def tokens(count: int, offset: int = 0) -> list[str]:
    return [WORDS[(i + offset) % len(WORDS)] for i in range(count)]


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def inputs(count: int, seed: int = 0, layers: int = 2, heads: int = 3):
    """Deterministic patterns, scores and a causal mask for `count` tokens."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(layers, heads, count, count)).astype(np.float32)
    mask = np.tril(np.ones((count, count), dtype=bool))
    pattern = softmax_rows(np.where(mask, scores, -np.inf)).astype(np.float32)
    return scores, mask, pattern


def walk_of(count: int) -> Walkthrough:
    rng = np.random.default_rng(count)
    dots = rng.normal(size=count)
    masked = np.where(np.arange(count) <= count // 2, dots / 4, -np.inf)
    weights = softmax_rows(masked)
    values = rng.normal(size=(count, 4))
    return Walkthrough(q=rng.normal(size=4), keys=rng.normal(size=(count, 4)), values=values, dots=dots,
                       scaled=dots / 4, scaling=0.25, masked=masked, weights=weights,
                       weighted_values=weights[:, None] * values, z=(weights[:, None] * values).sum(0),
                       concatenated=rng.normal(size=8), output=rng.normal(size=8))


def steps_of(count: int) -> list[StepDistribution]:
    return [StepDistribution(chosen=token, chosen_id=i, chosen_prob=0.5 + 0.4 * np.sin(i), entropy=1.0 + np.cos(i),
                             top_ids=[i, i + 1], top_tokens=[token, "▁x"], top_probs=[0.6, 0.3])
            for i, token in enumerate(tokens(count))]


def short_figures(counts=(5, 20, 45)):
    """Every figure with a token axis, on synthetic numbers, at the sentence lengths the explorer was tuned for."""
    for n in counts:
        scores, mask, pattern = inputs(n)
        queries, keys = tokens(n), tokens(n, 3)
        rng = np.random.default_rng(n)
        positional = rng.normal(size=(n, 16))
        yield f"attention_heatmap-{n}", plotly_heatmap(Matrix(pattern[0, 1], queries, keys, "t", highlight=n // 2))
        yield f"attention_heatmap-per-figure-{n}", plotly_heatmap(Matrix(pattern[1, 0], queries, keys, "t",
                                                                            scale="per-figure"))
        yield f"heads_grid-{n}", heads_grid(pattern, queries, keys, "grid")
        yield f"layer_heads-{n}", layer_heads(pattern[0], queries, keys, "layer", focus_row=1, focus_column=2,
                                              per_row=2)
        yield f"matrix_heatmap-{n}", plotly_heatmap(Matrix(scores[0, 0], queries, keys, "m", SIGNED, value_name="score"))
        yield f"mask_heatmap-{n}", plotly_heatmap(Matrix(mask, queries, queries, "mask", MASK))
        yield f"padding_mask-{n}", plotly_heatmap(Matrix(np.array([[True] * n, [True] * (n - 2) + [False] * 2]), ["a", "b"],
                                                         [], "padding", MASK,
                                                         pieces=[tokens(n), tokens(n - 2) + ["<pad>"] * 2]))
        yield f"scores_mask_softmax-{n}", scores_mask_softmax(scores[0, 0], mask, pattern[0, 0], queries, queries, "s")
        yield f"positional-{n}", positional_encoding_figure(positional, queries, "pe")
        yield f"learned-{n}", learned_positions_figure(positional, queries, "learned")
        yield f"embedding_sum-{n}", embedding_sum_figure(positional, positional / 2, positional * 1.5, queries, "sum")
        yield f"walkthrough-{n}", walkthrough_figure(walk_of(n), keys, "▁man", 16)
        yield f"steps_overview-{n}", plotly_bars(steps_described(steps_of(n)))
        yield f"attention_row-{n}", plotly_bars(attention_row_described(pattern[0, 0, -1], keys, "row"))
        forced = TeacherForcing(tokens=tokens(n), probabilities=list(np.linspace(0.1, 0.9, n)),
                                ranks=[1 + i % 3 for i in range(n)], loss=0.7)
        yield f"teacher_forcing-{n}", teacher_forcing_figure(forced)
        compared = StepComparison(tokens=tokens(n), unpruned=list(np.linspace(0.2, 0.8, n)),
                                  pruned=list(np.linspace(0.8, 0.2, n)), kl=list(np.linspace(0, 1, n)))
        yield f"step_comparison-{n}", plotly_bars(step_comparison_described(compared))


FIGURES_FILE = Path(__file__).with_name("short_figures.json")
CHUNK = 256             # a typed array's numbers are kept as sums over runs of this many


def chunk_sums(array: np.ndarray) -> list[list[float]]:
    """Per run of CHUNK numbers: the sum of the positive ones, of the negative ones' sizes, and of every size
    weighted by its place in the run. Each sum is of numbers of one sign, so a tolerance relative to it means
    something; a value changed, moved or flipped in sign changes one of them."""
    values = np.nan_to_num(array.astype(np.float64).ravel(), nan=0.0, posinf=0.0, neginf=0.0)
    sums = []
    for start in range(0, len(values), CHUNK):
        run = values[start:start + CHUNK]
        place = 1 + np.arange(len(run)) / CHUNK
        sums.append([float(np.clip(run, 0, None).sum()), float(np.clip(-run, 0, None).sum()),
                     float((np.abs(run) * place).sum())])
    return sums


def figure_numbers(figure) -> dict:
    """A figure as its JSON gives it (without the template: plotly's process-wide default, which importing Streamlit
    in another test of the same process replaces), split in two. "layout": a digest of everything but its floats —
    structure, text (numbers written as text included), whole numbers, dtypes and shapes, and where NaN and ±inf
    stand — compared exactly. "floats" (the JSON's own, in order) and "arrays" (each float typed array's chunk_sums):
    compared with a tolerance, since np.exp's last bit differs between CPUs (its vectorised loop) and the inputs
    here go through it."""
    data = figure.to_plotly_json()
    data["layout"].pop("template", None)
    floats, arrays = [], []

    def skeleton(value):
        if isinstance(value, dict) and "bdata" in value:
            array = decoded(value)
            if array.dtype.kind != "f":
                return {"dtype": value["dtype"], "values": array.tolist()}
            arrays.append(chunk_sums(array))
            return {"dtype": value["dtype"], "shape": list(array.shape), "nan": np.flatnonzero(np.isnan(array)).tolist(),
                    "+inf": np.flatnonzero(array == np.inf).tolist(), "-inf": np.flatnonzero(array == -np.inf).tolist()}
        if isinstance(value, float):
            floats.append(value)
            return "float"
        if isinstance(value, list):
            return [skeleton(item) for item in value]
        if isinstance(value, dict):
            return {key: skeleton(item) for key, item in value.items()}
        return value

    shape = skeleton(json.loads(to_json_plotly(data)))
    layout = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]
    return {"layout": layout, "floats": floats, "arrays": arrays}


def significant(value):
    """Numbers to 10 significant digits, for a data file that reads and diffs well (far below the tolerance)."""
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, list):
        return [significant(item) for item in value]
    return {key: significant(item) for key, item in value.items()} if isinstance(value, dict) else value


def write_expected() -> None:
    """After a change meant to alter these figures, once they are checked by eye:
    `.venv/bin/python -m tests.explorer.test_long_inputs` rewrites tests/explorer/short_figures.json."""
    figures = {name: significant(figure_numbers(figure)) for name, figure in short_figures(COUNTS)}
    FIGURES_FILE.write_text("{\n" + ",\n".join(f"{json.dumps(name)}: {json.dumps(numbers)}"
                                                for name, numbers in figures.items()) + "\n}\n", encoding="utf-8")


# Each figure as the figure code made it before long inputs were handled (commit d532292): up to LONG_FROM tokens every
# figure must stay what it was. The file holds each figure's layout digest and its numbers (figure_numbers). History:
# digests of the whole JSON until 2026-11-26, re-made for issue 30 (the 11 px label floor; Internals' masks, scores →
# softmax and walkthrough for a projector's column; the steps overview's entropy ticks; the pruning steps' labels at
# 60°), each time checked by eye; the numbers taken out of the digest on 2026-11-26 (issue 44) from code whose digests
# matched those, but for the three walkthroughs whose inputs differ in np.exp's last bit on this CPU; the layouts of
# the every-head grid and the three token bar charts re-made for issue 46 (their titles measured and pinned to the
# top, so that a projector's type keeps them off the head names and the axis), checked by eye. A plotly
# upgrade that changes its JSON changes these too: check the figures by eye, then write_expected().
COUNTS = (5, 20, 45, 60)


def compared(numbers: dict, part: str) -> np.ndarray:
    return np.array(numbers[part] if part == "floats" else [sums for array in numbers[part] for sums in array],
                    dtype=float).ravel()


@pytest.mark.slow
def test_figures_up_to_sixty_tokens_are_unchanged():
    expected = json.loads(FIGURES_FILE.read_text(encoding="utf-8"))
    made = {name: figure_numbers(figure) for name, figure in short_figures(COUNTS)}
    assert list(made) == list(expected)
    changed = [name for name in made if made[name]["layout"] != expected[name]["layout"] or
               [len(made[name]["floats"])] + [len(sums) for sums in made[name]["arrays"]] !=
               [len(expected[name]["floats"])] + [len(sums) for sums in expected[name]["arrays"]]]
    assert not changed, f"these figures no longer render as before long inputs were handled: {changed}"
    for name in made:
        for part in ("floats", "arrays"):
            np.testing.assert_allclose(compared(made[name], part), compared(expected[name], part), rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name}: its numbers ({part}) changed")


# -- independent references: plain loops over the blocks --

def block_mass(pattern: np.ndarray, factor_rows: int, factor_columns: int) -> np.ndarray:
    """Each block's total weight on its keys, averaged over its queries, by loops."""
    rows, columns = pattern.shape
    out = np.zeros((-(-rows // factor_rows), -(-columns // factor_columns)))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            block = pattern[i * factor_rows:(i + 1) * factor_rows, j * factor_columns:(j + 1) * factor_columns]
            out[i, j] = block.sum(axis=1).mean()
    return out


def block_mean(values: np.ndarray, factor: int) -> np.ndarray:
    rows, columns = values.shape
    out = np.zeros((-(-rows // factor), -(-columns // factor)))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            block = values[i * factor:(i + 1) * factor, j * factor:(j + 1) * factor]
            finite = block[np.isfinite(block)]
            out[i, j] = finite.mean() if finite.size else np.nan
    return out


def decoded(value) -> np.ndarray:
    """A plotly array as to_plotly_json gives it: a numpy array, a list, or {"bdata", "dtype", "shape"}."""
    import base64

    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return array.reshape([int(n) for n in str(value.get("shape", len(array))).split(",")])
    return np.asarray(value, dtype=float)


def z_of(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def test_pooling_matches_block_loops():
    from explorer.figures.pooling import block_labels, pool_factor, pooled_attention, pooled_mean

    _, _, pattern = inputs(250, seed=3, layers=1, heads=1)
    for factor_rows, factor_columns in ((4, 4), (7, 7), (1, 5)):
        np.testing.assert_allclose(pooled_attention(pattern[0, 0], factor_rows, factor_columns),
                                   block_mass(pattern[0, 0], factor_rows, factor_columns), rtol=1e-5, atol=1e-7)
    pooled = pooled_attention(pattern[0, 0], 7, 7)
    np.testing.assert_allclose(pooled.sum(axis=1), 1, atol=1e-5)      # a pooled row still sums to 1
    scores = np.where(np.tril(np.ones((250, 250), bool)), inputs(250, seed=4)[0][0, 0], -np.inf)
    np.testing.assert_allclose(pooled_mean(scores, 6, 6), block_mean(scores, 6), rtol=1e-5, atol=1e-6,
                               equal_nan=True)
    assert np.isnan(pooled_mean(scores, 6, 6)[0, -1])                  # a block all −∞ is blank
    assert pool_factor(250, 64) == 4 and pool_factor(500, 64) == 8 and pool_factor(45, 64) == 1
    labels = block_labels(tokens(250), 4)
    assert len(labels) == 63 and labels[0] == "0–3 ▁A…" and labels[-1] == f"248–249 {tokens(250)[248]}…"
    assert labels[1].startswith("4–7 ") and "&lt;b&gt;" in block_labels(tokens(13), 4)[3]    # markup escaped


def test_a_long_head_is_drawn_whole_zoomable_with_thinned_labels():
    from explorer.figures.common import LABEL_SPACING, LONG_AXIS

    _, _, pattern = inputs(250, layers=1, heads=1)
    figure = plotly_heatmap(Matrix(pattern[0, 0], tokens(250), tokens(250, 3), "head"))
    [heatmap] = figure.data
    np.testing.assert_array_equal(z_of(heatmap), pattern[0, 0])        # every token, nothing pooled
    assert list(heatmap.y) == position_labels(tokens(250))
    for axis in (figure.layout.xaxis, figure.layout.yaxis):
        assert axis.tickmode == "auto" and axis.nticks == LONG_AXIS // LABEL_SPACING and axis.dtick is None
    assert figure.layout.height < 1300                                   # not a cell per token (4,000 px)
    assert "250 × 250 tokens" in figure.layout.title.text and "zoom" in figure.layout.title.text


@pytest.mark.slow
def test_a_head_past_the_cells_budget_is_pooled_and_says_so():
    from explorer.figures.common import MAX_CELLS

    _, _, pattern = inputs(600, layers=1, heads=1)
    figure = plotly_heatmap(Matrix(pattern[0, 0], tokens(600), tokens(600), "head", highlight=300))
    z = z_of(figure.data[0])
    assert z.size <= MAX_CELLS and z.shape == (300, 300)
    np.testing.assert_allclose(z, block_mass(pattern[0, 0], 2, 2), rtol=1e-5, atol=1e-7)
    assert "1/2 resolution" in figure.layout.title.text
    assert figure.layout.shapes[0].x0 == 150 - 0.5                       # the highlight on its block


def tiles(grid, layer: int, head: int) -> np.ndarray:
    """One head's tile of the every-head grid, found by its labels ("L1 · …", "H2 · …")."""
    rows = [i for i, label in enumerate(grid.y) if label.startswith(f"L{layer} · ")]
    columns = [j for j, label in enumerate(grid.x) if label.startswith(f"H{head} · ")]
    return z_of(grid)[np.ix_(rows, columns)]


@pytest.mark.slow
def test_every_head_of_a_long_sentence_is_pooled_block_by_block():
    _, _, pattern = inputs(250, layers=3, heads=8)
    cross = pattern[:, :, :36, :]                                          # a 36-token translation of 250 tokens
    for matrix, factors in ((pattern, (5, 5)), (cross, (1, 5))):
        figure = heads_grid(matrix, tokens(matrix.shape[2]), tokens(250), "grid")
        [grid] = figure.data
        for layer in range(3):
            for head in range(8):
                np.testing.assert_allclose(tiles(grid, layer, head), block_mass(matrix[layer, head], *factors),
                                           rtol=1e-5, atol=1e-7)
        assert "1/5 resolution" in figure.layout.title.text
        assert "245–249" in grid.x[-1]                                     # hover names the last block's tokens
    assert z_of(grid).size < 60_000 and figure.layout.height < 1000        # was 1.9 million cells
    # 12 × 12 heads of 500 tokens: each head's share of the width, a cell every 2 px at most
    big = np.random.default_rng(0).random((12, 12, 500, 500)).astype(np.float32)
    figure = heads_grid(big, tokens(500), tokens(500), "grid")
    np.testing.assert_allclose(tiles(figure.data[0], 11, 5), block_mass(big[11, 5], 14, 14), rtol=1e-5)
    assert z_of(figure.data[0]).size < 250_000 and figure.layout.height < 1200


@pytest.mark.slow
def test_compare_panels_of_a_long_sentence_are_pooled_with_the_focus_on_its_block():
    _, _, pattern = inputs(250, layers=1, heads=8)
    figure = layer_heads(pattern[0], tokens(250), tokens(250), "h8", focus_row=101, focus_column=37, per_row=3)
    assert len(figure.data) == 8 and "1/4 resolution" in figure.layout.title.text
    for head, heatmap in enumerate(figure.data):
        np.testing.assert_allclose(z_of(heatmap), block_mass(pattern[0, head], 4, 4), rtol=1e-5, atol=1e-7)
    row, column = figure.layout.shapes[:2]
    assert (row.y0, row.y1) == (25 - 0.5, 25 + 0.5) and (column.x0, column.x1) == (9 - 0.5, 9 + 0.5)
    assert figure.layout.height < 1600 and figure.layout.width < 1100


@pytest.mark.slow
def test_long_scores_panels_are_the_real_numbers_and_zoom_together():
    scores, mask, pattern = inputs(250, layers=1, heads=1)
    figure = scores_mask_softmax(scores[0, 0], mask, pattern[0, 0], tokens(250), tokens(250), "s")
    raw, additive, masked, weights = (z_of(t) for t in figure.data)
    np.testing.assert_allclose(raw, scores[0, 0], rtol=1e-6)
    np.testing.assert_array_equal(additive, mask.astype(float))
    assert np.isnan(masked[~mask]).all() and np.allclose(masked[mask], scores[0, 0][mask])
    np.testing.assert_allclose(weights, pattern[0, 0], rtol=1e-6)
    assert all(figure.layout[f"xaxis{i}"].matches == "x" and figure.layout[f"yaxis{i}"].matches == "y"
               for i in range(2, 5))
    assert all(t.text is None for t in figure.data)                       # no 62,500 strings: hover reads z
    # 500 tokens: four panels would be a million cells; pooled by 2, each panel's block means / masses
    scores, mask, pattern = inputs(500, layers=1, heads=1)
    figure = scores_mask_softmax(scores[0, 0], mask, pattern[0, 0], tokens(500), tokens(500), "s")
    raw, additive, masked, weights = (z_of(t) for t in figure.data)
    np.testing.assert_allclose(raw, block_mean(scores[0, 0], 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(additive, block_mean(mask.astype(float), 2), rtol=1e-5)
    np.testing.assert_allclose(masked, block_mean(np.where(mask, scores[0, 0], -np.inf), 2), rtol=1e-5, atol=1e-6,
                               equal_nan=True)
    np.testing.assert_allclose(weights, block_mass(pattern[0, 0], 2, 2), rtol=1e-5, atol=1e-7)
    assert "1/2 resolution" in figure.layout.title.text


def test_the_bertviz_window_holds_exactly_the_chosen_tokens():
    from explorer.capture.trace import Trace
    from explorer.figures.windows import WINDOW, window_trace, window_words

    source, target = tokens(250), tokens(36, 5)
    _, _, encoder = inputs(250, layers=2, heads=2)
    rng = np.random.default_rng(1)
    cross = rng.random((2, 2, 36, 250))
    trace = Trace(text="t", source_ids=list(range(250)), target_ids=list(range(36)),
                  source_tokens=source, target_tokens=target, truncated=False, pruned="", d_k=4,
                  attention={Kind.ENCODER: HeadValues(encoder), Kind.CROSS: HeadValues(cross)},
                  masks={}, positional={}, embeddings={}, inputs={},
                  output=Generated("German", "o", target[1:], []))
    shown = window_trace(trace, 100)
    assert shown.source_tokens == source[100:100 + WINDOW] and shown.target_tokens == target   # the short side whole
    np.testing.assert_array_equal(shown.pattern("encoder"), encoder[:, :, 100:140, 100:140])
    np.testing.assert_array_equal(shown.pattern("cross"), cross[:, :, :, 100:140])
    assert window_trace(trace, 245).source_tokens == source[-WINDOW:]    # moved back to fit
    assert window_words(trace, 100) == "source tokens 100–139 of 250"
    assert window_words(window_trace(trace, 0), 0) == ""                  # a short trace needs no window


def test_long_token_bars_take_the_columns_width_with_thinned_labels():
    for figure in (plotly_bars(attention_row_described(np.linspace(0, 1, 250), tokens(250), "row")),
                   plotly_bars(steps_described(steps_of(250)))):
        assert figure.layout.width is None and figure.layout.xaxis.tickmode == "auto"
        assert figure.layout.height < 700 and "zoom in" in figure.layout.title.text
        assert len(figure.data[0].x) == 250                                # every bar is drawn


@pytest.mark.slow
def test_every_figure_stays_bounded_at_250_and_500_tokens():
    """No figure is thousands of px tall, none forces a label per token on a long axis, none sends megabytes."""
    for name, figure in short_figures((250, 500)):
        assert (figure.layout.height or 0) <= 1600, name
        assert len(figure.to_json()) <= 2_000_000, name
        for trace in figure.data:
            for letter in "xy":
                axis = figure.layout[f"{letter}axis{(trace[f'{letter}axis'] or letter)[1:]}"]
                if trace[letter] is not None and len(trace[letter]) > 60:      # all its labels at once: unreadable
                    assert not (axis.tickmode == "linear" and axis.dtick == 1), name


@pytest.mark.slow
def test_the_pages_on_a_250_token_text(h8):
    """The bundled model on Multi30k captions joined to 250 tokens: each page's figures are the model's numbers,
    every token drawn or pooled as its title says, bertviz on a window, in bounded figures."""
    import json

    from benchmarks.long_inputs import text_of
    from explorer.capture.trace import trace_sentence
    from tests.app.conftest import html_figure, open_page, open_part, token_heatmaps
    from tests.explorer.test_token_heatmap import heatmap_cells

    text = text_of(h8, 250)
    trace = trace_sentence(h8, text)
    assert len(trace.source_tokens) == 250
    specs = lambda at: [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]  # noqa: E731

    at = open_page("attention.py", text)
    assert specs(at) == []      # the window, the whole pattern and the grids are tables
    [body] = token_heatmaps(at)
    window = heatmap_cells(body)
    size = len(window["keys"])      # the focus window: the first tokens, every one labelled
    assert 16 <= size <= 30 and len(window["columns"]) == size
    np.testing.assert_allclose(window["weights"], trace.pattern("encoder")[0, 0, :size, :size], atol=1e-5)
    assert f"tokens 0–{size - 1} of 250" in body
    whole = html_figure(at, "whole-pattern")
    assert_drawn(image_of(whole), trace.pattern("encoder")[0, 0])       # every cell, a pixel each
    assert "250 × 250" in whole and "height: 270.0px" in whole
    grid = html_figure(at, "every-head")
    assert "1/4 resolution" in grid                                     # 63 cells a side of a tile
    first = thumbnails(grid)[0]                                         # layer 0, head 0
    assert_drawn(first["pixels"], block_mass(trace.pattern("encoder")[0, 0], 4, 4))
    assert any("0–max of each figure" in c.value for c in at.caption)   # pale on 0–1: the page says what helps
    at.session_state["attention_view"] = "bertviz head view"
    at.run()
    size = int(np.sqrt(100_000 / (3 * 3 * 8)))          # 3 kinds × 3 layers × 8 heads within 100,000 weights: 37
    assert not at.exception and any(f"source tokens 0–{size - 1} of 250" in c.value for c in at.caption)
    [frame] = at.get("iframe")
    assert len(frame.proto.srcdoc) < 3_000_000                          # was 27 MB for every token
    at.slider(key="attention_window").set_value(100).run()
    assert any(f"source tokens 100–{100 + size - 1} of 250" in c.value for c in at.caption)

    at = open_part(open_page("internals.py", text, internals_kind="encoder"), "Scores → softmax")
    [panels] = specs(at)         # the encoder's mask hides nothing: scores and softmax, no blank mask panel
    assert len(panels["data"]) == 2 and "no mask here" in panels["layout"]["annotations"][-1]["text"]
    np.testing.assert_allclose(decoded(panels["data"][1]["z"]), trace.pattern("encoder")[0, 0], atol=1e-6)

    at = open_page("compare.py", text)
    assert specs(at) == []
    strips = html_figure(at, "focus-strips")
    assert len(strips) < 2_000_000 and len(row_labels(strips)) == 250               # every token labelled, once
    tiles = html_figure(at, "every-head-of-every-model")
    assert len(tiles) < 2_000_000 and len(thumbnails(tiles)) == 8 + 2 + 1 and "1/4 resolution" in tiles   # pooled


if __name__ == "__main__":
    write_expected()
