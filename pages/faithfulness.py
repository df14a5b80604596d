"""Faithfulness: does attention point where the output depends? Leave-one-out and gradient × input beside the
attention-derived scores of each source token, and their rank correlations (Abnar & Zuidema 2020)."""

import pandas as pd
import streamlit as st

from explorer.analyses.sentence.faithfulness import ABNAR_ZUIDEMA, METHOD_TITLES, Faithfulness, Unscorable, faithfulness
from explorer.analyses.sentence.flow import MAX_FLOW_TOKENS
from explorer.analyses.sentence.sentence_similarity import PAIR_SENTENCE
from explorer.capture.inputs import app_casing
from explorer.figures.faithfulness import SCALES, VALUES, faithfulness_figure, scores_table
from explorer.models.interface import Embeds
from explorer.pages.components import url_state
from explorer.pages.components.caches import cached_model
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.notices import greedy_notice, pruning_notice
from explorer.pages.components.session import chosen_ref, selection
from explorer.pages.components.traces import current_trace
from explorer.pages.components.widgets import command_line, show_figure
from explorer.service import ModelRef

PUBLISHED = "Abnar & Zuidema 2020, their model (published)"
CORRELATIONS = ("ρ with leave-one-out", "ρ with gradient × input", PUBLISHED)


def correlation_table(result: Faithfulness) -> pd.DataFrame:
    """Spearman's ρ of each score with the two references on this sentence, beside the numbers Abnar & Zuidema
    published for their own model (not computed here), as the table shows them: two decimals, and a blank where
    there is no number (ρ undefined, or nothing published). Text, since a number column shows a missing value as
    "None"."""
    rows = []
    for method in ("last_layer", "rollout", "flow", "norm", "gradient_x_input"):
        if method not in result.spearman:
            continue
        rows.append({"score": METHOD_TITLES[method], CORRELATIONS[0]: result.spearman[method],
                     CORRELATIONS[1]: result.spearman_gradient.get(method), PUBLISHED: ABNAR_ZUIDEMA.get(method)})
    table = pd.DataFrame(rows, columns=["score", *CORRELATIONS]).set_index("score").astype(float)
    return table.map(lambda value: "" if pd.isna(value) else f"{value:.2f}")


@st.cache_data(max_entries=32, show_spinner="Blanking out each token, taking gradients and attention flow…")
def cached_faithfulness(ref: ModelRef, sentence: str, fix_casing: bool,
                        target_language: str, compared: str = "") -> Faithfulness | str:
    """The analysis of one sentence, or the sentence saying why it cannot be scored."""
    try:
        model = cached_model(ref, target_language)
        return faithfulness(model, sentence, app_casing(model, fix_casing), compared=compared)
    except Unscorable as reason:
        return str(reason)


st.title("Faithfulness")   # first: the notices about the sentence go under it
st.caption("Each row of the figure scores every input token one way, the first two by how much the output depends on "
           "it and the others by how much attention it gets, so where their colours agree attention points at what "
           "matters.", help=term_help("faithfulness"))
checkpoint, trace = current_trace(pruned=())      # scored on the whole model: the notices are about its output
pruning_notice(checkpoint, "full", "faithfulness is scored on the model as trained (the gradients and erasures "
               "of a pruned model would mix two questions).")
greedy_notice("each score explains the model's own most likely output, one token at a time.")
chosen = selection()
embeds = isinstance(checkpoint, Embeds)
# A sentence encoder's output is explained as its similarity to the Translation page's second sentence.
compared = st.session_state.get("embedding_second", PAIR_SENTENCE) if embeds else ""
result = cached_faithfulness(chosen_ref(), chosen.sentence, chosen.fix_casing,
                             checkpoint.target_language, compared)
if isinstance(result, str):
    st.info(f"This sentence cannot be scored: {result}.")
    st.stop()

if embeds:
    explained = (f"the {result.output} (the second sentence is set on the Translation page)", "every position's row "
                 "of the last layer's self-attention, averaged over heads: mean pooling reads every position alike")
elif checkpoint.has("cross"):
    explained = (f"the translation “{result.output}” (greedy, with its end token)", "cross-attention of the last "
                 "layer, averaged over heads and output steps; rollout and flow carry it back through the encoder's "
                 "self-attention to the input tokens")
elif checkpoint.has("decoder"):
    explained = (f"the continuation “{result.output}” (greedy)", "the decoder's self-attention from the positions "
                 "that predict the continuation to the prompt's tokens, last layer, averaged over heads and steps")
else:
    explained = (f"the token it fills in for [MASK]: “{result.output}” (the sentence's [MASK], or else its middle "
                 "token hidden behind [MASK])", "the masked position's row of the last layer's self-attention, "
                 "averaged over heads")
explained_value = "the cosine" if embeds else "log p(output)"
st.caption(
    f"What the output depends on, token by token, for {explained[0]}. **{linked('leave-one-out', 'Leave-one-out')}**: "
    + ("cosine(sentence, second) − cosine(sentence with the token replaced by the unknown token, second)"
       if embeds else "log p(output | sentence) − log p(output | sentence with the token replaced by the unknown "
       f"token), under {linked('teacher forcing')}")
    + "; how much the output loses without the token. "
    f"**{linked('gradient × input', 'Gradient × input')}**: ‖∂ {explained_value}/∂x ⊙ x‖₂ over the token's input "
    "vector. "
    f"**Attention scores**: {explained[1]}; **norm** uses Kobayashi et al.'s "
    f"{linked('norm-based attention', '‖α f(x)‖')} instead of the weights α. "
    "Special tokens are not scored. Pruned heads are not applied here.")

url_state.kept("faithfulness_scale", "faith", list(SCALES), default=VALUES)
scale = st.radio("Colour by", list(SCALES), format_func=SCALES.get, key="faithfulness_scale", horizontal=True)
url_state.keep("faith", scale)
scores = result.scores()
figure = faithfulness_figure(scores, METHOD_TITLES, result.tokens, scale,
                             f"What the output depends on and where attention goes: {len(result.tokens)} tokens")
# A long sentence's figure has its own width (a cell per token at the sizing rule's size): shown at it, scrolling.
show_figure(figure, "faithfulness", scores_table(scores, METHOD_TITLES, result.tokens),
            width="content" if figure.layout.width else "stretch")
for note in result.notes:
    st.caption(f"{note} This sentence has {len(trace.source_tokens) or len(trace.target_tokens)} tokens; flow "
               f"solves a max-flow problem per pair of tokens, so it is capped at {MAX_FLOW_TOKENS}.")

st.subheader("Rank correlation with the references", help=term_help("Spearman ρ"))
# A static table: its long column names wrap (a scrolling grid cut the last one at a 1024 px window's width).
st.table(correlation_table(result).style.set_properties(subset=list(CORRELATIONS), **{"text-align": "right"}))
st.caption(
    f"{linked('Spearman ρ')} between each score and the reference over this sentence's tokens: 1 = "
    "the same order, 0 = unrelated, −1 = reversed; blank where one side is constant. One sentence gives a noisy ρ; "
    "the command line averages it over a corpus (below). "
    "The last column is not computed on this sentence: it holds the numbers Abnar & Zuidema 2020, “Quantifying "
    "Attention Flow in Transformers” (ACL), published in Table 1: in their 6-layer Transformer "
    "encoder predicting verb number (subject–verb agreement), raw attention of layer 6 correlated 0.29 with "
    "blank-out importance, rollout 0.71 and flow 0.70. Their model, task and output (one class, from a classifier "
    "token) differ from this one: compare the pattern, not the digits.")
command_line("`python -m explorer faithfulness --model M --src FILE` averages each ρ over a corpus.")
