"""Attention Explorer: type an English sentence, see how the bundled Transformer translates and attends."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from explorer.figures import attention_heatmap
from explorer.inputs import InputError
from explorer.trace import Trace, trace_sentence
from models.checkpoint import Checkpoint, CheckpointError, load_checkpoint

ROOT = Path(__file__).resolve().parent
BUNDLED = {"8 heads (en-de-h8)": ROOT / "models" / "en-de-h8", "2 heads (en-de-h2)": ROOT / "models" / "en-de-h2",
           "1 head (en-de-h1)": ROOT / "models" / "en-de-h1"}
EXAMPLE = "The dog did not cross the street because it was too tired."


@st.cache_resource(show_spinner="Loading the model…")
def cached_checkpoint(path: str) -> Checkpoint:
    # One model object serves every session: hooks and head masks are per call, never stored on it.
    return load_checkpoint(path)


@st.cache_data(show_spinner="Translating…", max_entries=256)
def cached_trace(path: str, text: str) -> Trace:
    return trace_sentence(cached_checkpoint(path), text)


st.set_page_config(page_title="Attention Explorer", layout="wide")
available = {label: path for label, path in BUNDLED.items() if (path / "config.json").is_file()}
with st.sidebar:
    st.title("Attention Explorer")
    label = st.selectbox("Model", list(available), key="model")
    sentence = st.text_area("English sentence", EXAMPLE, key="sentence", max_chars=5000)

if not available:
    st.error("No bundled checkpoint was found under models/.")
    st.stop()
path = str(available[label])
try:
    checkpoint = cached_checkpoint(path)
    trace = cached_trace(path, sentence)
except (CheckpointError, InputError) as error:
    st.error(str(error))
    st.stop()

if trace.truncated:
    st.warning(f"The sentence was cut to the model's maximum of {checkpoint.model.config.max_len} tokens.")
st.subheader("Translation")
st.text(trace.translation)

config = checkpoint.model.config
left, right = st.columns(2)
layer = left.selectbox("Encoder layer", range(config.encoder_layers), key="layer")
head = right.selectbox("Head", range(config.heads), key="head")
figure = attention_heatmap(trace.pattern("encoder")[layer, head], trace.source_tokens, trace.source_tokens,
                           f"Encoder self-attention, layer {layer}, head {head}")
st.plotly_chart(figure, key="encoder_heatmap")
