"""Long inputs: figures of many tokens stay bounded and legible, small multiples are pooled with numbers that
match an independent computation, and sentences up to 45 tokens render exactly as before."""

from __future__ import annotations

import hashlib
import json

import numpy as np
from plotly.io.json import to_json_plotly

from explorer.capture.decoding_steps import TeacherForcing
from explorer.figures.attention import attention_heatmap, heads_grid, layer_heads
from explorer.figures.focus import focus_rows
from explorer.figures.common import position_labels
from explorer.figures.decoding import attention_row_figure, steps_overview, teacher_forcing_figure
from explorer.figures.internals import (embedding_sum_figure, learned_positions_figure, mask_heatmap, matrix_heatmap,
                                        positional_encoding_figure, scores_mask_softmax)
from explorer.figures.walkthrough import walkthrough_figure
from explorer.figures.pruning import step_comparison_figure
from explorer.analyses.internals import Walkthrough
from explorer.analyses.pruning import StepComparison
from explorer.capture.trace import StepDistribution

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
        yield f"attention_heatmap-{n}", attention_heatmap(pattern[0, 1], queries, keys, "t", highlight=n // 2)
        yield f"attention_heatmap-per-figure-{n}", attention_heatmap(pattern[1, 0], queries, keys, "t",
                                                                     scale="per-figure")
        yield f"heads_grid-{n}", heads_grid(pattern, queries, keys, "grid")
        yield f"layer_heads-{n}", layer_heads(pattern[0], queries, keys, "layer", focus_row=1, focus_column=2,
                                              per_row=2)
        yield f"focus_rows-{n}", focus_rows({"a": pattern[0, :, 1], "b": pattern[1, :2, 1]}, keys, "▁man", "rows")
        yield f"matrix_heatmap-{n}", matrix_heatmap(scores[0, 0], queries, keys, "m", "score")
        yield f"mask_heatmap-{n}", mask_heatmap(mask, queries, queries, "mask")
        yield f"padding_mask-{n}", mask_heatmap(np.array([[True] * n, [True] * (n - 2) + [False] * 2]), ["a", "b"],
                                                [], "padding", row_pieces=[tokens(n), tokens(n - 2) + ["<pad>"] * 2])
        yield f"scores_mask_softmax-{n}", scores_mask_softmax(scores[0, 0], mask, pattern[0, 0], queries, queries, "s")
        yield f"positional-{n}", positional_encoding_figure(positional, queries, "pe")
        yield f"learned-{n}", learned_positions_figure(positional, queries, "learned")
        yield f"embedding_sum-{n}", embedding_sum_figure(positional, positional / 2, positional * 1.5, queries, "sum")
        yield f"walkthrough-{n}", walkthrough_figure(walk_of(n), keys, "▁man", 16)
        yield f"steps_overview-{n}", steps_overview(steps_of(n))
        yield f"attention_row-{n}", attention_row_figure(pattern[0, 0, -1], keys, "row")
        forced = TeacherForcing(tokens=tokens(n), probabilities=list(np.linspace(0.1, 0.9, n)),
                                ranks=[1 + i % 3 for i in range(n)], loss=0.7)
        yield f"teacher_forcing-{n}", teacher_forcing_figure(forced)
        compared = StepComparison(tokens=tokens(n), unpruned=list(np.linspace(0.2, 0.8, n)),
                                  pruned=list(np.linspace(0.8, 0.2, n)), kl=list(np.linspace(0, 1, n)))
        yield f"step_comparison-{n}", step_comparison_figure(compared)


def rounded(value):
    """Floats to 10 significant digits, everywhere in a figure's JSON: np.exp's last bit differs between CPUs (its
    vectorised loop), which is no change of the figure."""
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, list):
        return [rounded(item) for item in value]
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    return value


def digest(figure) -> str:
    """The figure's JSON without its template (the template is plotly's process-wide default, which importing
    Streamlit, in another test of the same process, replaces), its numbers rounded (rounded())."""
    data = figure.to_plotly_json()
    data["layout"].pop("template", None)
    plain = json.loads(to_json_plotly(data))
    return hashlib.sha256(json.dumps(rounded(plain), sort_keys=True).encode()).hexdigest()[:16]


# sha256 (first 16 hex digits) of each figure's JSON, made by the figure code as it was before long inputs were
# handled (commit d532292): up to LONG_FROM tokens every figure must stay what it was. (Re-made over rounded numbers
# on 2026-11-24, from code whose raw JSON still matched the old digests but for three walkthroughs that differed in
# np.exp's last bit on this CPU. The steps overviews re-made when their entropy axis got round ticks of its
# own, issue 30: nothing else in them changed. All re-made for issue 30's 11 px label floor: the 45- and 60-token
# figures grew to hold 11 px labels, and the pruning step figure thins its labels to a projector's column. Internals'
# masks, scores → softmax and walkthrough re-made for a projector's column, issue 30: the masks' key under their
# cells, the padding mask's positions every few, as many panels a row as fit 560 px, the walkthrough's numbers
# beside its bars at 11 px; cell values at 11 px where they fit a projector's column, a stretched figure's
# key labels thinned past 30 tokens and its title wrapped to that column; token bars likewise, the embedding sum's
# panel titles in two lines, the pruning steps' labels at 60°.) (A plotly upgrade that changes its JSON
# changes these too: check the figures by eye, then print the new digests with
# `python -c "from tests.explorer.test_long_inputs import *; [print(n, digest(f)) for n, f in short_figures(COUNTS)]"`.)
COUNTS = (5, 20, 45, 60)
BEFORE = {
    "attention_heatmap-5": "40ab1b42268133a9",
    "attention_heatmap-per-figure-5": "e164e402b528e263",
    "heads_grid-5": "790b98a248b068a9",
    "layer_heads-5": "1a2e0039812293a7",
    "focus_rows-5": "f319bc0f78d0ee0f",
    "matrix_heatmap-5": "3a6f9892154ea98a",
    "mask_heatmap-5": "97d6ac4772c3f536",
    "padding_mask-5": "0d76114e516eeecd",
    "scores_mask_softmax-5": "fa655366bb7e3369",
    "positional-5": "a2155512cccf717b",
    "learned-5": "d4c1a0ae04257610",
    "embedding_sum-5": "29b48cd1c486f254",
    "walkthrough-5": "5be8826dc7534fe0",
    "steps_overview-5": "88df3d097ba8f33a",
    "attention_row-5": "c9cf4640e4d92e67",
    "teacher_forcing-5": "6755366580c4411a",
    "step_comparison-5": "28e98b206cb655ad",
    "attention_heatmap-20": "c4dd70207df15692",
    "attention_heatmap-per-figure-20": "bdd4bb363987632e",
    "heads_grid-20": "c7adcf7351ae179b",
    "layer_heads-20": "760deed551fac490",
    "focus_rows-20": "b17178d9167b8b8f",
    "matrix_heatmap-20": "ee3c77d8abbd8ee6",
    "mask_heatmap-20": "b6fe55232eb74036",
    "padding_mask-20": "0796a8d585b8c718",
    "scores_mask_softmax-20": "1df9d3007ce20dc2",
    "positional-20": "56a8d2c663b5ad89",
    "learned-20": "876a3541a89616ef",
    "embedding_sum-20": "5343114b54340af1",
    "walkthrough-20": "7c0b9aee2fb0c82a",
    "steps_overview-20": "f973ea8d67ef5b4a",
    "attention_row-20": "1ead3b37cc45574f",
    "teacher_forcing-20": "8d5ce1cc8ec0bfa8",
    "step_comparison-20": "54c10bd35542446f",
    "attention_heatmap-45": "10487083b318973e",
    "attention_heatmap-per-figure-45": "f2aa5f2026cde089",
    "heads_grid-45": "f66a1edbbca67462",
    "layer_heads-45": "aa837d4fd82d4a05",
    "focus_rows-45": "4fe16799e47f06bb",
    "matrix_heatmap-45": "b5e76871f7c2662d",
    "mask_heatmap-45": "ad41f72c8dd38342",
    "padding_mask-45": "68b9074c03658049",
    "scores_mask_softmax-45": "f6ca12ae13fbe6ef",
    "positional-45": "f7eb36f5ef384a72",
    "learned-45": "fcd79826d73186ea",
    "embedding_sum-45": "c255a6d9ec82fe8e",
    "walkthrough-45": "2cedddb3ae65c4dc",
    "steps_overview-45": "24cfe48c0e9fcd5a",
    "attention_row-45": "ab9ca502cbfde3be",
    "teacher_forcing-45": "2d417784a9151e6d",
    "step_comparison-45": "16dc6634a692a3ca",
    "attention_heatmap-60": "344aecbf1784e025",
    "attention_heatmap-per-figure-60": "d14b328e983ff88d",
    "heads_grid-60": "450703afc511e621",
    "layer_heads-60": "499cdfc57fb7e573",
    "focus_rows-60": "df54956d4d6d988e",
    "matrix_heatmap-60": "a2957f32072fe580",
    "mask_heatmap-60": "33f87c4fe4e580fc",
    "padding_mask-60": "bfb7dcafdb4c29be",
    "scores_mask_softmax-60": "4f05711703625872",
    "positional-60": "58d420666dff2e1d",
    "learned-60": "0d8a4b28afb22a6d",
    "embedding_sum-60": "cd9867d5b814bffc",
    "walkthrough-60": "08aed9412bac322d",
    "steps_overview-60": "7a52220870af1929",
    "attention_row-60": "ebbb1e8534746a1e",
    "teacher_forcing-60": "24d4d9514a1ee5f2",
    "step_comparison-60": "87f9f7d6961d37d2",
}


def test_figures_up_to_sixty_tokens_are_unchanged():
    changed = [name for name, figure in short_figures(COUNTS) if digest(figure) != BEFORE[name]]
    assert not changed, f"these figures no longer render as before long inputs were handled: {changed}"


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
    figure = attention_heatmap(pattern[0, 0], tokens(250), tokens(250, 3), "head")
    [heatmap] = figure.data
    np.testing.assert_array_equal(z_of(heatmap), pattern[0, 0])        # every token, nothing pooled
    assert list(heatmap.y) == position_labels(tokens(250))
    for axis in (figure.layout.xaxis, figure.layout.yaxis):
        assert axis.tickmode == "auto" and axis.nticks == LONG_AXIS // LABEL_SPACING and axis.dtick is None
    assert figure.layout.height < 1300                                   # not a cell per token (4,000 px)
    assert "250 × 250 tokens" in figure.layout.title.text and "zoom" in figure.layout.title.text


def test_a_head_past_the_cells_budget_is_pooled_and_says_so():
    from explorer.figures.common import MAX_CELLS

    _, _, pattern = inputs(600, layers=1, heads=1)
    figure = attention_heatmap(pattern[0, 0], tokens(600), tokens(600), "head", highlight=300)
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


def test_compare_panels_of_a_long_sentence_are_pooled_with_the_focus_on_its_block():
    _, _, pattern = inputs(250, layers=1, heads=8)
    figure = layer_heads(pattern[0], tokens(250), tokens(250), "h8", focus_row=101, focus_column=37, per_row=3)
    assert len(figure.data) == 8 and "1/4 resolution" in figure.layout.title.text
    for head, heatmap in enumerate(figure.data):
        np.testing.assert_allclose(z_of(heatmap), block_mass(pattern[0, head], 4, 4), rtol=1e-5, atol=1e-7)
    row, column = figure.layout.shapes[:2]
    assert (row.y0, row.y1) == (25 - 0.5, 25 + 0.5) and (column.x0, column.x1) == (9 - 0.5, 9 + 0.5)
    assert figure.layout.height < 1600 and figure.layout.width < 1100


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
    from explorer.figures.windows import WINDOW, window_trace, window_words
    from explorer.capture.trace import Trace

    source, target = tokens(250), tokens(36, 5)
    _, _, encoder = inputs(250, layers=2, heads=2)
    rng = np.random.default_rng(1)
    cross = rng.random((2, 2, 36, 250))
    trace = Trace(text="t", output_text="o", source_ids=list(range(250)), target_ids=list(range(36)),
                  source_tokens=source, target_tokens=target, output_tokens=target[1:], truncated=False,
                  decoding="greedy", pruned="", d_k=4,
                  attention={"encoder": {"pattern": encoder}, "cross": {"pattern": cross}},
                  masks={}, positional={}, embeddings={}, inputs={})
    shown = window_trace(trace, 100)
    assert shown.source_tokens == source[100:100 + WINDOW] and shown.target_tokens == target   # the short side whole
    np.testing.assert_array_equal(shown.pattern("encoder"), encoder[:, :, 100:140, 100:140])
    np.testing.assert_array_equal(shown.pattern("cross"), cross[:, :, :, 100:140])
    assert window_trace(trace, 245).source_tokens == source[-WINDOW:]    # moved back to fit
    assert window_words(trace, 100) == "source tokens 100–139 of 250"
    assert window_words(window_trace(trace, 0), 0) == ""                  # a short trace needs no window


def test_long_token_bars_take_the_columns_width_with_thinned_labels():
    for figure in (attention_row_figure(np.linspace(0, 1, 250), tokens(250), "row"), steps_overview(steps_of(250))):
        assert figure.layout.width is None and figure.layout.xaxis.tickmode == "auto"
        assert figure.layout.height < 700 and "zoom in" in figure.layout.title.text
        assert len(figure.data[0].x) == 250                                # every bar is drawn


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


def test_the_pages_on_a_250_token_text(h8):
    """The bundled model on Multi30k captions joined to 250 tokens: each page's figures are the model's numbers,
    every token drawn or pooled as its title says, bertviz on a window, in bounded figures."""
    import json

    from benchmarks.long_inputs import text_of
    from explorer.capture.trace import trace_sentence
    from tests.app.conftest import open_page, open_part

    text = text_of(h8, 250)
    trace = trace_sentence(h8, text)
    assert len(trace.source_tokens) == 250
    specs = lambda at: [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]  # noqa: E731

    at = open_page("attention.py", text)
    window, whole, grid = specs(at)[:3]     # then the word-focus grid (pages/components/word_focus_section.py)
    size = len(window["data"][0]["x"])      # the focus window: the first tokens, every one labelled
    assert 16 <= size <= 30 and window["layout"]["width"] <= 560
    np.testing.assert_allclose(decoded(window["data"][0]["z"]), trace.pattern("encoder")[0, 0, :size, :size], atol=1e-6)
    assert f"tokens 0–{size - 1} of 250" in window["layout"]["title"]["text"]
    np.testing.assert_allclose(decoded(whole["data"][0]["z"]), trace.pattern("encoder")[0, 0], atol=1e-6)
    assert "250 × 250" in whole["layout"]["title"]["text"] and whole["layout"]["height"] < 600
    assert "1/5 resolution" in grid["layout"]["title"]["text"]
    tile = decoded(grid["data"][0]["z"])[:50, :50]                      # layer 0, head 0: the top-left tile
    np.testing.assert_allclose(tile, block_mass(trace.pattern("encoder")[0, 0], 5, 5), rtol=1e-4, atol=1e-6)
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
    sizes = [len(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert len(sizes) == 2 and sum(sizes) < 2_000_000          # the focus token's strips, every head's pooled tiles
    strips, tiles = specs(at)
    assert len(strips["data"]) == 3 and len(strips["data"][0]["y"]) == 250         # every token labelled
    assert len(tiles["data"]) == 8 + 2 + 1 and "resolution" in tiles["layout"]["title"]["text"]
