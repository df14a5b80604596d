"""The Attention page's “Which word does a word look at?”: the lecture's question (“The animal didn't cross the
street because it was too tired.”: where does “it” look?) asked of every layer and head at once, for any word of
the sentence (explorer/analyses/sentence/word_focus.py), with what the heads make of a pronoun whose antecedent is known: the
lecture's two sentences and the captions of this model's pronoun_examples.json (explorer/analyses/lecture/pronoun_examples.py)."""

from __future__ import annotations

import re

import streamlit as st

from explorer.analyses.lecture.pronoun_examples import shipped_examples
from explorer.analyses.sentence.word_focus import (
    LECTURE,
    answer_text,
    default_word,
    find_word,
    focus,
    lecture_pair,
    percent,
    resolution,
    resolution_text,
    why_unresolved,
    word_attention,
    word_keys,
)
from explorer.capture.exports import table_csv
from explorer.capture.head_sets import parse_heads
from explorer.capture.trace import Trace
from explorer.figures.word_focus import focus_table, word_focus_grid
from explorer.models.interface import ExplorerModel
from explorer.models.tokenizer import clean_text
from explorer.pages.components import url_state
from explorer.pages.components.caches import cached_lecture_answer
from explorer.pages.components.session import model_links, partner_model
from explorer.pages.registry import page
from explorer.service import ModelRef

TRY_KEY, WORD_KEY = "word_focus_try", "word_focus_word"
ATTENTION_PAGE = page("attention").name


def plain(text: str) -> str:
    """Text for st.markdown with the sentence's words taken literally (no emphasis, links, LaTeX or markup)."""
    return re.sub(r"([\\`*_\[\]$<>|~#])", r"\\\1", text)


def known_sentences(checkpoint: ExplorerModel) -> dict[str, dict]:
    """sentence → its pronoun, antecedent and option label: the lecture's two sentences, then this model's shipped
    captions (each with the weight measured on this model)."""
    shipped = shipped_examples(checkpoint.path) or {}
    measured = {row["sentence"]: row for row in shipped.get("lecture", [])}
    known = {}
    for text, pronoun, antecedent in LECTURE:
        row = measured.get(text)
        weight = ""
        if row:
            weight = (f", {row['head']} gives it {percent(row['weight'])}"
                      + ("" if row["resolved_by"] else " (no head's top word)"))
        known[text] = {"pronoun": pronoun, "antecedent": antecedent,
                       "label": f"Lecture, “{pronoun}” = “{antecedent}”{weight}: {text}"}
    for row in shipped.get("examples", []):
        known[row["sentence"]] = {"pronoun": row["pronoun"], "antecedent": row["antecedent"],
                                  "label": f"“{row['pronoun']}” = “{row['antecedent']}”, {row['head']} gives it "
                                           f"{percent(row['weight'])}: {row['sentence']}"}
    return known


def _try_sentence() -> None:
    """The chosen sentence goes into the sidebar's box; the word choice starts again from its pronoun."""
    chosen = st.session_state.get(TRY_KEY)
    if chosen:
        st.session_state["sentence"] = chosen
        st.session_state.pop(WORD_KEY, None)
        st.session_state.get(url_state.VIEW, {}).pop("word", None)


def corpus_note(checkpoint: ExplorerModel) -> str:
    """How rare what the examples show is, in this model's shipped measurement ("" without one)."""
    shipped = shipped_examples(checkpoint.path)
    if not shipped:
        return ""
    return (f"How rare this is: {shipped['sentences_scanned']:,} Multi30k captions have a pronoun whose meaning "
            f"gender settles (“his” and one “man”, “her” and one “woman”…). On this model the head with the "
            f"highest mean weight on the antecedent ({shipped['best_head']}, {shipped['best_head_mean_weight']:.0%}) "
            f"makes it its top word in only {shipped['best_head_top_share']:.0%} of them, less often than a random "
            f"pick among the other words would ({shipped['chance_top_share']:.0%}); at least one head does in "
            f"{shipped['any_head_resolves_share']:.0%}. The sentences offered here are those exceptions.")


def word_focus_section(checkpoint: ExplorerModel, trace: Trace) -> None:
    """The section, on the page's trace over pieces (its pruned heads, if any, are marked and never named)."""
    st.header("Which word does a word look at?")
    st.caption("Lectures on “Attention Is All You Need” ask it of “The animal didn't cross the street because it was "
               "too tired.”: which word does “it” attend to? Here for any word of your sentence, in every layer and "
               "head of the self-attention that reads it, over words (Clark et al. 2019), by attention weight.")
    known = known_sentences(checkpoint)
    current = next((text for text in known if clean_text(text) == trace.text), None)
    st.session_state[TRY_KEY] = current        # the option showing is the sentence on the page, or none
    st.selectbox("Try a sentence", list(known), key=TRY_KEY, index=None, on_change=_try_sentence,
                 format_func=lambda text: known[text]["label"],
                 placeholder="The lecture's sentence, or a caption where a head finds the antecedent…",
                 help="Sets the sidebar's sentence; the label says which head gives the antecedent the most weight.")
    note = corpus_note(checkpoint)
    if note:
        st.caption(note)

    reading = word_attention(checkpoint, trace)
    keys = word_keys(reading)
    if not keys:
        st.info("This sentence has no word to look at: only punctuation or special tokens.")
        return
    default = next(key for key, index in keys.items() if index == default_word(reading))
    url_state.kept(WORD_KEY, "word", list(keys), default=default)
    chosen = st.selectbox("Word", list(keys), key=WORD_KEY, format_func=lambda key: key.replace("~", " #"),
                          help="Where this word looks. It starts at the sentence's first pronoun (“it”, “his”, "
                               "“her”…), else its middle word.")
    url_state.keep("word", chosen)
    found = focus(reading, keys[chosen])
    st.markdown(plain(answer_text(reading, found)))
    st.html(word_focus_grid(reading, found))         # a table of text, not a plot (explorer/figures/word_focus.py)
    st.download_button("⬇ CSV", data=lambda: table_csv(focus_table(reading, found)), file_name="word-focus.csv",
                       mime="text/csv", key="csv_word-focus", help="Every head's word, weight, weight on itself and "
                                                                    "on special tokens and punctuation.")
    pruned_note = " Pruned heads are blank and never named." if reading.pruned else ""
    st.caption(f"Each cell: the head's most-attended other word for “{plain(reading.words[found.word])}” and the "
               "weight on it (darker is more, 0–1). Special tokens and punctuation are never named (heads park "
               "weight there, Clark et al.'s “no-op”); hover a cell for what stays on the word itself and on them "
               "(the CSV has it for every head). "
               f"A word's weight is the sum over its pieces, from a word the mean of its pieces' rows.{pruned_note}")

    example = known.get(current) if current else None
    if example and example["pronoun"].lower() == reading.words[found.word].lower():
        antecedent = find_word(reading, example["antecedent"], found.word)
        if antecedent is not None:
            settled = resolution(reading, found, antecedent)
            lecture = current in {text for text, _, _ in LECTURE}
            lines = [resolution_text(reading, found, settled)]
            pruned = [spec for spec in parse_heads(trace.pruned, checkpoint) if spec.kind == reading.kind]
            pair, following = lecture_pair(checkpoint, pruned) if lecture else ("", [])
            if pair:
                lines.append(pair)
            if not settled.resolving or (lecture and not following):
                lines.append(why_unresolved(checkpoint))
            st.info(plain("\n\n".join(lines)))
            partner_answer(checkpoint, current, example)


def partner_answer(checkpoint: ExplorerModel, text: str, example: dict) -> None:
    """The same question on the partner model (MiniLM beside the bundled model, and back), with a link to it."""
    partner = partner_model(checkpoint)
    if partner is None:
        return
    label, path = partner
    answer = cached_lecture_answer(ModelRef.of(path), text, example["pronoun"], example["antecedent"])
    if answer:
        link = url_state.address(ATTENTION_PAGE, model=model_links()[label], sentence=text)
        st.info(f"**On the model “{plain(label)}”** ([open it on this sentence]({link})): " + plain(answer))

