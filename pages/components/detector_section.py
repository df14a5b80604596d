"""The Heads page's "Head detectors (Olsson et al. 2022)" section: previous-token, duplicate-token, induction and
prefix-matching scores of every self-attention head, beside Voita et al.'s roles (explorer/analyses/sentence/detectors.py)."""

from __future__ import annotations

import streamlit as st

from explorer.analyses.sentence.detectors import DEFAULT_SEEDS, HeadDetection, detect_heads, detection_table, reference_table
from explorer.capture.exports import table_csv
from explorer.figures.detectors import detector_maps
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import KIND_TITLES
from explorer.pages.components.caches import cached_model
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.widgets import command_line, show_figure
from explorer.service import ModelRef
from explorer.settings import command_name


@st.cache_data(max_entries=16, show_spinner="Running the head detectors…")
def cached_detection(ref: ModelRef, target_language: str) -> HeadDetection:
    """Per model (its weights' mtime keys it, so a retrained folder is measured again) and output language (an
    M2M100 decoder reads its language token first)."""
    return detect_heads(cached_model(ref, target_language))


def show_head_detectors(checkpoint: ExplorerModel) -> None:
    st.header("Head detectors (Olsson et al. 2022)",
              help=term_help("previous-token head", "duplicate-token head", "induction head", "prefix matching"))
    path = str(checkpoint.path)
    detection = cached_detection(ModelRef.of(path), checkpoint.target_language)
    source = f" (while translating the fixed source “{detection.fixed_source}”)" if detection.fixed_source else ""
    st.caption(
        f"Each self-attention head reads {DEFAULT_SEEDS} sequences of {detection.length} random ordinary tokens, each "
        f"repeated once (Olsson et al. 2022, “In-context learning and induction heads”): the encoder as its source, "
        f"with the model's special tokens, the decoder as its input after its start token{source}. A score is the "
        "share of the head's attention, over every query, that lands where a **previous-token** head (the token "
        "before), a **duplicate-token** head (an earlier copy of the query's token) or an **induction** head (the "
        "token after that earlier copy) would put it: TransformerLens's `head_detector` with its 'mul' measure and "
        "its defaults (attention to the first token and to the query itself stays in the total; only earlier keys "
        "count, in the encoder too). Queries of the first repeat have no earlier copy, so a perfect duplicate or "
        "induction head scores about 0.5 (“best”); **prefix matching** is Olsson et al.'s own score, the induction "
        "pattern over the second repeat's queries only (a perfect head: 1). Chance: a head attending uniformly to "
        "every key it may see.")
    # A kind at a time: each kind's four maps are a page tall at a projector's width.
    kinds = list(detection.scores)
    for tab, kind in zip(st.tabs([KIND_TITLES[kind] for kind in kinds]) if len(kinds) > 1 else [st.container()],
                         kinds):
        with tab:
            show_figure(detector_maps(detection, kind), f"{checkpoint.name}-detectors-{kind}",
                        detection_table(detection).filter(like={"encoder": "enc.", "decoder": "dec."}[kind], axis=0),
                        width="content")      # the maps' own width: their cells sized to hold the values
    for kind, why in detection.not_scored.items():
        st.caption(f"{kind.capitalize()} heads are not scored: {why}.")
    table, references = detection_table(detection), reference_table(detection)
    # The maps above carry the scores (and each panel's chance and best): the tables are folded away, 1,800 px
    # of the page's height for 48 heads. One under the other at the page's width, every column in view (chance
    # and best said in a word, so that the second is whole in a projector's column); the per-head table tall
    # enough for every row up to SHOWN_ROWS (beyond, it scrolls, and says so).
    with st.expander(f"The scores as tables: {len(table)} heads, then chance and best per detector"):
        number_format = {column: st.column_config.NumberColumn(format="%.3f") for column in table.columns}
        st.dataframe(table, key="detectors_table", height=table_height(len(table)), column_config=number_format)
        if len(table) > SHOWN_ROWS:
            st.caption(f"{len(table)} heads: scroll the table for the rest, or download them all (⬇ CSV).")
        st.dataframe(references.rename(index=REFERENCE_WORDS, level="score of"), key="detectors_chance",
                     column_config={column: st.column_config.NumberColumn(format="%.3f")
                                    for column in references.columns})
        st.caption("Chance: the score of a head attending uniformly to every key it may see; best: that of a "
                   "perfect head.")
    st.download_button("⬇ CSV", table_csv(table), file_name=f"{checkpoint.name}-head-detectors.csv",
                       mime="text/csv", key="detectors_csv")
    command_line("The same from the command line: "
                 f"`python -m explorer detect --model {command_name(checkpoint.path)} [--json]`.")


REFERENCE_WORDS = {"chance (uniform head)": "chance", "best (perfect head)": "best"}
SHOWN_ROWS = 50         # rows of the per-head table in view without scrolling
ROW_PX = 35             # px of a row of st.dataframe (the header's too), plus 3 px of border


def table_height(rows: int) -> int:
    """Px of a table showing its header and every row, up to SHOWN_ROWS."""
    return ROW_PX * (min(rows, SHOWN_ROWS) + 1) + 3

