"""Streamlit AppTest of every page: no exception, the expected widgets, and numbers that are the explorer's own."""

import base64
import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.analyses.corpus.roles import role_summary
from explorer.analyses.sentence.rollout import attention_rollout
from explorer.capture.trace import trace_sentence
from explorer.capture.translation import translate
from explorer.models.checkpoint import load_checkpoint
from explorer.pages.components.session import BUNDLED, IMAGE_MODEL
from tests.app.conftest import PAGES, html_figure, open_page, open_part, prune_on_page, pruned_on_page, token_heatmaps
from tests.conftest import ROOT, SHIPPED
from tests.explorer.test_focus_window import strip_cells
from tests.explorer.test_padding_mask import mask_cells
from tests.explorer.test_thumbnails import assert_drawn, tiles
from tests.explorer.test_token_bars import bar_labels, bar_values
from tests.explorer.test_token_heatmap import heatmap_cells
from tests.explorer.test_word_focus import grid_cells

SENTENCE = "Two dogs play in the snow."
HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def decoded(value):
    """Plotly 7 sends numpy arrays as {"dtype", "bdata" (base64), "shape"}; lists stay lists."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = [int(n) for n in str(value.get("shape", len(array))).split(",")]
        return array.reshape(shape)
    if isinstance(value, list):
        return np.array([decoded(v) if isinstance(v, (dict, list)) else v for v in value], dtype=object)
    return value


def traces_of(spec: dict) -> list[dict]:
    return [{key: decoded(value) for key, value in trace.items()} for trace in spec["data"]]


def chart_data(at, index: int) -> list[dict]:
    return traces_of(json.loads(at.get("plotly_chart")[index].proto.spec))


def table_with(at, column: str):
    """The one dataframe shown with this column."""
    found = [frame.value for frame in at.dataframe if column in frame.value.columns]
    assert len(found) == 1
    return found[0]


def chart_titled(at, words: str) -> list[dict]:
    """The data of the one chart whose title contains words."""
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    found = [traces_of(spec) for spec in specs if words in spec["layout"].get("title", {}).get("text", "")]
    assert len(found) == 1, [spec["layout"].get("title", {}).get("text") for spec in specs]
    return found[0]


def test_translation_page(h8):
    at = open_page(PAGES[0], SENTENCE)
    assert at.text[0].value == translate(h8, [SENTENCE])[0]
    assert at.sidebar.selectbox(key="model").value == "8 heads (en-de-h8)"
    assert len(at.sidebar.selectbox(key="example").options) >= 5


def test_all_caps_input_is_fed_in_sentence_case_and_the_page_says_so(h8):
    at = open_page(PAGES[0], "TWO DOGS PLAY IN THE SNOW.")
    assert at.text[0].value == translate(h8, [SENTENCE])[0]
    assert any("“TWO DOGS PLAY IN THE SNOW.”" in i.value and f"“{SENTENCE}”" in i.value for i in at.info)
    at = open_page(PAGES[0], "TWO DOGS PLAY IN THE SNOW.", fix_casing=False)
    assert at.text[0].value == translate(h8, ["TWO DOGS PLAY IN THE SNOW."], fix_casing=False)[0]
    assert not any("sentence case" in i.value for i in at.info)
    assert at.query_params["casing"] == "as-typed"                     # a shared link keeps the choice
    link = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    link.query_params.update({"sentence": "TWO DOGS PLAY IN THE SNOW.", "casing": "as-typed"})
    link.run()
    assert not link.exception and link.sidebar.checkbox(key="fix_casing").value is False
    assert link.text[0].value == at.text[0].value


def grid_tile(at, layer: int, head: int) -> np.ndarray:
    """One head's tile of the Attention page's every-head grid, decoded: [queries, keys, 3] RGB."""
    grid = html_figure(at, "every-head")
    [tile] = [tile for tile in tiles(grid) if tile["hover"].split(" (")[0].endswith(f"layer {layer}, head {head}")]
    return tile["pixels"]


def test_attention_page_draws_the_explorers_numbers(h8):
    at = open_page(PAGES[1], SENTENCE)
    trace = trace_sentence(h8, SENTENCE)
    pattern = trace.pattern("encoder")
    np.testing.assert_allclose(heatmap_cells(token_heatmaps(at)[0])["weights"], pattern[0, 0], atol=1e-5)
    # The "Every head" tab is open first: a tile a head, layer by layer (explorer/figures/thumbnails.py), each
    # decoded and checked cell by cell against the colour of the explorer's own weight.
    grid = html_figure(at, "every-head")
    shown = tiles(grid)
    assert [tile["hover"] for tile in shown] == [f"encoder layer {layer}, head {h}" for layer in range(3) for h in range(8)]
    for index, tile in enumerate(shown):
        assert_drawn(tile["pixels"], pattern[index // 8, index % 8])
    # the other tabs run only when opened; under them the word-focus grid, a table (pages/components/word_focus_section.py)
    # No plotly figure on the page's first view (a cold link loads no plotly.js: explorer/figures/token_heatmap.py)
    assert at.get("iframe") == [] and at.get("plotly_chart") == [] and len(token_heatmaps(at)) == 1
    assert [block for block in at.get("html") if "word-focus-grid" in block.proto.body]
    assert len(at.get("download_button")) >= 4

    at.session_state["attention_view"] = "Head average"
    at.run()
    [average] = token_heatmaps(at, "average of the 8 heads")
    np.testing.assert_allclose(heatmap_cells(average)["weights"], pattern[0].mean(axis=0), atol=1e-5)
    at.session_state["attention_view"] = "Rollout & flow"
    at.run()
    [rollout] = token_heatmaps(at, "Encoder rollout")
    np.testing.assert_allclose(heatmap_cells(rollout)["weights"], attention_rollout(pattern)[-1], atol=1e-5)
    for view in ("bertviz head view", "bertviz model view"):
        at.session_state["attention_view"] = view
        at.run()
        assert not at.exception
        assert len(at.get("iframe")) == 1 and at.get("plotly_chart") == []          # the word-focus grid: a table

    at.session_state["attention_view"] = "Rollout & flow"
    at.radio(key="attention_kind").set_value("cross").run()
    at.selectbox(key="attention_layer").select(2).run()
    at.selectbox(key="attention_head").select(7).run()
    assert not at.exception
    np.testing.assert_allclose(heatmap_cells(token_heatmaps(at)[0])["weights"], trace.pattern("cross")[2, 7], atol=1e-5)
    assert len(token_heatmaps(at)) == 1 and "encoder" in at.info[0].value  # rollout: the encoder only


@pytest.mark.slow
def test_internals_page(h8):
    at = open_part(open_page(PAGES[2], SENTENCE), "Scores → softmax")
    trace = trace_sentence(h8, SENTENCE)
    # Default: encoder self-attention, as on the Attention page, its kinds in the same order. Its mask hides
    # nothing: no blank "+ mask" panel (nor a copy of the scores), the words say so; softmax is the pattern.
    assert at.radio(key="internals_kind").options == ["Encoder self-attention", "Decoder self-attention (masked)",
                                                       "Encoder–decoder cross-attention"]
    assert at.radio(key="internals_kind").value == "encoder"
    panels = chart_titled(at, "the model's real numbers")
    assert len(panels) == 2
    np.testing.assert_allclose(np.array(panels[1]["z"], dtype=float), trace.pattern("encoder")[0, 0], atol=1e-6)
    assert any(c.value.startswith("Left to right") and "here: every key is visible" in c.value for c in at.caption)
    # The decoder's look-ahead mask: four panels, the pattern the fourth.
    at.radio(key="internals_kind").set_value("decoder").run()
    panels = chart_titled(at, "the model's real numbers")
    assert len(panels) == 4
    np.testing.assert_allclose(np.array(panels[3]["z"], dtype=float), trace.pattern("decoder")[0, 0], atol=1e-6)
    masked = np.array(panels[2]["z"], dtype=float)
    assert np.isnan(masked[np.triu_indices(len(masked), 1)]).all()  # −∞ above the diagonal, drawn blank
    assert panels[1]["text"][0][-1] == "−∞"
    # The Masks tab picks only the kind (a mask is the same for every layer and head); the decoder's is drawn.
    open_part(at, "Masks")
    assert "internals_layer" not in [box.key for box in at.selectbox]
    assert chart_titled(at, "decoder mask")
    padding, pieces, _ = mask_cells(html_figure(at, "padding-mask"))      # HTML: no plotly.js on the first view
    assert padding[1].all() and not padding[0].all()  # the shorter sentence's pads are masked
    assert pieces[0][: len(trace.source_tokens)] == trace.source_tokens
    assert padding[0, : len(trace.source_tokens)].all() and not padding[0, len(trace.source_tokens):].any()
    # The encoder's mask, all ones, is said in words, not drawn as one flat square.
    at.radio(key="internals_kind").set_value("encoder").run()
    assert [a.value for a in at.info if a.value.startswith("No mask here: every key is visible.")]
    assert not [c for c in at.get("plotly_chart") if "encoder mask" in json.loads(c.proto.spec)["layout"]["title"]["text"]]
    # Positions has no attention, layer or head pickers: they would do nothing there.
    open_part(at, "Positions")
    assert {"internals_kind", "internals_layer", "internals_head"}.isdisjoint(w.key for w in [*at.radio, *at.selectbox])
    open_part(at, "Q, K, V walkthrough")
    at.radio(key="internals_kind").set_value("decoder").run()
    at.selectbox(key="internals_query").select(3).run()
    assert not at.exception
    walkthrough = chart_titled(at, "scores over the keys")
    np.testing.assert_allclose(walkthrough[2]["x"], trace.pattern("decoder")[0, 0, 3], atol=1e-6)


def test_decoding_page(h8):
    at = open_page(PAGES[3], SENTENCE)
    trace = trace_sentence(h8, SENTENCE)
    [top] = [block.proto.body for block in at.get("html") if "step 0: chose" in block.proto.body]
    assert [float(p) for p in re.findall(r'title="[^"]*: p = ([^"]+)"', top)] == pytest.approx(trace.steps[0].top_probs,
                                                                                              rel=1e-3)
    assert not at.table         # only the open tab is drawn: the beam search's table is on its own tab
    # Every step and where step 0 looked: HTML bars (no plotly.js on a cold link), the model's own numbers
    assert at.get("plotly_chart") == []
    steps = bar_values(html_figure(at, "decoding-steps"))
    assert steps["p(chosen)"] == pytest.approx([s.chosen_prob for s in trace.steps], rel=1e-5)
    assert steps["entropy (nats)"] == pytest.approx([s.entropy for s in trace.steps], rel=1e-5)
    looked = html_figure(at, "step-attention")
    last = h8.layers("decoder") - 1                 # the last cross-attention layer, its heads' average
    expected = trace.pattern("cross")[last, :, 0].mean(axis=0)
    assert bar_values(looked)["weight"] == pytest.approx(list(expected), rel=1e-4, abs=1e-7)
    assert bar_labels(looked) == [f"{i} {token}" for i, token in enumerate(trace.source_tokens)]
    # The finished hypotheses are the beam search's own, best first.
    from explorer.capture.decoding_steps import beam_tree

    [finished] = [t.value for t in open_part(at, "Beam search", "decoding_part").table]
    result = beam_tree(h8, SENTENCE, 5, 0.6)
    assert list(finished["translation"]) == [h8.tokenizer.decode(h.tokens) for h in result.finished]
    open_part(at, "Teacher forcing", "decoding_part")
    at.text_input(key="decoding_reference").input("Zwei Hunde spielen im Schnee.").run()
    assert not at.exception
    assert "nats" in at.metric[0].value


@pytest.mark.parametrize("page", PAGES + ["prune.py", "compare.py"])
@pytest.mark.parametrize("text, message", [("   ", "Please type a sentence"), ("A dog runs. " * 416, "cut to its first")])
def test_empty_and_huge_input_give_a_message_on_every_page(page, text, message):
    at = open_page(page, text)
    shown = [m.value for m in list(at.info) + list(at.warning)]
    assert any(message in value for value in shown), shown


def strings_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in strings_in(item)]


def drawn_text(at) -> tuple[list[str], list[str]]:
    """What a page drew as text: (what the browser reads as HTML: st.html, markdown let through as HTML, and every
    string of a plotly figure, whose labels and titles plotly reads as a subset of HTML; what it reads as Markdown:
    the other markdown, captions and alerts, where a backslash escapes a character)."""
    as_html, as_markdown = [], []
    pending = [at._tree]
    while pending:
        node = pending.pop()
        children = getattr(node, "children", None)
        pending += list(children.values()) if isinstance(children, dict) else []
        proto = getattr(node, "proto", None)
        if node.type == "plotly_chart":
            as_html += strings_in(json.loads(proto.spec))
        elif node.type == "html":
            as_html.append(proto.body)
        elif node.type in ("markdown", "caption", "info", "warning", "error", "success"):
            (as_html if getattr(proto, "allow_html", False) else as_markdown).append(proto.body)
    return as_html, as_markdown


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES + ["prune.py", "compare.py", "lesson.py"])
def test_hostile_and_odd_text_on_every_page(page):
    """The typed markup is drawn as text wherever the page draws the sentence or its pieces: never raw, escaped
    (&lt; in HTML and figures, \\< in Markdown); the pieces' own special-token labels (<unk>, </s>) likewise."""
    at = open_page(page, HOSTILE + " 😀 一只狗 \u202e")
    assert not at.error
    as_html, as_markdown = drawn_text(at)
    raw = re.compile(r"(?<!\\)(<script>alert|</script><script>|<img src=x)|onerror=alert\(2\)>")    # the text's tags
    assert not [text for text in as_html + as_markdown if raw.search(text)]
    assert not [text for text in as_html if re.search(r"<(unk|/?s|pad)>", text)]
    assert not [text for text in as_html if "&amp;lt;" in text or "&amp;gt;" in text]    # escaped once, not twice
    # Every page says which of the typed characters the vocabulary lacks, quoting them escaped (the other pages
    # draw the pieces too, escaped).
    escaped = [text for text in as_html if "&lt;" in text] + [text for text in as_markdown if "\\<" in text]
    assert escaped, page


@pytest.mark.parametrize("page", PAGES + ["prune.py"])
@pytest.mark.parametrize("label", [label for label, path in BUNDLED.items()
                                   if (path / "config.json").is_file() and label != IMAGE_MODEL])
def test_every_page_runs_on_every_bundled_model(page, label):
    at = open_page(page, SENTENCE, model=label)
    assert not at.error
    heads = load_checkpoint(BUNDLED[label]).model.config.heads
    if page == "attention.py":
        grid = html_figure(at, "every-head")
        assert [tile["name"] for tile in tiles(grid)] == [f"head {h}" for h in range(heads)] * 3
    if page == "prune.py":
        assert [len(row.options) for row in at.main.pills] == [heads] * 3 * 3        # a row of buttons a layer


@pytest.mark.parametrize("page", PAGES + ["prune.py", "compare.py", "faithfulness.py", "patching.py"])
def test_a_page_about_sentences_sends_an_image_model_to_the_images_page(page):
    at = open_page(page, SENTENCE, model=IMAGE_MODEL)
    assert not at.error and any("reads images, not sentences" in info.value for info in at.info)


def test_a_broken_checkpoint_path_gives_a_message(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    at = open_page(PAGES[1], SENTENCE, model="Your own checkpoint folder…", own_model=str(tmp_path))
    assert "cannot be loaded" in at.error[0].value and "architecture" in at.error[0].value


def test_heads_page_shows_shipped_roles_and_reclassifies(h8):
    at = open_page("heads.py", SENTENCE)
    shipped = json.loads((h8.path / "head_roles.json").read_text())
    table = table_with(at, "roles")
    assert len(table) == 3 * 3 * 8
    assert table["roles"].tolist() == [", ".join(h["roles"]) for h in shipped["heads"]]
    maps = [block.proto.body for block in at.get("html") if 'class="role-map"' in block.proto.body]
    assert [title in found for title, found in zip(("Encoder self-attention", "Decoder self-attention",
                                                   "cross-attention"), maps)] == [True] * 3
    assert all(sorted(grid_cells(found)) == [(layer, head) for layer in range(3) for head in range(8)] for found in maps)
    rare_before = sum("rare-token" in r for r in table["roles"])
    at.number_input(key="threshold_rare_rate").set_value(0.1).run()
    assert not at.exception
    assert sum("rare-token" in r for r in table_with(at, "roles")["roles"]) > rare_before
    assert not token_heatmaps(at, "on the current sentence")   # its own tab
    open_part(at, "One head", "heads_part")
    at.selectbox(key="heads_head").select("enc.0.0").run()
    assert not at.exception and token_heatmaps(at, "enc.0.0 on the current sentence")


@pytest.mark.slow
def test_compare_page_draws_every_head_of_every_model():
    at = open_page("compare.py", SENTENCE)
    if len(SHIPPED) < 2:
        assert "at least two of the bundled models" in at.info[0].value
        return
    models = {heads: load_checkpoint(path) for heads, path in SHIPPED.items()}
    shown = [t.value for t in at.text]
    for checkpoint in models.values():
        assert translate(checkpoint, [SENTENCE])[0] in shown
    grids = [chart_data(at, i) for i in range(len(models))]
    assert sorted(len(g) for g in grids) == sorted(models)  # one heatmap per head: 1, 2, 8
    h8_grid = next(g for g in grids if len(g) == 8)
    expected = trace_sentence(models[8], SENTENCE).pattern("encoder")[0, 6]
    np.testing.assert_allclose(np.array(h8_grid[6]["z"], dtype=float), expected, atol=1e-6)
    # The focus token's row (token 0 by default) in every head of every model, a column a head, above the panels.
    strips = html_figure(at, "focus-strips")
    cells = strip_cells(strips)
    for heads, checkpoint in models.items():
        expected = trace_sentence(checkpoint, SENTENCE).pattern("encoder")[0, :, 0]
        shown = [[float(cells[f"en-de-h{heads}", head, key]["hover"].rsplit(" ", 1)[1]) for key in range(expected.shape[1])]
                 for head in range(heads)]
        np.testing.assert_allclose(shown, expected, atol=5e-4)          # the hover's three decimals
    [summaries] = [t.value for t in at.table]                 # one column per model, one row per measure
    for heads, checkpoint in models.items():
        column = summaries[next(c for c in summaries.columns if checkpoint.name in c)]
        expected = role_summary(json.loads((checkpoint.path / "head_roles.json").read_text())["heads"])
        assert column["heads"] == str(3 * 3 * heads)
        assert (column["positional"], column["most positional"]) == (str(expected["positional"]),
                                                                      str(expected["most positional"]))


@pytest.mark.slow
def test_compare_every_head_tiles_are_each_sessions_own():
    """A long sentence's tiles of every head of every model: a session in projector mode gets them at the
    projector's width and type, and the next ordinary session the ordinary ones (nothing kept across sessions)."""
    from explorer.figures.common import NARROW_WIDTH, PROJECTOR_COLUMN
    from scripts.screenshots import SENTENCES

    def overview(at) -> str:
        body = html_figure(at, "every-head-of-every-model")
        return body

    plain, projector, plain_again = (overview(open_page("compare.py", SENTENCES[45], **state))
                                     for state in ({}, {"projector": True}, {}))
    widths = [int(re.search(r"display: block; width: (\d+)px", body).group(1)) for body in (plain, projector, plain_again)]
    assert widths == [NARROW_WIDTH, PROJECTOR_COLUMN, NARROW_WIDTH]
    names = [int(re.search(r'<td class="tile".*?font-size: (\d+)px', body, re.S).group(1)) for body in (projector, plain_again)]
    assert names[0] > names[1]
    assert len(tiles(plain)) == 8 + 2 + 1 and plain == plain_again


@pytest.mark.slow
def test_prune_page_toggle_changes_the_translation(h8):
    from explorer.capture.head_sets import parse_heads

    at = open_page("prune.py", SENTENCE)
    assert [len(row.options) for row in at.main.pills] == [8] * 9 and pruned_on_page(at) == set()
    unpruned = translate(h8, [SENTENCE])[0]
    # Nothing pruned: no comparison of the model with itself, but what to do
    assert not at.text and any(i.value.startswith("No head is pruned yet") for i in at.info)
    assert "prune_corpus" not in [r.key for r in at.radio]
    prune_on_page(at, "en-de-h8", "cross.2.0")
    for spec in ("cross.2.1", "cross.2.2", "cross.2.3", "cross.1.0", "cross.1.1"):
        prune_on_page(at, "en-de-h8", spec)
    assert not at.exception
    pruned = translate(h8, [SENTENCE], pruned=parse_heads("cross.2.0,cross.2.1,cross.2.2,cross.2.3,cross.1.0,cross.1.1",
                                                             h8.model.config))[0]
    assert [t.value for t in at.text][:2] == [unpruned, pruned]
    # Each step of the unpruned output, HTML bars: its probability as the unpruned trace gave it, the pruned model's
    bars = html_figure(at, "prune-steps")
    steps = trace_sentence(h8, SENTENCE).steps
    assert bar_labels(bars) == [f"{i} {step.chosen}" for i, step in enumerate(steps)]
    drawn = bar_values(bars)
    assert drawn["unpruned"] == pytest.approx([step.chosen_prob for step in steps], rel=1e-4)
    assert drawn["pruned"] != pytest.approx(drawn["unpruned"], rel=1e-3) and min(drawn["KL (nats)"]) >= 0
    assert max(drawn["KL (nats)"]) > 0
    # "Add the 18 least important" adds the shipped importance's 25% least important to the 6 picked heads (said
    # with its counts before the click); it never drops a picked head.
    from explorer.analyses.corpus.pruning import DEFAULT_NORMALISATION, importance_scores, least_important
    from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, shipped
    from explorer.capture.head_sets import all_heads
    from explorer.models.loader import open_model

    model = open_model(str(BUNDLED["8 heads (en-de-h8)"]))
    least = set(least_important(importance_scores(shipped(model, IMPORTANCE_FILE), DEFAULT_NORMALISATION), 0.25,
                                all_heads(model)))
    picked = pruned_on_page(at)
    expected = picked | {str(spec) for spec in least}
    assert at.button(key="prune_least").label == "Add the 18 least important" and len(least) == 18
    assert any(f"keeps your 6 picked and adds {len(expected) - 6} ({len(expected)} pruned after)" in c.value
               for c in at.caption)
    at.button(key="prune_least").click().run()
    assert pruned_on_page(at) == expected
    at.button(key="prune_none").click().run()
    assert pruned_on_page(at) == set() and not at.text
    assert any(i.value.startswith("No head is pruned yet") for i in at.info)


@pytest.mark.slow
def test_pruning_is_per_session(h8):
    first = open_page("prune.py", SENTENCE)
    second = open_page("prune.py", SENTENCE)
    prune_on_page(first, "en-de-h8", "enc.0.0")
    second.run()
    assert pruned_on_page(second) == set() and pruned_on_page(first) == {"enc.0.0"}


@pytest.mark.slow
def test_keep_only_heads_with_a_role_uses_the_thresholds_and_never_prunes_everything(h8):
    from dataclasses import asdict

    from explorer.analyses.corpus.roles import Thresholds

    unreachable = asdict(Thresholds(positional=1.01, syntactic_margin=1.01, rare_rate=1.01))
    at = open_page("prune.py", SENTENCE, role_thresholds=unreachable)
    assert at.button(key="prune_roles").disabled
    assert any("would prune every head" in info.value for info in at.info)

    everything_positional = asdict(Thresholds(positional=0.0))   # every self-attention head has some top offset
    at = open_page("prune.py", SENTENCE, role_thresholds=everything_positional)
    assert not at.button(key="prune_roles").disabled
    at.button(key="prune_roles").click().run()
    pruned = pruned_on_page(at)
    # Cross-attention heads cannot be positional; with no rare-token or syntactic role at these thresholds
    # they are the ones pruned, unless one has a role of another kind.
    roles = json.loads((h8.path / "head_roles.json").read_text())
    from explorer.analyses.corpus.roles import reclassified

    expected = {h.spec for h in reclassified(roles, Thresholds(positional=0.0)) if not h.roles}
    assert pruned == expected and all(spec.startswith("cross.") for spec in pruned)


@pytest.mark.slow
def test_prune_page_scores_a_corpus_only_when_asked(h8):
    from explorer.capture.head_sets import parse_heads
    from explorer.capture.translation import bleu, translate
    from explorer.models.data import read_parallel
    from tests.conftest import MULTI30K

    at = open_page("prune.py", SENTENCE)
    prune_on_page(at, "en-de-h8", "cross.2.0")
    at.radio(key="prune_corpus").set_value("BLEU against references").run()
    at.number_input(key="prune_limit").set_value(10).run()
    assert not [m for m in at.metric if "first 10 pairs" in m.label]       # nothing translated yet
    at.button(key="prune_score").click().run()
    sources, references = read_parallel(MULTI30K / "val.en.gz", MULTI30K / "val.de.gz")
    whole = bleu(translate(h8, sources[:10], fix_casing=False), references[:10])
    pruned = bleu(translate(h8, sources[:10], fix_casing=False, pruned=parse_heads("cross.2.0", h8.model.config)),
                  references[:10])
    shown = [m for m in at.metric if "first 10 pairs" in m.label]
    assert len(shown) == 1 and shown[0].value == f"{pruned:.2f}" and shown[0].delta == f"{pruned - whole:+.2f} vs unpruned"
    prune_on_page(at, "en-de-h8", "cross.2.1")
    assert any("score again" in c.value for c in at.caption)


def test_the_curves_settings_are_drawn_only_while_open(h8):
    at = open_page("prune.py", SENTENCE)
    assert [e.label for e in at.expander if e.label == "Compute the curve on your own corpus"]
    assert not [box for box in at.number_input if box.key == "curve_steps"]
    # The shipped curve is drawn when its own box is opened (no plotly.js on the page's first view): its scores are
    # the model's head_pruning_curve.json's.
    assert at.get("plotly_chart") == [] and [e for e in at.expander if e.label.startswith("Show the curve shipped with")]
    at.session_state["prune_curve_shipped"] = True          # as a click on its title does
    at.run()
    shipped = json.loads((h8.path / "head_pruning_curve.json").read_text())["kinds"]["all"]
    drawn = [trace["y"] for trace in chart_titled(at, "Pruning curve") if "least important first" in trace.get("name", "")]
    assert shipped["importance"] in [list(y) for y in drawn]
    at.session_state["prune_curve_compute"] = True          # as a click on its title does
    at.run()
    assert at.number_input(key="curve_steps").value == 10 and at.button(key="FormSubmitter:prune_curve-Compute the curve")


def test_what_the_model_cannot_read_is_said():
    at = open_page("translation.py", "A dog " * 1000 + " 😀")        # 6,000 characters
    warnings = [w.value for w in at.warning]
    assert any("6,002 characters" in w and "first 5,000" in w for w in warnings), warnings
    at = open_page("translation.py", "A dog plays with a 😀 in the 公园.")
    assert any("“😀”" in i.value and "“公园”" in i.value and "“\\<unk\\>”" in i.value for i in at.info)


def test_a_bad_treebank_is_named_in_the_message(tmp_path):
    not_conllu = tmp_path / "mine.conllu"
    not_conllu.write_text("this is not\ta treebank\n\n")
    for given, expected in ((str(tmp_path), "is a folder"), (str(not_conllu), "mine.conllu: not a readable CoNLL-U")):
        at = open_page("heads.py", SENTENCE, heads_recompute=True)
        at.text_input(key="heads_treebank_path").set_value(given).run()
        at.button(key="heads_compute_roles").click().run()
        errors = [e.value for e in at.error]
        assert any(expected in e for e in errors) and not any("/tmp/tmp" in e for e in errors), errors


def test_every_figure_saves_an_svg_at_its_own_size(h8):
    at = open_part(open_page("internals.py", SENTENCE), "Scores → softmax")
    charts = at.get("plotly_chart")
    assert charts
    for chart in charts:
        options = json.loads(chart.proto.config)["toImageButtonOptions"]
        height = json.loads(chart.proto.spec)["layout"].get("height", 450)
        assert options["format"] == "svg" and options["height"] == height and options["width"] >= 700


@pytest.mark.slow
def test_the_url_holds_the_view_and_a_link_restores_it(h8):
    from streamlit.testing.v1 import AppTest

    from explorer.capture.head_sets import parse_heads
    from tests.conftest import ROOT

    at = open_page("translation.py", "A cat sleeps.", model="2 heads (en-de-h2)")
    assert at.query_params["sentence"] == "A cat sleeps." and at.query_params["model"] == "h2"
    assert "beam" not in at.query_params

    link = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    link.query_params.update({"model": "h8", "sentence": "Two dogs run.", "beam": "4", "pruned": "cross.2.*"})
    link.run()
    link.switch_page("prune.py").run()
    assert not link.exception
    assert [t.value for t in link.text][0] == translate(h8, ["Two dogs run."], beam_size=4)[0]
    assert pruned_on_page(link) == {f"cross.2.{h}" for h in range(8)}
    pruned = translate(h8, ["Two dogs run."], beam_size=4, pruned=parse_heads("cross.2.*", h8.model.config))
    assert [t.value for t in link.text][1] == pruned[0]
    assert link.query_params["pruned"] == "cross.2.0,cross.2.1,cross.2.2,cross.2.3,cross.2.4,cross.2.5,cross.2.6,cross.2.7"

    bad = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    bad.query_params.update({"pruned": "enc.9.9"})
    bad.run()
    bad.switch_page("prune.py").run()
    assert not bad.exception and any("enc.9.9" in w.value for w in bad.warning)


@pytest.mark.slow
def test_the_sidebar_says_what_the_model_knows_and_far_sentences_get_a_notice(tmp_path):
    at = open_page("translation.py", "The quarterly earnings report exceeded analysts' expectations.")
    assert any("29,000 Multi30k image captions" in c.value for c in at.sidebar.caption)
    notices = [i.value for i in at.info if "far from what the model was trained on" in i.value]
    assert len(notices) == 1 and "“quarterly”" in notices[0]
    at = open_page("translation.py", "Two dogs play in the snow.")
    assert not [i for i in at.info if "far from what the model" in i.value]
    # German typed into an English→German model: said plainly, instead of "far from the training data"
    at = open_page("translation.py", "Zwei Hunde spielen im Schnee.")
    said = [i.value for i in at.info]
    assert any(text.startswith("This looks like German, the language the model writes; it reads English.")
               for text in said) and not any("far from what the model" in text for text in said)
    # Right-to-left words keep the notice's own quotes and commas in place (isolated, U+2068 … U+2069)
    at = open_page("translation.py", "A man says שלום עולם to a dog.")
    assert any("no piece for “\u2068שלום\u2069”, “\u2068עולם\u2069”: it reads" in i.value for i in at.info)

    import shutil

    own = tmp_path / "own"
    shutil.copytree(BUNDLED["8 heads (en-de-h8)"], own)
    (own / "token_frequencies.json").unlink()              # a checkpoint without frequencies: no notice, no error
    info = json.loads((own / "config.json").read_text())
    info.pop("data")
    (own / "config.json").write_text(json.dumps(info))
    at = open_page("translation.py", "The quarterly earnings report exceeded analysts' expectations.",
                   model="Your own checkpoint folder…", own_model=str(own))
    assert not at.error and not [i for i in at.info if "far from what the model" in i.value]
    assert not any("Multi30k" in c.value for c in at.sidebar.caption)


@pytest.mark.slow
def test_heads_page_draws_how_every_head_formed_from_the_shipped_evolution(h8):
    at = open_page("heads.py", SENTENCE, heads_part="During training")
    evolution = json.loads((h8.path / "head_evolution.json").read_text())
    lines = {t["name"]: t for t in chart_titled(at, "How the heads formed during training") if t.get("name")}
    for head in evolution["heads"]:
        if head["kind"] == "cross":        # no positional share for cross-attention: no line in this view
            assert head["spec"] not in lines
            continue
        np.testing.assert_allclose(np.array(lines[head["spec"]]["y"], dtype=float), head["share"])
        assert list(lines[head["spec"]]["x"]) == evolution["epochs"]
    at.radio(key="heads_evolution_measure").set_value("confidence (mean largest weight)").run()
    lines = {t["name"]: t for t in chart_titled(at, "confidence") if t.get("name", "").startswith("cross.")}
    assert len(lines) == 3 * 8                     # every cross-attention head has a confidence line


def test_counts_are_worded_for_one_head():
    """The 1-head model: "1 head", never "1 heads" (titles, captions)."""
    at = open_page("translation.py", SENTENCE, model="1 head (en-de-h1)")
    caption = " ".join(c.value for c in at.caption)
    assert "1 head × 3 encoder" in caption and "1 heads" not in caption
    at.switch_page("attention.py").run()
    at.session_state["attention_view"] = "Head average"
    at.run()
    titles = [re.search(r"font-weight: 600\">([^<]*)<", body).group(1) for body in token_heatmaps(at)]
    assert any("average of the 1 head" in t for t in titles) and not any("1 heads" in t for t in titles)


def test_the_sentence_is_one_line():
    at = open_page("translation.py", "A dog runs\non the beach.")
    at.text_area(key="sentence").input("A dog runs\non the\r\nbeach.").run()
    assert at.session_state["sentence"] == "A dog runs on the beach."
    assert at.query_params["sentence"] in ("A dog runs on the beach.", ["A dog runs on the beach."])


@pytest.mark.slow
def test_attention_page_draws_norms_when_asked_and_says_what_frequent_tokens_get(h8):
    from explorer.analyses.sentence.norms import weight_and_norm_shares

    sentence = "A man in a blue shirt, with a dog, is riding a bicycle down the street."
    at = open_page(PAGES[1], sentence)
    at.radio(key="attention_values").set_value("norm").run()
    assert not at.exception
    trace = trace_sentence(h8, sentence)
    norm = trace.attention["encoder"].value("norm")
    np.testing.assert_allclose(heatmap_cells(token_heatmaps(at)[0])["weights"], norm[0, 0], rtol=1e-5, atol=1e-6)
    assert_drawn(grid_tile(at, 2, 5), norm[2, 5], 0.0, float(norm.max()))      # norms: 0 to the largest
    by_weight, by_norm, _ = weight_and_norm_shares(h8, trace, "encoder")
    assert any(f"get {by_weight:.0%} of this kind's attention by weight and {by_norm:.0%} by norm" in c.value
               and "</s>" in c.value for c in at.caption)          # the special token is named
    assert at.query_params["values"] in ("norm", ["norm"])
    at.session_state["attention_view"] = "bertviz head view"        # bertviz draws each row's norms as shares of 1
    at.run()
    assert not at.exception and len(at.get("iframe")) == 1
    assert any("Norms ‖α·f(x)‖ in bertviz" in c.value for c in at.caption)


@pytest.mark.slow
def test_compare_shows_each_models_norms_when_asked():
    from explorer.models.loader import open_model

    at = open_page("compare.py", SENTENCE)
    at.radio(key="compare_values").set_value("norm").run()
    assert not at.exception
    strips = html_figure(at, "focus-strips")
    cells = strip_cells(strips)               # the focus token's norms in every head of every model
    for name in ("h8", "h2", "h1"):
        expected = trace_sentence(open_model(str(ROOT / "models" / f"en-de-{name}")), SENTENCE).attention["encoder"].value(
            "norm")[0, :, 0]
        shown = [[cells[f"en-de-{name}", head, key]["hover"].rsplit("\n", 1)[1] for key in range(expected.shape[1])]
                 for head in range(expected.shape[0])]
        assert all(text.startswith("‖α·f(x)‖ ") for row in shown for text in row)
        np.testing.assert_allclose([[float(text.split()[1]) for text in row] for row in shown], expected, atol=5e-4)
    assert at.query_params["values"] in ("norm", ["norm"])
