"""One decoding step's candidates (or a masked position's): the top-k next tokens, best first, each with a bar as long
as its probability and the probability written beside it; the token the model chose (or that was hidden) in red.

An HTML table (st.html), not a plotly bar chart: each plotly figure costs a page change ~0.3 s in the browser and a
cold link more; a ranked list of words with bars needs no plot, and its words stay selectable text.
"""

from __future__ import annotations

import html

from explorer.capture.trace import StepDistribution
from explorer.figures.common import font, text_width
from explorer.figures.html_cells import AS_WIDE_AS_THE_TABLE, figure_box
from explorer.figures.token_bars import probability_text

BAR = 100               # px of a bar at probability 1: with a long token and its probability, half a projector's column
CHOSEN, OTHER = "crimson", "#1f77b4"        # the chosen token's bar, the others' (plotly's first colour)
ROW_HEIGHT = 24         # px of a candidate's row
TOKEN_FONT = 13         # px


def candidates_width(step: StepDistribution) -> int:
    """Px the list takes across: its longest token, the bar, the longest probability, the cells' padding."""
    size = font(TOKEN_FONT)
    longest = max((text_width(token, size) for token in step.top_tokens), default=0)
    return longest + 8 + font(BAR) + 6 + max(text_width(probability_text(p), size) for p in step.top_probs)


def candidates_table(step: StepDistribution, index: int, what: str = "step") -> str:
    """The step's top tokens as rows: token, bar, probability (never 0.000 for a token that has some: a small one
    reads 0.0058); each row's hover says the probability in full. Every token is escaped: they are the model's
    pieces of the user's text."""
    size = font(TOKEN_FONT)
    rows = []
    for rank, (token, token_id, probability) in enumerate(zip(step.top_tokens, step.top_ids, step.top_probs)):
        chosen = token_id == step.chosen_id
        bar = (f'<div style="width: {max(1, round(font(BAR) * probability))}px; height: {font(ROW_HEIGHT) - 8}px; '
               f'background: {CHOSEN if chosen else OTHER}"></div>')
        weight = "font-weight: 600; " if chosen else ""
        rows.append(f'<tr data-rank="{rank}" data-chosen="{str(chosen).lower()}" '
                    f'title="{html.escape(token)}: p = {probability:.4g}" style="height: {font(ROW_HEIGHT)}px">'
                    f'<td style="{weight}text-align: right; padding: 0 8px 0 0; white-space: nowrap; '
                    f'font-size: {size}px">{html.escape(token)}</td>'
                    f'<td style="width: {font(BAR)}px; padding: 0">{bar}</td>'
                    f'<td style="{weight}padding: 0 0 0 6px; font-size: {size}px; white-space: nowrap">'
                    f'{probability_text(probability)}</td></tr>')
    table = ('<table style="border-collapse: collapse; width: auto">' + "".join(rows) + "</table>"
             f'<div style="{AS_WIDE_AS_THE_TABLE}; font-size: {font(12)}px; color: #666">'
             f'red: the token {"hidden" if what == "masked" else "chosen"}; hover a row for its probability</div>')
    verb = "hid" if what == "masked" else "chose"
    return figure_box(f"{what} {index}: {verb} {step.chosen}", table,
                      subtitle=f"p = {probability_text(step.chosen_prob)}, entropy {step.entropy:.2f} nats",
                      name="candidates")
