"""The translation of the current sentence, its tokens, and what the model is."""

import pandas as pd
import streamlit as st

from views.session import current_trace

st.title("Translation")   # first: the notices about the sentence go under it
checkpoint, trace = current_trace()
st.caption(f"{checkpoint.name}: {checkpoint.info.get('description', '')} · decoding: {trace.decoding}")
st.subheader("German")
st.text(trace.translation)
st.subheader("Tokens")
st.dataframe(pd.DataFrame({"source (encoder)": pd.Series(trace.source_tokens),
                           "decoder input": pd.Series(trace.target_tokens),
                           "decoder output": pd.Series(trace.output_tokens)}), key="tokens")
scores = checkpoint.info.get("scores", {}).get("test_2016_flickr")
config = checkpoint.model.config
st.caption(f"{config.heads} heads × {config.encoder_layers} encoder and {config.decoder_layers} decoder layers, "
           f"d_model {config.d_model}, d_k {config.d_k}, vocabulary {config.vocab_size}"
           + (f" · test BLEU greedy {scores['bleu_greedy']}, beam 5 {scores['bleu_beam5']}" if scores else ""))
