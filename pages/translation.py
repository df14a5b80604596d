"""The model's output for the current sentence (a translation, a continuation, a sentence encoder's embedding, or
nothing for a masked language model), its tokens, and what the model is."""

import pandas as pd
import streamlit as st

from explorer.capture.head_sets import all_heads
from explorer.figures.common import font, is_long, plural
from explorer.models.interface import Embeds, Generates
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.sentence_embedding_section import show_sentence_embedding
from explorer.pages.components.session import view_pruned
from explorer.pages.components.traces import current_trace

st.title("Translation")   # first: the notices about the sentence go under it
st.caption("What the model makes of the sidebar's sentence, and the tokens it split the text into: every other page's "
           "figures are labelled with these tokens.")
checkpoint, trace = current_trace()
pruning_notice(checkpoint)
writes = isinstance(checkpoint, Generates)
decoding = "" if not writes else f" · decoding: {trace.decoding}"
st.caption(f"{checkpoint.name}: {checkpoint.info.get('description', '')}{decoding}",
           help=None if not writes else term_help("greedy decoding", "beam search"))
st.subheader(trace.output_title)
if isinstance(checkpoint, Embeds):
    show_sentence_embedding(checkpoint, trace, view_pruned(checkpoint))
elif not writes:
    st.text("This model generates nothing: it fills in masked tokens. The Decoding page hides a token of your "
            "sentence behind the mask and shows what it predicts.")
else:
    st.text(trace.output_text)
    if trace.pruned:        # what the pruning changed, beside it
        st.caption(f"Without pruning (all {plural(len(all_heads(checkpoint)), 'head')}):")
        st.text(current_trace(pruned=(), notices=False)[1].output_text)
st.subheader("Tokens", help=term_help("token", "piece", "encoder", "decoder"))
longest = max(len(trace.source_tokens), len(trace.target_tokens))
if is_long(longest):
    st.caption(f"A long text ({longest} tokens): the figures show every token, zoomable, or a window of it, or small "
               "multiples pooled to fit; each says which.")
if any(token.startswith("▁") for token in trace.source_tokens):
    st.caption(f"▁ marks a {linked('piece')} that starts a word (SentencePiece); a piece without it continues the "
               "word before.")
columns = {"source (encoder)": trace.source_tokens, "decoder input": trace.target_tokens,
           "decoder output": trace.output_tokens}
table = pd.DataFrame({name: pd.Series(tokens) for name, tokens in columns.items() if tokens}).fillna("")
# Every token row shown (no 10-row scroll box): a row's height set, not guessed (projector mode's larger type made
# the rows taller than 35 px and cut the last ones), times the rows and the header, up to 80 rows.
row = font(35)
st.dataframe(table, key="tokens", row_height=row, height=row * (min(len(table), 80) + 1) + 3)
scores = checkpoint.info.get("scores", {}).get("test_2016_flickr")
stacks = " + ".join(f"{checkpoint.layers(kind)} {kind}" for kind in checkpoint.kinds if kind.is_self)
heads = plural(checkpoint.heads, "head")
st.caption(f"{heads} × {stacks} layers, d_model {checkpoint.d_model}, d_k {checkpoint.d_k}"
           + (f" · test BLEU greedy {scores['bleu_greedy']}, beam 5 {scores['bleu_beam5']}" if scores else ""),
           help=term_help("head", "layer", "d_model", "d_k", *(["BLEU"] if scores else [])))
