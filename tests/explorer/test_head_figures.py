"""The Heads page's map and table: what colours the map, short cell texts at a readable size, importance in
significant digits, and the page reading its corpora from paths (AppTest for the page itself)."""

import html
import json
import re
from dataclasses import replace

import numpy as np
import pytest

from explorer.analyses.corpus.head_table import MEASURE_HEADERS, head_table, shown_columns
from explorer.analyses.corpus.roles import Thresholds, reclassified
from explorer.analyses.defaults import DEFAULT_THRESHOLDS
from explorer.figures.role_map import (
    COLOUR_BY,
    ROLE_COLOURS,
    cell_font,
    cell_layout,
    decimals,
    role_cells,
    role_map_html,
    role_short,
    short_number,
)
from tests.app.conftest import open_page, open_part
from tests.conftest import MULTI30K
from tests.explorer.test_word_focus import grid_cells

SENTENCE = "Two dogs play in the snow."


def shipped(checkpoint, name):
    return json.loads((checkpoint.path / name).read_text())


def encoder_entries(checkpoint, thresholds=DEFAULT_THRESHOLDS):
    return [e for e in reclassified(shipped(checkpoint, "head_roles.json"), thresholds) if e.kind == "encoder"]


def scores_of(checkpoint, measure):
    return {h["spec"]: h[measure] for h in shipped(checkpoint, "head_importance.json")["heads"] if h["kind"] == "encoder"}


def rgb(colour: str) -> tuple[int, ...]:
    """(red, green, blue) of "rgb(r, g, b)" or "#rrggbb"."""
    if colour.startswith("#"):
        return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(int(part) for part in re.findall(r"\d+", colour))


def test_the_map_is_coloured_by_what_is_chosen_with_a_legend(h8):
    entries = encoder_entries(h8, Thresholds(positional=0.3, rare_rate=0.1, rare_over_chance=1.0))
    scores = scores_of(h8, "gradient_importance")
    for colour_by in COLOUR_BY:
        cells = role_cells(entries, 3, 8, scores, colour_by=colour_by, measure="gradient importance",
                           measure_key="gradient_importance")
        page = role_map_html(cells, "Encoder self-attention")
        drawn = grid_cells(page)
        assert cells.values.shape == (3, 8) and len(drawn) == 24
        assert f'data-legend="{colour_by}"' in page                 # the legend names what colours the map
        texts = [drawn[layer, head][0] for layer in range(3) for head in range(8)]
        assert all(len(text) <= 5 for text in texts) and cell_layout(cells)[1] >= 11
        if colour_by == "importance":
            np.testing.assert_allclose(cells.values[0, 3], scores["enc.0.3"])
            assert texts[3] == f"{scores['enc.0.3']:.3f}"        # 0.018: the largest (0.025) has two digits
            # Darker is more: the best-scored head's cell darker than the least's.
            best, least = (max(scores, key=scores.get), min(scores, key=scores.get))
            shade = {spec: sum(rgb(drawn[int(spec.split(".")[1]), int(spec.split(".")[2])][1])) for spec in (best, least)}
            assert shade[best] < shade[least] - 100, shade
        elif colour_by == "confidence":
            assert texts[0] == f"{entries[0].confidence:.2f}"
        else:
            assert set(texts) <= {"", "pos", "syn", "rare", "P+S", "P+R", "S+R", "P+S+R"} and "P+R" in set(texts)
            # Each cell in its role's own colour.
            colours = dict(ROLE_COLOURS)
            for entry in entries:
                role = "several" if len(entry.roles) > 1 else entry.roles[0] if entry.roles else "none"
                assert rgb(drawn[entry.layer, entry.head][1]) == rgb(colours[role]), entry.spec
    # Without importance the map falls back to the roles.
    assert role_cells(entries, 3, 8, {}, colour_by="importance").colour_by == "role"


def colour(cells, value: float) -> str:
    return cells.colours([value])[0]


def test_a_change_on_masking_is_red_where_masking_hurts(h8):
    entries = encoder_entries(h8)
    bleu, loss = (role_cells(entries, 3, 8, scores_of(h8, key), "importance", key.replace("_", " "), key)
                  for key in ("bleu_change", "loss_change"))
    for cells, hurts in ((bleu, -1), (loss, 1)):           # a BLEU drop hurts; a loss rise does
        assert cells.low == -cells.high                     # no change in the middle of the scale
        red, _, blue = rgb(colour(cells, hurts * cells.high))
        assert red > blue + 50, colour(cells, hurts * cells.high)
        red, _, blue = rgb(colour(cells, -hurts * cells.high))
        assert blue > red + 50
        assert min(rgb(colour(cells, 0.0))) > 200           # pale at no change


def test_what_a_head_has_is_in_its_hover_and_nothing_is_drawn_as_markup(h8):
    entries = encoder_entries(h8)
    scores = scores_of(h8, "gradient_importance")
    page = role_map_html(role_cells(entries, 3, 8, scores, "importance", "gradient importance"),
                         "<script>alert(1)</script>")
    assert "<script>" not in page and "&lt;script&gt;" in page
    first = entries[0]
    hover = html.unescape(re.search(r'<td data-layer="0" data-head="0" title="([^"]*)"', page).group(1))
    assert hover.split("\n")[0] == first.spec and f"confidence {first.confidence:.2f}" in hover
    assert f"gradient importance {scores[first.spec]:.3g}" in hover


def test_tiny_scores_never_read_zero():
    tiny = [0.00041234, 0.00009, 0.00038]
    places = decimals(tiny)
    assert [short_number(v, places) for v in tiny] == ["0.00041", "0.00009", "0.00038"]
    assert short_number(0.0004) == "0.00040" and short_number(-0.37) == "-0.37" and short_number(1234.5) == "1234"
    assert cell_font(8) >= 10 and cell_font(8, 7) >= 10 and cell_font(40, 7) >= 10
    assert role_short([]) == "" and role_short(["rare-token"]) == "rare" and role_short(["positional", "syntactic"]) == "P+S"


def test_the_table_shows_the_chosen_importance_and_the_roles_first(h8):
    table = head_table(shipped(h8, "head_roles.json"), shipped(h8, "head_importance.json"))
    for measure, header in MEASURE_HEADERS.items():
        shown = shown_columns(table, measure)
        if measure in table:
            assert list(shown.columns[:3]) == [header, "roles", "confidence"]
            assert shown[header].equals(table[measure])
        else:                                   # perplexity change: not measured on a translation model
            assert list(shown.columns[:2]) == ["roles", "confidence"]
    assert list(shown_columns(table, None).index) == list(table.index)
    assert "kind" not in shown_columns(table, "bleu_change")     # the spec says it


def test_the_page_prints_tiny_importance_in_significant_digits(h8):
    importance = shipped(h8, "head_importance.json")
    for head in importance["heads"]:
        head["gradient_importance"] = head["gradient_importance"] / 40          # ~0.0004, as on Hugging Face models
    at = open_page("heads.py", SENTENCE, heads_part="One head",
                   **{f"importance:{h8.path}|{h8.target_language}": importance})
    first = next(h for h in importance["heads"] if h["spec"] == "enc.0.0")
    [metric] = [m for m in at.metric if m.label == "Gradient importance"]
    assert metric.value == f"{first['gradient_importance']:.3g}" != "0.000"
    open_part(at, "Roles and importance", "heads_part")         # the table, on the maps' tab
    config = json.loads(next(f for f in at.dataframe if "roles" in f.value.columns).proto.columns)
    assert config["importance"]["type_config"]["format"] == "%.3g"
    assert any(c.value.startswith("Of 72 heads:") or "1014 pairs" in c.value for c in at.caption)


@pytest.mark.slow
@pytest.mark.parametrize("path_key, button", [("heads_text_path", "heads_compute_roles"),
                                              ("heads_src_path", "heads_compute_importance"),
                                              ("heads_ref_path", "heads_compute_importance")])
def test_a_missing_corpus_path_is_named(path_key, button, tmp_path):
    at = open_page("heads.py", SENTENCE, heads_recompute=True)
    missing = tmp_path / "nowhere" / "val.en.gz"
    at.text_input(key=path_key).set_value(str(missing)).run()
    at.button(key=button).click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [f"Cannot use these files: {missing}: no such file"]


def test_recompute_on_your_corpus_is_drawn_only_while_open():
    at = open_page("heads.py", SENTENCE)
    assert [e.label for e in at.expander if e.label == "Recompute on your own corpus"]
    assert not [box for box in at.text_input if box.key == "heads_text_path"]
    assert not [button for button in at.button if button.key == "heads_compute_roles"]
    at.session_state["heads_recompute"] = True          # as a click on its title does
    at.run()
    assert at.text_input(key="heads_text_path") and at.button(key="heads_compute_roles")


def test_the_corpus_paths_are_prefilled_with_the_multi30k_defaults():
    at = open_page("heads.py", SENTENCE, heads_recompute=True)
    assert at.text_input(key="heads_text_path").value == str(MULTI30K / "val.en.gz")
    assert at.text_input(key="heads_src_path").value == str(MULTI30K / "val.en.gz")
    assert at.text_input(key="heads_ref_path").value == str(MULTI30K / "val.de.gz")
    assert not at.button(key="heads_compute_importance").disabled and not at.button(key="heads_compute_roles").disabled


def test_a_map_has_its_own_width_and_writes_values_only_where_they_fit(h8):
    from explorer.figures.common import text_width
    from explorer.figures.role_map import COLUMN, LABELS

    entries = encoder_entries(h8)
    scores = scores_of(h8, "gradient_importance")
    cells = role_cells(entries, 3, 8, scores, colour_by="importance", measure_key="gradient_importance")
    width, size, written = cell_layout(cells)
    # Whole in a projector's 564 px column, two side by side in the wide page's 940 px.
    map_width = LABELS + 8 * (width + 2)
    assert written and size >= 11 and map_width <= COLUMN <= 564 and 2 * map_width + 16 <= 940
    assert max(text_width(t, size) for t in cells.text.ravel()) <= width
    drawn = grid_cells(role_map_html(cells, "t"))
    assert [text for text, _ in drawn.values()] == list(cells.text.ravel())
    # Sixteen heads in the same column: cells too narrow for "0.017", the values on hover only.
    wide = [replace(e, head=e.head + 8 * copy, spec=f"{e.spec}.{copy}") for e in entries for copy in (0, 1)]
    many = role_cells(wide, 3, 16, {e.spec: scores[e.spec.rsplit(".", 1)[0]] for e in wide},
                      colour_by="importance", measure_key="gradient_importance")
    width, _, written = cell_layout(many)
    assert not written and LABELS + 16 * (width + 2) <= COLUMN
    page = role_map_html(many, "t")
    assert {text for text, _ in grid_cells(page).values()} == {""} and "0.0" in many.hover[0][0]


def test_the_table_columns_come_a_group_at_a_time(h8):
    from explorer.analyses.corpus.head_table import COLUMN_GROUPS

    table = head_table(shipped(h8, "head_roles.json"), shipped(h8, "head_importance.json"))
    shown = {group: list(shown_columns(table, "bleu_change", group).columns) for group in COLUMN_GROUPS}
    assert shown == {"importance and roles": ["Δ BLEU", "roles", "confidence"],
                     "positional": ["roles", "offset", "offset share"],
                     "rare-token": ["rare rate", "rare chance", "rare or 2nd rarest"],
                     "syntactic": ["roles", "syntactic"]}
    # Every column of the whole table is in one group or another (the CSV has the rest of the measures).
    assert {c for columns in shown.values() for c in columns} == set(shown_columns(table, "bleu_change").columns)
    assert shown_columns(table, "bleu_change", "rare-token")["rare rate"].equals(table["rare rate"])


def test_a_grid_of_twelve_heads_marks_its_flags_and_names_its_columns_in_their_room():
    """12 heads a row (MiniLM) at a projector's width leave ~28 px a head: a flag's note would run into the next
    head's, so it is an S (✂ for a pruned head) with the note in its hover, and the columns are h0 … h11."""
    from explorer.figures.attention import heads_grid

    pattern = np.full((2, 12, 4, 4), 0.25)
    tokens = ["a", "b", "c", "d"]
    notes = {(0, 3): "sink 0.81 · norm 0.37", (1, 11): "pruned"}
    grid = heads_grid(pattern, tokens, tokens, "encoder", flags=notes)
    assert list(grid.layout.xaxis.ticktext) == [f"h{h}" for h in range(12)] and grid.layout.xaxis.tickangle == 0
    marks = {(a.text, a.hovertext) for a in grid.layout.annotations}
    assert marks == {("S", "sink 0.81 · norm 0.37"), ("✂", "pruned")}
    eight = heads_grid(pattern[:, :8], tokens, tokens, "encoder", flags={(0, 3): notes[(0, 3)]})
    assert eight.layout.annotations[0].text == notes[(0, 3)] and eight.layout.xaxis.ticktext[0] == "head 0"
