"""Papers: the replication bench. Each paper's claim, its setting and number (with the table or figure it comes
from), the same measurement on the open model, and a verdict by a stated rule (explorer/papers/bench.py)."""

import json

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.shipped_analyses import analyses_folder, shipped
from explorer.pages.components.glossary_links import linked
from explorer.pages.components.jobs import corpus_job
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.paper_columns import installed_benches, show_beside
from explorer.pages.components.session import current_checkpoint
from explorer.papers.bench import REPLICATION_FILE, VERDICTS, Budget
from explorer.teaching.wording import HEAD_NAMING

# Words, not emoji: a browser without an emoji font would draw empty boxes.
VERDICT_MARKS = {verdict: verdict.upper() for verdict in VERDICTS}


def breakable(text: str) -> str:
    """The text with a zero-width space after each "/", where a narrow table cell may break a path."""
    return text.replace("/", "/\u200b")


def card_key(card: dict) -> str:
    """The key of a card's expander, which holds whether it is open: by the paper's short name."""
    return f"papers_card_{card.get('name') or card['paper']}"


st.title("Papers")
st.caption("The papers behind this explorer's analyses, each claim rerun on the open model: the paper's number "
           "beside ours, and a verdict on whether the claim holds here.")
checkpoint = current_checkpoint()
pruning_notice(checkpoint, "full", "each paper's claim is measured on the model as trained; its own pruning "
               "experiments (Michel et al., Voita et al.) choose which heads to prune themselves.")
key = f"replication:{checkpoint.path}|{checkpoint.target_language}"     # this session's run, per model
st.caption("A verdict follows the rule its card states: **holds** (the effect is there, of the paper's size), **partly** "
           "(same direction, smaller or only some of it), **does not**, **inconclusive** (a 95% interval straddles "
           "the rule's threshold and the verdict turns on it: more sentences may decide), or **not measurable** (the "
           "model lacks what the claim needs: causal attention, an encoder, a translation to score). The bundled "
           f"models are 3 + 3-layer translators of 29,000 image captions ({linked('Multi30k')}); the papers studied "
           f"{linked('WMT')} systems, BERT, LSTMs and language models, so a model may differ for reasons each card "
           "names.")

report = st.session_state.get(key) or shipped(checkpoint, REPLICATION_FILE)
if report is None:
    st.info("This model ships no replication.json: run the bench on it (it measures each paper on a few hundred "
            "sentences; minutes on a laptop CPU).")
shown_budget = int((report or {}).get("sentences", Budget.sentences))       # a rerun starts from the shipped run's budget
sentences = st.number_input("Sentences per heavy measurement", 20, 1000, shown_budget, step=20, key="papers_sentences",
                            help="Faithfulness, sinks, permutation and pruning measure on this many corpus sentences.")
if st.button("Run the bench on this model" if report is None else "Run it again on this model", key="papers_run"):
    from explorer.papers.replication import replicate

    with corpus_job("running the replication bench"):
        bar = st.progress(0.0, text="Measuring each paper…")
        st.session_state[key] = replicate(checkpoint, budget=Budget(sentences=int(sentences),
                                                                    progress=lambda f: bar.progress(f)))
    st.rerun()
if report is None:
    st.stop()

cards = report["papers"]
# A static table: every row and every word in view (a scrolling grid cut the long texts and hid the last rows).
# A path in a cell may break after each "/" (a zero-width space): unbroken, "explorer/analyses/lecture/induction_demo.py)."
# held its column 243 px wide and pushed the table past a projector's 562 px column.
summary = pd.DataFrame([{"paper": card["paper"], "verdict": VERDICT_MARKS.get(card["verdict"], card["verdict"]),
                         "claim": breakable(card["claim"]), "the paper's number": breakable(card["paper_value"]),
                         "ours": breakable(card["ours"] or "—")} for card in cards])
st.table(summary.set_index("paper"))
st.caption("Each card below gives our measurement, the rule behind its verdict, the command that reproduces it and "
           "the raw numbers. " + HEAD_NAMING)
st.download_button("⬇ JSON", json.dumps(report, ensure_ascii=False, indent=1), file_name=f"replication-{checkpoint.name}.json",
                   mime="application/json", key="papers_json",
                   help="The object `python -m explorer replicate --model M --json` prints (replication.json).")

beside = installed_benches(analyses_folder(checkpoint))     # an installed pretrained encoder's column
# Each card is drawn only while open (a lazy expander): nine folded cards, drawn, took the browser 0.7 s of each
# change to this page (1.03 s with them, 0.35 s without).
for card in cards:
    box = st.expander(f"{card['paper']}: {VERDICT_MARKS.get(card['verdict'], card['verdict'])}",
                      key=card_key(card), on_change="rerun")
    if not box.open:
        continue
    with box:
        st.markdown(f"**Claim.** {card['claim']}")
        st.markdown(f"**The paper.** {card['setting']} — {card['paper_value']} ({card['source']}).")
        st.markdown(f"**Ours.** {card['ours'] or '—'}")
        st.markdown(f"**Verdict: {card['verdict']}.** {card['rule']}")
        if card["command"]:
            st.code(card["command"], language="bash")
        show_beside(card, checkpoint.name, beside)
        if card.get("numbers"):
            st.json(card["numbers"], expanded=False)
        if card.get("name") == "olsson":
            from explorer.pages.components.induction_section import show_induction_demo

            show_induction_demo()
