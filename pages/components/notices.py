"""What a page says at its top about the person's choices: heads pruned on the Prune page, a decoding the page does
not follow, and what happened to the sentence (cut, recased, unfamiliar, unknown characters)."""

from __future__ import annotations

import streamlit as st

from explorer.capture.decoding_steps import stopping_reason
from explorer.capture.domain import familiarity
from explorer.capture.head_sets import format_heads
from explorer.capture.trace import Trace
from explorer.models.interface import ExplorerModel, Generates, Translates
from explorer.pages.components.session import EXAMPLES, MAX_SENTENCE_CHARS, chosen_model, selection, view_pruned
from explorer.pages.registry import page
from explorer.teaching.lesson_steps import quoted as literally
from explorer.teaching.wording import plural

PRUNE_PAGE = page("prune").name


def pruning_notice(checkpoint: ExplorerModel, shown: str = "pruned", why: str = "") -> None:
    """Say at a page's top what it does with the heads pruned on the Prune page, so no page ignores them silently.
    shown: "pruned" (this page shows the pruned model) or "full" (it shows the whole model, for the reason `why`)."""
    pruned = view_pruned(checkpoint)
    if not pruned:
        return
    heads = plural(len(pruned), "head")
    named = format_heads(pruned)
    if shown == "pruned":
        st.info(f"✂ **{heads} pruned** ({named}): this page shows the model without them. "
                f"Change or undo it on the [Prune]({PRUNE_PAGE}) page.")
    else:
        st.warning(f"✂ **{heads} pruned** on the [Prune]({PRUNE_PAGE}) page ({named}), but this page shows the "
                   f"whole model: {why}")


def greedy_notice(why: str) -> None:
    """Say at a page's top that it decodes greedily whatever the sidebar's decoding (beam search), and why."""
    beam = selection().beam_size
    if beam > 1 and isinstance(chosen_model(), Generates):        # a model that writes nothing decodes nothing
        st.warning(f"The sidebar asks for beam search ({beam} beams), but this page decodes greedily: {why}")


def warn_if_truncated(trace: Trace, checkpoint: ExplorerModel) -> None:
    """Say what happened to input the model cannot take whole: too long, or characters it has never seen."""
    typed = len(st.session_state.get("sentence", ""))
    if typed > MAX_SENTENCE_CHARS:
        st.warning(f"Your text has {typed:,} characters: the explorer reads only its first {MAX_SENTENCE_CHARS:,}.")
    if trace.truncated:
        read = len(trace.source_tokens) or trace.first_step_position + 1     # a decoder-only model: the prompt
        room = "" if checkpoint.has("encoder") else ", the continuation included"
        st.warning(f"The sentence is longer than the model takes (at most {checkpoint.max_positions} tokens{room}): "
                   f"it was cut to its first {read} tokens.")
    # A translation that never chose its end token; a language model's continuation stops at its limit by design.
    if isinstance(checkpoint, Translates) and trace.steps and trace.steps[-1].chosen_id != checkpoint.end_id:
        st.warning(f"The output stops mid-sentence. {stopping_reason(checkpoint, trace)} A sentence this long or "
                   "this far from the training data often makes the model repeat itself.")
    if trace.recased_from:
        st.info(f"You typed {literally(shorten(trace.recased_from))} all in capitals or all in lower case; the model "
                f"was given {literally(shorten(trace.text))}, in sentence case like its training captions. Untick “Fix ALL-CAPS "
                "/ all-lower-case input” in the sidebar to feed it as typed.")
    known = familiarity(trace.text, checkpoint)
    if known is not None and known.in_output_language:
        written = checkpoint.target_language if isinstance(checkpoint, Translates) else ""
        st.info(f"This looks like {written or 'the language the model writes'}"
                f"{', the language the model writes' if written else ''}; it reads English. Type an English "
                f"sentence, e.g. “{EXAMPLES[0]}”")
    elif known is not None and known.out_of_domain:
        named = ", ".join(literally(w) for w in known.unfamiliar[:6]) or "most of its words"
        # The visitor's own sentence in markdown: taken literally (its * [ ] < $ never become markup).
        far = (f"Part of your text, {literally(shorten(known.farthest_sentence))}, is" if known.farthest_sentence
               and known.farthest_log_perplexity > known.log_perplexity else "This sentence is")
        st.info(f"{far} far from what the model was trained on (image captions). Unfamiliar to it: "
                f"{named}. Expect a poor translation; it does best when you describe a picture, e.g. "
                f"“{EXAMPLES[0]}”")
    unknown = checkpoint.unknown_characters(trace.text)
    if unknown:
        unk = checkpoint.pieces([checkpoint.unk_id])[0]
        domain = " It was trained on English image captions." if known is not None else ""
        st.info(f"The model's vocabulary has no piece for {', '.join(literally(u) for u in unknown[:10])}: it reads "
                f"each as {literally(unk)} "
                f"(an unknown token).{domain}")


def shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
