"""Behaviour that once drifted between our models and Hugging Face models, now one code path for both: the casing
fix, beam search in evaluate, the output's title, Compare starting from the open model, the most important head
by the task's own score, the target language of a multilingual model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import sacrebleu
import torch

from explorer.analyses.corpus.head_table import most_important
from explorer.capture.trace import trace_sentence
from explorer.cli import main as cli
from explorer.models.loader import open_model
from tests.app.conftest import open_page, open_part
from tests.hugging_face_models import OWN_MAX_LENGTH, SENTENCE, TEXT, saved_model


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    folder = saved_model("marian", tmp_path_factory)
    return folder, open_model(folder)


def test_the_casing_fix_feeds_a_hugging_face_model_sentence_case_too(marian):
    _, model = marian
    fixed = trace_sentence(model, SENTENCE.upper(), fix_casing=True)
    assert (fixed.text, fixed.recased_from) == ("A dog plays in the snow", SENTENCE.upper())
    assert fixed.source_ids == model.encode("A dog plays in the snow").ids
    as_typed = trace_sentence(model, SENTENCE.upper())
    assert as_typed.recased_from == "" and as_typed.source_ids == model.encode(SENTENCE.upper()).ids


@pytest.mark.slow
def test_evaluate_with_beam_3_is_transformers_beam_search(marian, tmp_path, capsys):
    folder, model = marian
    sources, references = TEXT[:3] + ["a man rides a bike"], TEXT[10:13] + ["a man rides"]
    (tmp_path / "src.txt").write_text("\n".join(sources))
    (tmp_path / "ref.txt").write_text("\n".join(references))
    assert cli(["evaluate", "--model", str(folder), "--src", str(tmp_path / "src.txt"), "--ref",
                str(tmp_path / "ref.txt"), "--beam", "3", "--keep-casing", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    hypotheses = []
    with torch.no_grad():
        for sentence in sources:
            ids = model.tokenizer(sentence, return_tensors="pt").input_ids
            generated = model.model.generate(ids, num_beams=3, length_penalty=0.6, do_sample=False,
                                              max_new_tokens=min(2 * ids.shape[1] + 10, OWN_MAX_LENGTH - 1))
            hypotheses.append(model.tokenizer.decode(generated[0], skip_special_tokens=True))
    assert result["bleu"] == round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2)
    greedy_beam = cli(["evaluate", "--model", str(folder), "--src", str(tmp_path / "src.txt"), "--ref",
                       str(tmp_path / "ref.txt"), "--beam", "3", "--length-penalty", "2.0", "--json"])
    assert greedy_beam == 0 and json.loads(capsys.readouterr().out)["sentences"] == 4


@pytest.mark.parametrize("family, title", [("ours", "German"), ("marian", "Translation"), ("m2m100", "German (de)"),
                                           ("gpt2", "Continuation"), ("bert", "Predictions for [MASK]")])
def test_the_output_is_titled_by_the_task(family, title, tiny_checkpoint, tmp_path_factory):
    folder = tiny_checkpoint.path if family == "ours" else saved_model(family, tmp_path_factory)
    model = open_model(folder)
    assert model.output_title == title == trace_sentence(model, SENTENCE).output_title
    captions = [c.value for c in open_page("translation.py", SENTENCE, model="Your own checkpoint folder…",
                                           own_model=str(folder)).caption]
    decoding = next(c for c in captions if c.startswith(f"{Path(folder).name}:"))      # the model line
    assert ("decoding:" in decoding) == (family != "bert")        # a masked language model decodes nothing


@pytest.mark.slow
def test_compare_starts_from_the_model_that_is_open(marian):
    folder, _ = marian
    at = open_page("compare.py", SENTENCE, model="Your own checkpoint folder…", own_model=str(folder))
    chosen = at.multiselect(key="compare_models").value
    assert chosen[0] == f"open model ({folder})" and len(chosen) == 3
    bundled = open_page("compare.py", SENTENCE)
    assert bundled.multiselect(key="compare_models").value[0].startswith("8 heads")     # h8, the open one, first


def test_the_most_important_head_is_read_from_the_tasks_own_score():
    bleu = pd.DataFrame({"bleu_change": [-0.5, -2.0, 0.1], "loss_change": [0.3, 0.1, 0.9]},
                        index=["enc.0.0", "enc.0.1", "enc.0.2"])
    assert most_important(bleu) == "enc.0.1 (-2.00 BLEU)"                  # the largest BLEU drop, not the loss
    perplexity = pd.DataFrame({"perplexity_change": [4.0, 9.5, -1.0], "loss_change": [0.3, 0.1, 0.9]},
                              index=["dec.0.0", "dec.0.1", "dec.1.0"])
    assert most_important(perplexity) == "dec.0.1 (+9.50 perplexity)"       # perplexity rises when a head matters
    assert most_important(pd.DataFrame({"gradient_importance": [1.0]}, index=["enc.0.0"])) is None


@pytest.mark.slow
def test_a_multilingual_model_translates_into_the_language_chosen(tmp_path_factory, tmp_path, capsys):
    folder = saved_model("m2m100", tmp_path_factory)
    model = open_model(folder)
    french = model.for_target_language("fr") if "fr" in model.target_languages else model.for_target_language("ru")
    assert french.target_language != model.target_language == "de" and french.model is model.model
    trace = trace_sentence(french, SENTENCE)
    language_token = french.languages[french.target_language]
    assert trace.target_ids[:2] == [french.start_id, language_token] and trace.first_step_position == 1
    assert model.decoder_prefix()[1] != language_token                     # the shared model keeps its own
    assert cli(["translate", "--model", str(folder), "--target-language", french.target_language, SENTENCE]) == 0
    assert capsys.readouterr().out.strip() == trace.output_text
    assert cli(["translate", "--model", str(folder), "--target-language", "xx", SENTENCE]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --target-language xx") and len(err.strip().splitlines()) == 1
    at = open_page("translation.py", SENTENCE, model="Your own checkpoint folder…", own_model=str(folder),
                   target_language=french.target_language)
    assert at.subheader[0].value == french.output_title and at.text[0].value == trace.output_text
    assert at.query_params["lang"] == french.target_language              # kept in the URL


def test_t5s_internals_show_each_heads_relative_bias_and_unscaled_scores(tmp_path_factory):
    import numpy as np

    from explorer.analyses.sentence.internals import qkv_walkthrough
    from explorer.analyses.sentence.positional import bias_by_offset
    from tests.app.test_pages import traces_of

    folder = saved_model("t5", tmp_path_factory)
    model = open_model(folder)
    assert model.architecture.positional == "relative" and model.attention_scaling("encoder", 0) == 1.0
    at = open_page("internals.py", SENTENCE, model="Your own checkpoint folder…", own_model=str(folder))
    at.radio(key="internals_kind").set_value("encoder")
    open_part(at, "Positions")
    charts = {json.loads(c.proto.spec)["layout"]["title"]["text"]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    title = next(t for t in charts if "bias by relative offset" in t)
    trace = trace_sentence(model, SENTENCE)
    length = len(trace.source_tokens)
    offsets, values = bias_by_offset(model.position_bias("encoder", length, length).numpy())
    shown = np.array(traces_of(charts[title])[0]["z"], dtype=float)
    np.testing.assert_allclose(shown, values, atol=1e-6)
    # the bias at offset o is the bias of every (query, query + o) pair: read it back off the full matrix
    full = model.position_bias("encoder", length, length).numpy()
    np.testing.assert_allclose(values[:, list(offsets).index(1)], full[:, 0, 1], atol=1e-7)
    open_part(at, "Q, K, V walkthrough")
    assert any("not divided by √d_k" in c.value for c in at.caption)
    walk = qkv_walkthrough(model, trace, "encoder", 1, 2, 3)      # q·k + bias → softmax = the captured pattern
    np.testing.assert_allclose(walk.weights, trace.pattern("encoder")[1, 2, 3], atol=1e-5)
    np.testing.assert_allclose(walk.scaled, trace.attention["encoder"].value("scores")[1, 2, 3], atol=1e-5)
