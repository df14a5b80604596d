"""A sentence encoder's output on the Translation and Prune pages (explorer/analyses/sentence/sentence_similarity.py): the
sentence's embedding, its cosine similarity to a second sentence, its nearest Multi30k validation captions; with
heads pruned, the cosine between the pruned and the whole model's embedding and the nearest captions each finds."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.shipped_analyses import checkpoint_hash
from explorer.analyses.sentence.sentence_similarity import (
    NEAREST,
    PAIR_SENTENCE,
    caption_embeddings,
    cosine,
    embed_texts,
    nearest,
    pruning_effect,
    validation_captions,
)
from explorer.capture.head_sets import HeadSet, format_heads
from explorer.figures.embedding import embedding_figure
from explorer.pages.components.caches import cached_model
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.session import chosen_ref
from explorer.pages.components.widgets import show_figure
from explorer.service import ModelRef


@st.cache_data(max_entries=8, show_spinner="Embedding the 1,014 validation captions…")
def captions_embedded(ref: ModelRef, pruned: HeadSet = ()):
    """(captions, their embeddings) by the model with these heads pruned: the whole model's read from the disk
    cache after the first time, a pruned model's computed (a few seconds) and kept in memory."""
    model = cached_model(ref)
    captions = validation_captions()
    if not pruned:
        return captions, caption_embeddings(model, captions, checkpoint_hash(model))
    return captions, embed_texts(model, captions, list(pruned))


def neighbours_table(neighbours) -> pd.DataFrame:
    return pd.DataFrame({"caption": [n.caption for n in neighbours], "cosine": [f"{n.cosine:.3f}" for n in neighbours]})


def show_sentence_embedding(checkpoint, trace, pruned: HeadSet) -> None:
    """The Translation page's output for a model that embeds: what its one vector is, and what it is near."""
    st.caption(f"This model writes no text: its output is one vector for the whole sentence, its "
               f"{linked('sentence embedding')}. Sentences that mean alike get vectors pointing alike: their "
               f"{linked('cosine similarity')} is near 1.")
    embedding = embed_texts(checkpoint, [trace.text], list(pruned))[0]
    show_figure(embedding_figure(embedding, len(trace.source_tokens)), "sentence-embedding",
                pd.DataFrame({"dimension": range(len(embedding)), "value": embedding}))
    second = st.text_input("A second sentence to compare with", value=PAIR_SENTENCE, key="embedding_second",
                           persist_state="session", max_chars=1000)
    if second.strip():
        similarity = cosine(embedding, embed_texts(checkpoint, [second], list(pruned))[0])
        st.metric("Cosine similarity of the two sentences", f"{similarity:.3f}", help=term_help("cosine similarity"))
    captions, embeddings = captions_embedded(chosen_ref(), pruned)
    st.markdown(f"**The {NEAREST} nearest of the {len(captions):,} Multi30k validation captions**")
    st.dataframe(neighbours_table(nearest(embedding, captions, embeddings)), key="nearest_captions", hide_index=True)


def show_pruned_embedding(checkpoint, trace, pruned: HeadSet) -> None:
    """The Prune page's comparison for a model that embeds: how far pruning moved the sentence's embedding, and
    how many of the whole model's nearest captions the pruned model still finds."""
    captions, whole = captions_embedded(chosen_ref())
    _, after = captions_embedded(chosen_ref(), pruned)
    effect = pruning_effect(checkpoint, trace.text, list(pruned), captions, whole, after)
    st.header("Sentence embedding", help=term_help("sentence embedding"))
    left, right = st.columns(2)
    left.metric("Cosine, pruned vs whole model", f"{effect.cosine:.3f}", help=term_help("cosine similarity"))
    right.metric("Nearest captions still found", f"{effect.kept} of {NEAREST}")
    st.caption(f"Without {format_heads(list(pruned))}, the embedding of the sentence moved to cosine "
               f"{effect.cosine:.3f} with the whole model's (1 = unchanged). Each model searches its own embeddings "
               f"of the {len(captions):,} validation captions.")
    left, right = st.columns(2)
    left.markdown("**Whole model's nearest**")
    left.dataframe(neighbours_table(effect.whole), key="nearest_whole", hide_index=True)
    right.markdown("**Pruned model's nearest**")
    right.dataframe(neighbours_table(effect.pruned), key="nearest_pruned", hide_index=True)
