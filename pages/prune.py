"""Prune heads and watch the output change (Michel et al. 2019; Voita et al. 2019). Per browser session."""


import streamlit as st

from explorer.analyses.corpus.corpus_scoring import corpus_task
from explorer.analyses.corpus.head_table import head_table, heads_without_role
from explorer.analyses.corpus.pruning import DEFAULT_NORMALISATION, NORMALISATIONS, importance_scores, least_important
from explorer.capture.head_sets import HeadSpec, HeadSpecError, all_heads, format_heads, head_set, parse_heads
from explorer.figures.common import plural
from explorer.models.vocabulary import KIND_TITLES, SHORT_NAMES
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.head_analyses import head_analysis, role_thresholds
from explorer.pages.components.prune_corpus_section import show_corpus_score
from explorer.pages.components.prune_curve_section import show_pruning_curve
from explorer.pages.components.prune_output_section import show_pruned_output
from explorer.pages.components.session import current_checkpoint
from explorer.teaching.wording import HEAD_NAMING

KEEP = "session"      # a choice made here is still there when the person comes back from another page

checkpoint = current_checkpoint()
heads = all_heads(checkpoint)
kinds = [kind for kind in KIND_TITLES if checkpoint.layers(kind)]          # the kinds this model has
# One row of buttons a layer (st.pills): its value is the list of that layer's heads pruned. (72 checkboxes, one a
# head, took the browser 0.3 s of each change to this page at 45 words: 1.00 s with them, 0.70 s without.)
# Keyed as the heads are named, less the head: prune_en-de-h8_cross.2 holds cross.2.*'s pruned heads.
layer_key = {(kind, layer): f"prune_{checkpoint.name}_{SHORT_NAMES[kind]}.{layer}" for kind in kinds
             for layer in range(checkpoint.layers(kind))}
# Shipped with the model, or computed in this session on the Heads page.
importance, roles = head_analysis("importance", checkpoint), head_analysis("roles", checkpoint)
# How this model is scored on a corpus: its metric, what its examples are called (BLEU on sentence pairs, perplexity
# on lines …).
scorer = corpus_task(checkpoint)


def set_pruned(pruned: set) -> None:
    for (kind, layer), key in layer_key.items():
        st.session_state[key] = [head for head in range(checkpoint.heads) if HeadSpec(kind, layer, head) in pruned]


def chosen() -> set:
    """The heads pruned in the layers' rows."""
    return {HeadSpec(kind, layer, head) for (kind, layer), key in layer_key.items()
            for head in st.session_state.get(key) or []}


# The pruned heads live in the session (url_state: "url_pruned", also the link's `pruned=`); the rows are drawn
# from them whenever Streamlit has forgotten the rows' own state (the first visit, or back from another page).
if any(key not in st.session_state for key in layer_key.values()):
    try:
        kept_pruned = set(parse_heads(st.session_state.get("url_pruned", ""), checkpoint))
    except HeadSpecError as error:
        st.warning(f"The pruned heads “{st.session_state.get('url_pruned')}” cannot be used with this model: {error}")
        kept_pruned = set()
    for (kind, layer), key in layer_key.items():
        st.session_state.setdefault(key, [head for head in range(checkpoint.heads)
                                          if HeadSpec(kind, layer, head) in kept_pruned])


NORMALISATION_LABELS = {"raw": "raw gradient importance", "layer": "importance normalised per layer (Michel et al.)"}

st.title("Prune heads")
st.caption("Switch attention heads off and watch what the output loses: the output with and without them, the change "
           "at every step, and a score over many sentences.", help=term_help("pruning"))
normalisation = st.radio("Order heads by", list(NORMALISATIONS), index=list(NORMALISATIONS).index(DEFAULT_NORMALISATION),
                         format_func=NORMALISATION_LABELS.get, key="prune_normalisation", persist_state=KEEP, horizontal=True,
                         disabled=importance is None, help=term_help("head importance"))
if importance:
    st.caption(f"Importance measured on {importance.corpus.name or 'a corpus'} "
               f"({importance.corpus.pairs} {scorer.example_noun}).")
else:
    st.caption("This model has no head importance yet: compute it on the Heads page (“Recompute on your own "
               "corpus”) to prune the least important heads and draw the pruning curve.")
picked = chosen()
fraction = st.slider("Least important heads to prune", 0, 100, 25, 5, format="%d%%", key="prune_fraction",
                     persist_state=KEEP, disabled=importance is None, help=term_help("pruning"))
least = set(least_important(importance_scores(importance, normalisation), fraction / 100, heads)) if importance else set()
# "Keep only heads with a role" at the thresholds set on the Heads page (or the defaults).
thresholds = role_thresholds()
without_role = heads_without_role(head_table(roles, None, thresholds)) if roles else list(heads)
# Each button says what it does to the heads picked now, with counts, before it is clicked: one adds to them, the
# other two replace them. A row that wraps: whole labels at a projector's 1024 px.
presets = st.container(horizontal=True)
presets.button(f"Add the {len(least)} least important", key="prune_least", disabled=importance is None,
               on_click=lambda: set_pruned(picked | least),
               help=f"Adds the {fraction}% least important heads to those picked: {len(picked | least)} pruned after.")
presets.button("Keep only heads with a role", key="prune_roles", disabled=len(without_role) == len(heads),
               on_click=lambda: set_pruned(set(without_role)),
               help=f"Replaces the picked heads: prunes the {len(without_role)} of {len(heads)} heads that have no "
                    "role at the Heads page's thresholds.")
presets.button("Prune none", key="prune_none", on_click=lambda: set_pruned(set()), help="Brings every head back.")
said = [f"“Add the {len(least)} least important” keeps your {len(picked)} picked and adds "
        f"{len(least - picked)} ({len(picked | least)} pruned after)" if importance else ""]
if roles is None:
    said.append("no head roles for this model yet (the Heads page computes them)")
elif len(without_role) < len(heads):
    said.append(f"“Keep only heads with a role” replaces your picks: it keeps {len(heads) - len(without_role)} "
                f"heads and prunes {len(without_role)}")
st.caption("; ".join(part for part in said if part) + ".")
if roles is not None and len(without_role) == len(heads):
    st.info("No head has a role at the current thresholds, so \"Keep only heads with a role\" would prune every "
            "head; it is off. Lower the thresholds on the Heads page to see the strongest candidates get one.")

with st.expander("Heads (highlighted = pruned)", expanded=True):
    example = HeadSpec(kinds[-1], checkpoint.layers(kinds[-1]) - 1, min(5, checkpoint.heads - 1))
    st.caption(f"Each button is one head, numbered 0 to {checkpoint.heads - 1} in its layer; click it to prune the "
               f"head (it turns highlighted), again to bring it back. Button {example.head} of "
               f"{KIND_TITLES[example.kind].lower()} layer {example.layer} is head {example}.")
    for kind in kinds:
        st.markdown(f"**{KIND_TITLES[kind]}**")
        for layer in range(checkpoint.layers(kind)):
            # Short labels in a wrapping row: a number per head stays whole where "cross.2.5" was cut to "c…".
            row = st.container(horizontal=True, vertical_alignment="center")
            row.caption(f"layer {layer}", width=70)         # a fixed width: the rows line up
            # In a box of its own, the rest of the row's width: twelve heads wrap there (straight in the row, the
            # 12th was cut at a projector's 1024 px).
            row.container().pills(f"{KIND_TITLES[kind]} layer {layer}: heads pruned", list(range(checkpoint.heads)),
                                  selection_mode="multi", key=layer_key[kind, layer], label_visibility="collapsed")
pruned = head_set(chosen())
# The pruned heads travel in the URL (pages/components/url_state.py): shared links open with the same heads pruned.
st.session_state["url_pruned"] = format_heads(pruned)
if pruned:
    st.query_params["pruned"] = format_heads(pruned)
elif "pruned" in st.query_params:
    del st.query_params["pruned"]
st.caption(f"{len(pruned)} of {plural(len(heads), 'head')} pruned" + (f": {format_heads(pruned)}. {HEAD_NAMING}"
                                                                   if pruned else ""))

show_pruned_output(checkpoint, pruned, least, importance)    # pages/components/prune_output_section.py

if pruned:       # a score of the pruned model against itself says nothing
    show_corpus_score(checkpoint, pruned)        # pages/components/prune_corpus_section.py

show_pruning_curve(checkpoint, heads, importance, normalisation)      # pages/components/prune_curve_section.py
