"""What every figure shares: token labels that are safe to show, the sizing rule that keeps every token labelled,
the colour scale of attention weights, and offline HTML export."""

from __future__ import annotations

import html
from contextvars import ContextVar

import numpy as np
import plotly.graph_objects as go

from explorer.capture.wording import plural  # noqa: F401  (figures and pages word their counts with it)

# Projector mode (the sidebar's toggle, `projector=on` in the URL): every figure's type and cells scaled up for a
# class. A context variable, set by each run of a page: Streamlit runs every browser session in its own thread, so
# one session's choice never reaches another's figures.
FIGURE_SCALE: ContextVar[float] = ContextVar("figure_scale", default=1.0)
PROJECTOR_SCALE = 1.3


def font(size: float) -> int:
    """A font size (or a row's height) in px, scaled up in projector mode."""
    return int(round(size * FIGURE_SCALE.get()))


def display_tokens(tokens: list[str]) -> list[str]:
    """Pieces as labels: the word-start mark ▁ kept, markup escaped.

    Plotly renders a few HTML-like tags (<b>, <a href>, <br>) in labels and hover text; escaping makes a token
    such as `<img src=x onerror=...>` show as its characters.
    """
    return [html.escape(token, quote=False) for token in tokens]


def position_labels(tokens: list[str]) -> list[str]:
    """Unique axis labels "i token" (escaped): repeated tokens stay separate rows, hover names both."""
    return [f"{i} {token}" for i, token in enumerate(display_tokens(tokens))]


# Long inputs. Up to LONG_FROM tokens an axis follows the sizing rule below: every token labelled, the figure a cell
# per token (4,000 px for 250 tokens: unreadable as a whole, slow to draw). Beyond it a token axis is LONG_AXIS px
# whatever the count, the whole matrix in view at once (a few px a token shows every pattern: diagonals, columns
# to one token, blocks), labelled every few tokens and every token once zoomed in (drag over a region; a
# double-click zooms out). Small multiples are pooled instead (pooling.py), and a figure never draws more than
# MAX_CELLS cells (more is pooled too), so what a page sends stays bounded.
# Chosen by looking at the Attention page at 45, 60 and 80 tokens: at 60 the heatmap's ~720 px wide plot gives each
# key label 12 px for its 8 px font (rotated, just clear of its neighbours); at 80 they run into each other.
LONG_FROM = 60          # tokens
LONG_AXIS = 800         # px of a long token axis (the page's 1000 px column less its labels and colour bar)
LABEL_SPACING = 16      # px between labels on a long axis: the sizing rule's cell at LONG_FROM tokens
SMALLEST_FONT = 11      # px: the smallest text a room reads off a projector; no figure's text is smaller
LONG_FONT = SMALLEST_FONT   # a thinned axis has a label's room every LABEL_SPACING px, so no need to shrink it
MAX_CELLS = 300_000     # a figure's heatmap cells at most (a 512-token head: 262,144; ~1.6 MB as float32)


def is_long(count: int) -> bool:
    """Whether an axis of `count` tokens is past the sizing rule (LONG_FROM)."""
    return count > LONG_FROM


def axis_length(count: int) -> int:
    """Pixels of a token axis: a cell per token (the sizing rule), or LONG_AXIS for a long one."""
    return LONG_AXIS if is_long(count) else cell_size(count) * count


def zoom_note(*counts: int, what: str = "cell") -> str:
    """What a long figure's title says under it: how to read every label."""
    return (f"<br><sup>{' × '.join(str(c) for c in counts)} tokens: a label every few tokens; drag over a region "
            f"to zoom in and read every label, double-click to zoom out; hover names each {what}</sup>")


# The one sizing rule: a token axis labels every token (plotly would skip labels once they crowd), in a font that
# shrinks with the number of tokens, on cells that stay at least a line of that font tall.
def label_font(count: int) -> int:
    """The label font (px) for an axis of `count` tokens: 12 up to 30 tokens, SMALLEST_FONT beyond."""
    return font(12 if count <= 30 else SMALLEST_FONT)


def cell_size(count: int) -> int:
    """Pixels per token along an axis: a label's line height and some air, the air shrinking from 8 px at 20 tokens
    to 3 px at 45 (rotated 60°, 14 px apart, 11 px labels are still 12 px apart across their baselines)."""
    return label_font(count) + int(np.clip(8 - (count - 20) / 5, 3, 8))


def every_label(count: int, length: int | None = None, **axis) -> dict:
    """Axis settings that draw one label per category (token), sized for `count` of them. A long axis (is_long),
    or one given a `length` in px too short for its labels (a pooled panel), instead labels as many as fit, one
    per LABEL_SPACING px, and every one once zoomed in: plotly picks the step (every 5th token of 250 on
    LONG_AXIS) and refines it as the range shrinks."""
    if is_long(count) or (length is not None and count * LABEL_SPACING > length):
        return dict(type="category", tickmode="auto", nticks=max(2, (length or LONG_AXIS) // LABEL_SPACING),
                    tickfont=dict(size=font(LONG_FONT)), automargin=True, **axis)
    return dict(type="category", tickmode="linear", tick0=0, dtick=1, tickfont=dict(size=label_font(count)),
                automargin=True, **axis)


def label_room(labels, count: int, angle: float = 60, thinned: bool = False) -> int:
    """Pixels that rotated labels take across the axis: their longest label at the axis' font (a long or
    otherwise thinned axis: LONG_FONT)."""
    longest = max((len(str(label)) for label in labels), default=0)
    size = font(LONG_FONT) if thinned or is_long(count) else label_font(count)
    return int(0.62 * size * min(longest, 40) * np.sin(np.radians(angle))) + 12


CONTENT_WIDTH = 1000    # px of a page's main column in the wide layout (a 1400 px window with its sidebar)
PANEL_LABELS = 130      # px beside a row of panels for the query labels and the colour bar
# A classroom projector's 1024 px window with the sidebar open leaves the main column 564 px (measured in Chromium):
# a figure that sets its own width and must stay readable there (a long sentence's focus window) is never wider.
NARROW_WIDTH = 560
# Projector mode folds the sidebar (pages/components/presentation.py): a 1024 px window's main column is then 824 px
# (measured in Chromium). A figure that sets its own width in projector mode (a focus window) takes this much.
PROJECTOR_COLUMN = 820
PRINTED_UP_TO = 20      # tokens a side: up to this many, a heatmap's cells print their weights in projector mode


def projector_mode() -> bool:
    """Whether this page run draws for a projector (FIGURE_SCALE set by the sidebar's toggle)."""
    return FIGURE_SCALE.get() > 1


def printed_cell() -> int:
    """Px a heatmap cell needs to print its weight ("0.12", four digits at 0.55 em) at the smallest font."""
    return int(0.55 * font(SMALLEST_FONT) * 4) + 6


def dense_cell() -> int:
    """Pixels per token where a figure packs its labels closest: the smallest label font and 3 px of air, the
    sizing rule's cell from 45 tokens on (rotated 60°, 11 px labels 14 px apart are 12 px apart across their
    baselines); scaled with the font in projector mode."""
    return font(SMALLEST_FONT) + 3


def text_width(text: str, size: float) -> int:
    """Pixels a line of text takes at font `size`, generously (0.62 em a character, as label_room reckons)."""
    return int(0.62 * size * len(text)) + 1


TITLE_FONT = 17         # px: plotly's title (1.4 × its 12 px base font); a <sup> line is about 0.7 of it


def wrapped_title(title: str, width: int) -> str:
    """A figure title broken into lines (<br>) that fit `width` px: plotly never wraps a title, and cuts what runs
    past the figure's edge ("…encoder layer 0 (a model w" at 1024 px). Each line of the title (a <sup> line too)
    is broken at spaces."""
    lines = []
    for line in title.split("<br>"):
        small = line.startswith("<sup>") and line.endswith("</sup>")
        text = line[5:-6] if small else line
        size = TITLE_FONT * (0.7 if small else 1.0)
        broken, current = [], ""
        for word in text.split(" "):
            trial = f"{current} {word}" if current else word
            if current and text_width(html.unescape(trial), size) > width:
                broken.append(current)
                current = word
            else:
                current = trial
        broken.append(current)
        lines += [f"<sup>{part}</sup>" if small else part for part in broken]
    return "<br>".join(lines)


def projector_title(title: str, note: str = "") -> tuple[str, int]:
    """The title, with a note's lines added under it, in lines of a projector's column (wrapped_title to
    NARROW_WIDTH), and the px it gained over the title as it was: a figure stretched to its column moves its plot
    down by that much."""
    wrapped = wrapped_title(title + note, NARROW_WIDTH - 20)
    return wrapped, title_height(wrapped) - title_height(title)


def round_step(span: float, pixels: float, room: int = 32) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, … that keeps numbers `room` px apart on an axis of `span` units
    drawn `pixels` px long."""
    step = 1
    while step * pixels / max(span, 1) < room:
        step = step * 5 // 2 if str(step).startswith("2") else step * 2
    return step


def title_height(title: str) -> int:
    """Pixels a (wrapped) title takes from the figure's top: its lines, a <sup> line smaller, and the pad."""
    lines = title.split("<br>")
    small = sum(line.startswith("<sup>") for line in lines)
    return 12 + 22 * (len(lines) - small) + 16 * small


POOLED_PANEL = 256      # px a side of a pooled small multiple (a long input's head among others): 4 px a cell
ZOOM_PANEL = 400        # px a side of a long input's panel shown whole at full resolution (scores → softmax)


def panels_per_row(n_tokens: int, panels: int, width: int = CONTENT_WIDTH, long_panel: int = POOLED_PANEL) -> int:
    """How many token × token panels fit a row of `width` px with every cell at the sizing rule's size: side by
    side while they fit, then fewer a row (the figure grows down) rather than smaller cells. A long input's
    panels are `long_panel` px a side."""
    panel = (long_panel if is_long(n_tokens) else cell_size(n_tokens) * n_tokens) + 12
    return max(1, min(panels, (width - PANEL_LABELS) // panel))


def stretched_length(count: int) -> int | None:
    """The px a token axis of a figure that stretches to its column can count on: None while every label fits a
    projector's column at the densest cell (dense_cell), else the length there, for every_label to thin the
    labels to (a 59-token axis drew its labels 6 px apart at 1024 px; hover and zoom name every token)."""
    room = NARROW_WIDTH - PANEL_LABELS
    return None if count * dense_cell() <= room else room


def token_axes(figure: go.Figure, row_title: str = "query", column_title: str = "key",
               stretched: bool = False) -> None:
    """Key tokens along the top (rotated), query tokens down the side, every one labelled; the figure is a
    cell per query tall, plus room for the rotated key labels, so its title never sits on them. stretched: the
    figure takes its column's width, the key labels thinned where a projector's column has no room for each
    (stretched_length)."""
    keys = [label for trace in figure.data for label in (trace.x if trace.x is not None else [])]
    queries = [label for trace in figure.data for label in (trace.y if trace.y is not None else [])]
    n_keys, n_queries = len(dict.fromkeys(keys)), len(dict.fromkeys(queries))
    figure.update_xaxes(**every_label(n_keys, stretched_length(n_keys) if stretched else None, side="top",
                                      tickangle=-60, title=column_title))
    figure.update_yaxes(**every_label(n_queries, autorange="reversed", title=row_title))
    labels_height = label_room(keys, n_keys) + 24             # rotated labels plus the axis title
    margin_top = (figure.layout.margin.t or 60) + labels_height
    figure.update_layout(margin=dict(t=margin_top),
                         height=max(320, axis_length(n_queries) + 80) + margin_top,
                         title=dict(y=1.0, yanchor="top", yref="container", pad=dict(t=12)))
    if is_long(n_keys) or is_long(n_queries) or (stretched and stretched_length(n_keys)):
        figure.update_layout(title_text=(figure.layout.title.text or "") + zoom_note(n_queries, n_keys),
                             margin=dict(t=margin_top + 16))
        if figure.layout.height:
            figure.update_layout(height=figure.layout.height + 16)
    if stretched:           # the title in lines of a projector's column, the cells moved down by those it gained
        wrapped, extra = projector_title(figure.layout.title.text or "")
        if extra:
            figure.update_layout(title_text=wrapped, margin=dict(t=figure.layout.margin.t + extra),
                                 height=figure.layout.height + extra)


ABSOLUTE, PER_FIGURE = "absolute", "per-figure"
COLOUR_SCALES = {ABSOLUTE: "0–1 (absolute)", PER_FIGURE: "0–max of each figure"}
# Not a sidebar choice: the figure shows norm-based attention ‖α·f(x)‖ (explorer/capture/value_norms.py), which has no fixed
# top, so each figure runs from 0 to its own largest norm and says so.
NORMS = "norms"


def weight_range(values: np.ndarray, scale: str = ABSOLUTE) -> tuple[float, float]:
    """The colour range of attention weights: 0–1 always (absolute: figures compare), or 0 to this figure's
    largest weight (per-figure: a diffuse head's pattern becomes visible)."""
    if scale in (PER_FIGURE, NORMS):
        finite = np.asarray(values, dtype=float)[np.isfinite(values)]      # a pruned head's blanks are NaN
        largest = float(finite.max()) if finite.size else 1.0
        return 0.0, largest if largest > 0 else 1.0
    return 0.0, 1.0


def scale_note(values: np.ndarray, scale: str = ABSOLUTE) -> str:
    """What the colours mean, for the colour bar's title."""
    low, high = weight_range(values, scale)
    if scale == NORMS:
        return f"‖α·f(x)‖<br>(0–{high:.2g},<br>this figure)"
    return "weight<br>(0–1)" if scale == ABSOLUTE else f"weight<br>(0–{high:.2g},<br>this figure)"


ATTENTION_HOVER = "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"
POOLED_HOVER = "%{y}<br>%{x}<br>weight on these keys %{z:.3f} (the queries' mean)<extra></extra>"


def hover_text(template: str, scale: str) -> str:
    """A hover template naming what the cells hold: the weight, or the norm ‖α·f(x)‖."""
    return template.replace("weight", "‖α·f(x)‖") if scale == NORMS else template


def figure_html(figure: go.Figure, config: dict | None = None) -> str:
    """A standalone HTML file with plotly.js inlined, so the download works offline too; config: plotly's (the
    camera button's format and size)."""
    return figure.to_html(include_plotlyjs=True, full_html=True, config=config)
