"""Compare two or three models side by side on the current sentence: by default the open model beside the
bundled ones (the 1-, 2- and 8-head models: what do more heads buy?), or any models the explorer opens."""

import pandas as pd
import streamlit as st

from explorer.analyses.shipped_analyses import summary
from explorer.figures.attention import focus_rows, focus_strips, layer_heads, models_overview
from explorer.figures.common import (CONTENT_WIDTH, NARROW_WIDTH, NORMS, PANEL_LABELS, cell_size, display_tokens,
                                     is_long, panels_per_row, plural)
from explorer.capture.inputs import InputError
from models.interface import ModelError
from models.vocabulary import ATTENTION_KINDS, KIND_TITLES
from pages.components.access import policy, quoted, refuse
from pages.components.session import (cached_checkpoint, cached_trace, current_checkpoint, greedy_notice, offered_models,
                           pruning_notice, selection, warn_if_truncated, weights_mtime)
from pages.components import url_state
from pages.components.glossary_links import term_help
from pages.components.units import attention_units, in_units
from pages.components.widgets import attention_values, colour_scale, show_figure
from pages.components.head_analyses import head_analysis

MOST = 3

st.title("Compare models")
st.caption("The same sentence through two or three models side by side, to see how differently their heads attend: in "
           "each heatmap a row is a query token and its colours are the weights it puts on each key.",
           help=term_help("attention weight", "head"))
offered = offered_models()
# Compare starts from the model that is open: it comes first, then the other offered models.
opened = selection().model_path
candidates = {label: path for label, path in offered.items() if path == opened}
if not candidates and opened:
    candidates[f"open model ({opened})"] = opened
candidates.update(offered)
if policy().serving:        # a shared server opens only the models its host offered
    if url_state.saved("compare_others"):
        refuse(f"This server compares only its own models, not {quoted(url_state.saved('compare_others'))}.",
               f"compare models {quoted(url_state.saved('compare_others'))}")
        url_state.keep("compare_others", "")
else:
    url_state.kept_text("compare_others", "compare_others")
    others = st.text_area("More models to offer: folders (ours or Hugging Face) or cached hub ids, one per line",
                          key="compare_others", height=68, placeholder="/path/to/opus-mt-en-de")
    url_state.keep("compare_others", others.strip())
    candidates.update({line.strip(): line.strip() for line in others.splitlines() if line.strip()})
url_state.kept_list("compare_models", "compare", list(candidates))
labels = st.multiselect("Models (two or three)", list(candidates), default=list(candidates)[:MOST], key="compare_models",
                        max_selections=MOST)
url_state.keep("compare", "|".join(labels))
if len(labels) < 2:
    st.info("Choose at least two models to compare (the bundled models are models/en-de-h1, -h2 and -h8"
            + ("" if policy().serving else "; add folders or hub ids above") + ").")
    st.stop()

chosen = selection()
models, traces = {}, {}
for label in labels:
    path = candidates[label]
    try:
        language = chosen.target_language if path == chosen.model_path else ""     # the open model as the sidebar has it
        models[label] = cached_checkpoint(path, weights_mtime(path), language)
        traces[label] = cached_trace(path, weights_mtime(path), chosen.sentence, 1, fix_casing=chosen.fix_casing,
                                     target_language=language)
    except ModelError as error:
        st.error(f"{label} cannot be loaded: {error}")
    except InputError as error:
        st.info(str(error))
        st.stop()
labels = list(models)
if len(labels) < 2:
    st.stop()
warn_if_truncated(traces[labels[0]], models[labels[0]])
pruning_notice(current_checkpoint(), "full", "the models compared have different heads (8, 2, 1), so heads pruned in one "
               "have no counterpart in the others; each is shown as trained.")
greedy_notice("the models are compared on the same footing, each writing its most likely token at every step.")

for column, label in zip(st.columns(len(labels)), labels):
    info = models[label].info.get("scores", {}).get("test_2016_flickr", {})
    with column:
        st.subheader(label)
        st.caption(traces[label].output_title)
        st.text(traces[label].output_text or "(a masked language model: no output text)")
        if info:
            st.caption(f"test BLEU greedy {info.get('bleu_greedy')}, beam 5 {info.get('bleu_beam5')}",
                       help=term_help("BLEU", "greedy decoding", "beam search"))

kinds = [kind for kind in ATTENTION_KINDS if any(kind in trace.attention for trace in traces.values())]
values_column, units_column = st.columns(2)
shown = attention_values("compare_values", values_column)   # weights, or Kobayashi et al.'s norms, as on Attention
units = attention_units("compare_units", units_column)      # pieces, or Clark et al.'s words, as on Attention
traces = {label: in_units(trace, models[label], units) for label, trace in traces.items()}
if units == "words":
    st.caption("Words (Clark et al. 2019): attention to a word is the sum over its pieces, from a word the mean of its "
               "pieces' rows, so each row still sums to 1; punctuation and special tokens are words of their own.")
scale = NORMS if shown == "norm" else colour_scale()
if shown == "norm":
    st.caption("Norms ‖α·f(x)‖ have no common top: each figure is coloured from 0 to its own largest norm (its colour "
               "bar says it), so compare the models' patterns, not their shades.")
left, middle, right = st.columns([2, 1, 2])
url_state.kept("compare_kind", "compare_kind", kinds)
kind = left.radio("Attention", kinds, format_func=KIND_TITLES.get, key="compare_kind", horizontal=True,
                  help=term_help("self-attention", "cross-attention"))
url_state.keep("compare_kind", kind)
deepest = max(m.layers(kind) for m in models.values())
url_state.kept("compare_layer", "compare_layer", range(deepest))
layer = middle.selectbox("Layer", range(deepest), key="compare_layer",
                         help="A model with fewer layers shows its last one.")
url_state.keep("compare_layer", layer)
tokens = [traces[label].source_tokens for label in labels]
same_tokens = all(t == tokens[0] for t in tokens) and tokens[0]
focus = None
if same_tokens:
    url_state.kept("compare_focus", "focus", range(len(tokens[0])))
    focus = right.selectbox("Focus on the source token", range(len(tokens[0])), key="compare_focus",
                            format_func=lambda i: f"{i}: {tokens[0][i]}")
    url_state.keep("focus", focus)
    st.caption("Outlined: the focus token — its row (what it attends to) and column (who attends to it) in encoder "
               "self-attention; its column in cross-attention. Decoder self-attention works on each model's own "
               "output.")
else:
    right.caption("These models split the sentence into different tokens, so there is no shared token to focus on.")


names = [models[label].name for label in labels]          # short names, unless two models share one
short = {label: name if names.count(name) == 1 else label for name, label in zip(names, labels)}
having = [label for label in labels if kind in traces[label].attention]      # an encoder-only model: no cross
token = display_tokens([tokens[0][focus]])[0] if focus is not None else ""


def shown_layer(label: str) -> int:
    return min(layer, models[label].layers(kind) - 1)        # a model with fewer layers: its last


def draw(label: str, width: int) -> None:
    """One model's heads of the chosen layer, as many a row as fit `width` px with every token labelled."""
    trace, model = traces[label], models[label]
    if kind not in trace.attention:
        st.caption(f"{label} has no {KIND_TITLES[kind].lower()}.")
        return
    pattern = trace.attention[kind][shown][shown_layer(label)]
    queries, keys = trace.query_tokens(kind), trace.key_tokens(kind)
    heads = "" if "head" in label else f": {plural(model.heads, 'head')}"     # bundled labels say it already
    show_figure(layer_heads(pattern, queries, keys, f"{label}{heads}, {kind} layer {shown_layer(label)}",
                            focus_row=focus if kind == "encoder" else None,
                            focus_column=focus if kind in ("encoder", "cross") else None,
                            per_row=panels_per_row(max(len(queries), len(keys)), model.heads, width),
                            scale=scale),
                f"compare-{model.name}-{kind}-L{shown_layer(label)}", {shown: pattern}, width="content")


def focus_token_strips() -> None:
    """The focus token in every head of every model, the models side by side with every token labelled at any
    length: in encoder self-attention its row (what it attends to), in cross-attention its column (which of each
    model's output tokens attend to it)."""
    if kind == "encoder":
        strips = {short[label]: traces[label].attention[kind][shown][shown_layer(label), :, focus] for label in having}
        rows = {short[label]: traces[label].key_tokens(kind) for label in having}
        title = f"What “{token}” attends to, encoder layer {layer}"
        hover = f"“{token}” attends to<br>%{{text}}"
    else:
        strips = {short[label]: traces[label].attention[kind][shown][shown_layer(label), :, :, focus]
                  for label in having}
        rows = {short[label]: traces[label].query_tokens(kind) for label in having}
        title = f"Which output tokens attend to “{token}”, cross-attention layer {layer}"
        hover = f"%{{text}}<br>attends to “{token}”"
    subtitle = "one column per head; a model with fewer layers shows its last layer"
    show_figure(focus_strips(strips, rows, f"{title}<br><sup>{subtitle}</sup>", hover, scale),
                f"compare-focus-{kind}", strips, width="content")


def every_head_overview() -> None:
    """Every head of every model as whole patterns, small tiles without token labels, in a projector's column."""
    if not having:
        return
    patterns = {short[label]: traces[label].attention[kind][shown][shown_layer(label)] for label in having}
    outlined = f"; outlined: “{token}”" if focus is not None and kind != "decoder" else ""
    show_figure(models_overview(patterns, {short[label]: traces[label].query_tokens(kind) for label in having},
                                {short[label]: traces[label].key_tokens(kind) for label in having},
                                f"Every head of every model, {kind} layer {layer}<br><sup>whole patterns, hover "
                                f"names the tokens{outlined}</sup>",
                                focus_row=focus if kind == "encoder" else None,
                                focus_column=focus if kind in ("encoder", "cross") else None, scale=scale),
                f"compare-{kind}-L{layer}-every-head", patterns, width="content")


# A short sentence: every head of every model drawn whole with every token labelled (while one head's panel of
# each model fits its share of the wide page's width at the sizing rule's cells). Longer, three models' labelled
# panels no longer fit side by side (at 45 words they made an 11-heatmap, 13,500 px page, too wide for a
# projector's column): the models compare side by side on the focus token's row or column, every token labelled,
# with every head's whole pattern as small tiles under it (hover names the tokens; the NPZ has every number).
longest = max(max(len(traces[label].query_tokens(kind)), len(traces[label].key_tokens(kind)))
              for label in having) if having else 0
share = CONTENT_WIDTH // len(labels)
if not is_long(longest) and cell_size(longest) * longest + 12 + PANEL_LABELS <= share:
    if focus is not None and kind == "encoder":
        # The focus token's row in every head of every model, one figure: short rows, shared keys, so the models
        # compare at a glance (the panels below give each head's whole pattern).
        rows = {short[label]: traces[label].attention["encoder"][shown][shown_layer(label), :, focus]
                for label in labels}
        show_figure(focus_rows(rows, tokens[0], token, f"What “{token}” attends to: every head of every model,<br>"
                               f"encoder layer {layer} (a model with fewer layers: its last)", scale),
                    "compare-focus-rows", rows)
    # Each model's heads as many a row as fit a projector's column, the models side by side where the page is
    # wide enough and one under the other where not: a figure is never squeezed into a third of 1024 px.
    models_row = st.container(horizontal=True)
    for label in labels:
        with models_row.container(width="content"):
            draw(label, NARROW_WIDTH)
elif focus is not None and kind != "decoder" and having:
    pair = st.container(horizontal=True)      # side by side in a wide column, one under the other at 1024 px
    with pair.container(width="content"):
        focus_token_strips()
    with pair.container(width="content"):
        every_head_overview()
else:
    st.caption("Decoder self-attention works on each model's own output, so no token is shared to follow across the "
               "models (encoder self-attention and cross-attention follow the focus token): below, every head's "
               "whole pattern; hover names the tokens." if kind == "decoder" else
               "No token is shared to follow across these models: below, every head's whole pattern; hover names "
               "the tokens.")
    every_head_overview()

st.header("Head roles and importance",
          help=term_help("positional head", "syntactic head", "rare-token head", "head importance"))
st.caption("Shipped results (or those computed in this session on the Heads page) at the default thresholds. "
           "\"Most …\" names each model's strongest candidate for a role, whether or not it passes the threshold.")
summaries = {}
for label in labels:
    summaries[label] = summary(head_analysis("roles", models[label]), head_analysis("importance", models[label]))
if any(summaries.values()):
    # One column per model: the long descriptions wrap in their cells instead of running off the table's edge.
    st.table(pd.DataFrame(summaries).astype(object).fillna("").astype(str))
else:
    st.caption("None of these models has head roles or importance yet (the Heads page computes them).")
