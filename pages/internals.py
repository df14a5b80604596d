"""Internals: the masks, scores → masked scores → softmax, positional encodings, and the Q/K/V arithmetic."""

import pandas as pd
import streamlit as st

from explorer.analyses.sentence.internals import batch_padding_mask, batch_partner, masked_scores
from explorer.capture.exports import matrix_table
from explorer.figures.internals import scores_mask_softmax
from explorer.figures.matrix import MASK, Matrix, plotly_heatmap
from explorer.figures.padding_mask import padding_mask_html
from explorer.models.vocabulary import KIND_TITLES, Kind
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.internals_positions_section import positions
from explorer.pages.components.internals_walkthrough_section import walkthrough
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.session import EXAMPLES
from explorer.pages.components.traces import current_trace
from explorer.pages.components.widgets import choose_head, colour_scale, one_tab_at_a_time, show_figure, show_table_figure

st.title("Internals")   # first: the notices about the sentence go under it
st.caption("How one head turns its input into attention weights, one step at a time: which keys the masks allow, how "
           "scores become weights, how word order gets in, and the arithmetic for one query token.",
           help=term_help("scaled dot-product attention"))
checkpoint, trace = current_trace()
pruning_notice(checkpoint)
KINDS = tuple(trace.attention)


def pick(whole_kind: bool = False) -> tuple[str, int, int, list[str], list[str]]:
    """The attention kind (and, unless the tab shows a whole kind, the layer and head) on the tabs that use them,
    in the Attention page's order, opening on the encoder as it does; with the kind's query and key tokens."""
    kind, layer, head = choose_head(checkpoint, "internals", first_kind="encoder", kinds=KINDS,
                                    pick_head=not whole_kind)
    return kind, layer, head, trace.query_tokens(kind), trace.key_tokens(kind)


def masks() -> None:
    kind, _, _, queries, keys = pick(whole_kind=True)
    st.caption(f"True (1) = may attend. The {linked('padding mask')} hides padding keys when sentences of different "
               f"lengths share a batch; the {linked('look-ahead mask')} lets decoder position i see positions ≤ i "
               "only. A single sentence has no "
               "padding, so its padding mask is all ones; the look-ahead mask is lower-triangular.")
    mask = trace.masks[kind]
    if mask.all():
        # An all-ones mask drawn is one flat colour: it reads as a figure that failed, so it is said instead.
        st.info(f"No mask here: every key is visible. In {KIND_TITLES[kind].lower()} each of the {len(queries)} "
                f"queries may attend to all {len(keys)} keys: a single sentence has no padding"
                + (", and only the decoder's self-attention has a look-ahead mask." if Kind.DECODER in KINDS else "."))
    else:
        show_figure(plotly_heatmap(Matrix(mask, queries, keys, f"{kind} mask (as captured from the model)", MASK)),
                    f"{kind}-mask", matrix_table(mask.astype(int), queries, keys))

    partner = batch_partner(checkpoint, trace.text, EXAMPLES + [
        "A man in a blue shirt and a woman in a red dress are dancing together at a wedding party.", "A dog runs."])
    if partner is not None:
        padding, pieces = batch_padding_mask(checkpoint, [trace.text, partner])
        yours_padded = not padding[0].all()
        padded = 0 if yours_padded else 1             # the row that gets the pads
        names = ["your sentence", "a longer sentence" if yours_padded else "a shorter sentence"]
        title = ("Padding mask of a batch: your sentence padded to a longer one's length" if yours_padded
                 else "Padding mask of a batch: a shorter sentence padded to your sentence's length")
        # HTML (explorer/figures/padding_mask.py: the page's first view loads no plotly.js); ⬇ HTML the plotly one
        show_table_figure(padding_mask_html(padding, names, pieces, title), "padding-mask",
                          pd.DataFrame(padding.astype(int), index=names),
                          interactive=lambda: plotly_heatmap(Matrix(
                              padding, names, [], title, MASK, row_title="sentence", pieces=pieces,
                              column_title="key position (hover: each sentence's own piece)")))
        pads = [i for i, ok in enumerate(padding[padded]) if not ok]       # the end of the row
        where = f"position {pads[0]}" if len(pads) == 1 else f"positions {pads[0]}–{pads[-1]}"
        st.caption(f"In {names[padded]}, the pads ({where}) get mask 0: every query's attention to them is exactly 0.")


def scores_to_softmax() -> None:
    kind, layer, head, queries, keys = pick()
    if trace.masks[kind].all():         # no blank "+ mask" panel: said in words
        st.caption(f"Left to right: each query's {linked('scaled dot-product attention', 'scaled scores')} q·k for "
                   f"every key and the {linked('softmax')} that turns each row into attention weights summing to 1. "
                   f"No {linked('mask')} here: every key is visible, so softmax reads the scores as they are.")
    else:
        st.caption(f"Left to right: each query's {linked('scaled dot-product attention', 'scaled scores')} q·k for "
                   f"every key, the {linked('mask')} (−∞ where a key is hidden), their sum, and the "
                   f"{linked('softmax')} that turns each row into attention weights summing to 1.")
    scores = trace.attention[kind].value("scores")[layer, head]
    pattern = trace.pattern(kind)[layer, head]
    show_figure(scores_mask_softmax(scores, trace.masks[kind], pattern, queries, keys,
                                    f"{kind}, layer {layer}, head {head}: the model's real numbers", colour_scale()),
                f"{kind}-L{layer}-H{head}-scores-mask-softmax",
                {"scores": scores, "mask": trace.masks[kind], "masked_scores": masked_scores(trace, kind, layer, head),
                 "pattern": pattern})


# One part at a time, like the Attention page's views: only the open tab runs and is drawn, so a long sentence
# opens in well under the seven figures' time; the tab is kept in the URL (`part=`).
# Positions: pages/components/internals_positions_section.py; Q, K, V walkthrough:
# internals_walkthrough_section.py (the kind, layer and head picked here, first on its tab).
PARTS = {"Masks": masks, "Scores → softmax": scores_to_softmax,
         "Positions": lambda: positions(checkpoint, trace),
         "Q, K, V walkthrough": lambda: walkthrough(checkpoint, trace, pick())}
one_tab_at_a_time(PARTS, "internals_part", "part")
