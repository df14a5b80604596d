"""Atlas: every head of a stack on one map (Clark et al. 2019 §6), one head's queries and keys in one plane
(AttentionViz), and a search for heads by behaviour, over the project's captions."""

import streamlit as st

from explorer.models.vocabulary import Kind
from explorer.pages.components import url_state
from explorer.pages.components.atlas_sections import full_name, map_view, search_view, space_view
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.session import chosen_ref, current_checkpoint, view_pruned
from explorer.pages.components.widgets import one_tab_at_a_time
from explorer.teaching.wording import HEAD_NAMING

SENTENCES = (50, 100, 200, 500)

checkpoint = current_checkpoint()
pruning_notice(checkpoint, "full", "the map and the search measure every head as trained (the map marks the pruned "
               "ones ✕).")
st.title("Atlas")
st.caption("Every head of the model at once: which attend alike, what one head's queries and keys pair, and which "
           "heads do a named thing, measured over the project's image captions.",
           help=term_help("head atlas", "head", "layer"))
kinds = [kind.value for kind in Kind if checkpoint.layers(kind.value)]
# The stack of the head chosen elsewhere (a link's or the Attention page's head=cross.1.2), unless one is kept
linked_kind = (url_state.saved("head") or "").split(".")[0]
url_state.kept("atlas_kind", "kind", kinds, default=linked_kind if linked_kind in kinds else None)
url_state.kept("atlas_sentences", "captions", SENTENCES, encode=str, default=100)
left, middle, right = st.columns(3)
stacks_help = ("the stack whose heads are mapped: the encoder's self-attention, the decoder's masked self-attention, "
               "or cross-attention")
if len(kinds) > 1:
    kind = left.radio("Attention", kinds, key="atlas_kind", horizontal=True, help=stacks_help)
else:                   # one stack: nothing to choose
    kind = kinds[0]
    left.markdown(f"**Attention:** {kind} self-attention", help=stacks_help)
count = middle.select_slider("Captions read", SENTENCES, key="atlas_sentences",
                            help="the first N of Multi30k's validation captions (more: steadier, slower)")
url_state.keep("kind", kind)
url_state.keep("captions", count)

names = [f"{Kind(kind).short}.{layer}.{head}" for layer in range(checkpoint.layers(kind))
         for head in range(checkpoint.heads)]
clicked = st.session_state.pop("atlas_clicked", None)        # a head clicked on the map in the last run
if clicked in names:
    st.session_state["atlas_head"] = clicked
url_state.kept("atlas_head", "head", names, encode=full_name)
if st.session_state.get("atlas_head") not in names:
    st.session_state["atlas_head"] = names[0]
chosen = right.selectbox("Head", names, key="atlas_head", help=HEAD_NAMING)
url_state.keep("head", chosen, encode=full_name)
pruned = {str(spec) for spec in view_pruned(checkpoint)}
ref = chosen_ref()


def the_map() -> None:
    head = map_view(checkpoint, ref, kind, count, chosen, pruned)
    if head and head != chosen:
        st.session_state["atlas_clicked"] = head
        st.rerun()


one_tab_at_a_time({"Head map": the_map,
                   "Queries and keys": lambda: space_view(checkpoint, ref, kind, count, chosen),
                   "Search heads": lambda: search_view(checkpoint, ref, kind, count)}, "atlas_view", "view")
