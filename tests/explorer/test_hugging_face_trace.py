"""Traces of Hugging Face models: tiny random models of every family (Marian, BART, GPT-2, BERT, T5, M2M100) with
tokenizers built in tests/hugging_face_models.py (SentencePiece, byte-level BPE, WordPiece). The trace's patterns
are transformers' own, its ids are the ids used, and its greedy and beam outputs are transformers' own."""

import json

import numpy as np
import pytest
import torch

from explorer.analyses.corpus.corpus_scoring import corpus_task
from explorer.capture.head_sets import format_heads, parse_heads
from explorer.capture.trace import Trace, trace_sentence
from explorer.models.interface import TRANSLATE, Generates
from explorer.models.loader import open_model
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model


@pytest.fixture(scope="module", params=list(FAMILIES))
def folder(request, tmp_path_factory):
    return saved_model(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def model(folder):
    return open_model(folder)


def their_model(model, folder):
    """transformers' own class for the folder, with its eager attention (not the explorer's)."""
    return type(model.model).from_pretrained(folder, attn_implementation="eager").eval()


def their_generate(model, folder, trace, **options):
    """transformers' own generate from the trace's input, with the explorer's step limit and without a forced end
    token at that limit (a tiny Marian's config forces id 0, its padding; models/hugging_face.py plain_generation):
    the whole row (an encoder–decoder's start token and forced tokens included; a decoder-only model's prompt
    included)."""
    theirs = their_model(model, folder)
    with torch.no_grad():
        if model.has("encoder"):
            source = torch.tensor([trace.source_ids])
            forced = {"forced_eos_token_id": None}
            if hasattr(model.tokenizer, "get_lang_id"):          # multilingual: the target language comes first
                forced["forced_bos_token_id"] = model.tokenizer.get_lang_id(model.target_language)
            limit = model.step_limit(source.shape[1]) + len(model.decoder_prefix()) - 1
            return theirs.generate(source, attention_mask=torch.ones_like(source), do_sample=False,
                                   max_new_tokens=limit, **forced, **options)[0].tolist()
        prompt = torch.tensor([trace.target_ids[: trace.first_step_position + 1]])
        return theirs.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                               max_new_tokens=model.step_limit(prompt.shape[1]),
                               pad_token_id=theirs.config.eos_token_id, **options)[0].tolist()


def their_run(model, folder, trace):
    """transformers' own eager model on the trace's ids: (attentions by our kind names, logits at the target's
    positions, or the source's for a masked language model)."""
    theirs = their_model(model, folder)
    with torch.no_grad():
        if model.has("cross"):
            out = theirs(input_ids=torch.tensor([trace.source_ids]), decoder_input_ids=torch.tensor([trace.target_ids]),
                         output_attentions=True)
            return {"encoder": out.encoder_attentions, "decoder": out.decoder_attentions,
                    "cross": out.cross_attentions}, out.logits[0]
        ids = trace.source_ids if model.has("encoder") else trace.target_ids
        out = theirs(input_ids=torch.tensor([ids]), output_attentions=True)
        # a sentence encoder's forward is its last layer's states (no vocabulary to predict)
        return {model.kinds[0]: out.attentions}, (out.logits if hasattr(out, "logits") else out.last_hidden_state)[0]


@pytest.mark.slow
def test_the_trace_holds_transformers_own_patterns_for_the_ids_it_used(model, folder):
    trace = trace_sentence(model, SENTENCE)
    theirs, logits = their_run(model, folder, trace)
    assert set(trace.attention) == set(theirs) == set(model.kinds)
    for kind, layers in theirs.items():
        for layer, pattern in enumerate(layers):
            np.testing.assert_allclose(trace.pattern(kind)[layer], pattern[0].numpy(), atol=1e-5)
        assert trace.masks[kind].shape == trace.pattern(kind).shape[-2:]
    # the ids are the tokenizer's own for the text exactly as typed (all in lower case, and not recased)
    read = trace.source_ids if model.has("encoder") else trace.target_ids[: trace.first_step_position + 1]
    assert read == model.tokenizer(SENTENCE).input_ids and trace.text == SENTENCE and trace.recased_from == ""
    if not model.has("decoder"):
        assert trace.steps == [] and trace.output_tokens == [] and trace.target_ids == []
        return
    # the explorer's greedy output is transformers' greedy output, and each step's choice is the token generated
    greedy = their_generate(model, folder, trace, num_beams=1)
    chosen = [step.chosen_id for step in trace.steps]
    assert greedy[: len(trace.target_ids)] == trace.target_ids
    assert greedy[len(trace.target_ids):] in ([], [model.end_id])
    assert chosen == greedy[trace.first_step_position + 1:] and trace.output_tokens == model.pieces(chosen)
    assert trace.output_ids == [token for token in chosen if token != model.end_id]
    assert trace.output_text == model.detokenize(trace.output_ids)
    # each step's probability is what transformers' own model gives the chosen token at that position
    probs = torch.softmax(logits[trace.first_step_position: trace.first_step_position + len(chosen)], -1)
    np.testing.assert_allclose([step.chosen_prob for step in trace.steps],
                               probs[torch.arange(len(chosen)), chosen].numpy(), atol=1e-5)
    assert trace.output_title == model.output_title


@pytest.mark.slow
def test_a_trace_of_each_family_saves_and_loads_with_its_own_kinds(model, tmp_path):
    trace = trace_sentence(model, SENTENCE)
    for suffix in (".npz", ".json"):
        again = Trace.load(trace.save(tmp_path / f"trace{suffix}"))
        assert set(again.attention) == set(model.kinds) and again.source_ids == trace.source_ids
        assert again.target_ids == trace.target_ids and again.first_step_position == trace.first_step_position
        assert set(again.positional) == set(trace.positional) and set(again.inputs) == set(trace.inputs)
        np.testing.assert_allclose(again.pattern(model.kinds[0]), trace.pattern(model.kinds[0]), atol=1e-6)


@pytest.mark.slow
def test_pruning_every_cross_attention_head_cuts_the_output_loose_from_the_source(model):
    if not model.has("cross"):
        pytest.skip("no cross-attention")
    heads = parse_heads("cross.*.*", model)
    plain = trace_sentence(model, SENTENCE)
    pruned = trace_sentence(model, SENTENCE, pruned=heads)
    other = trace_sentence(model, "two men play football", pruned=heads)
    # The source no longer reaches the decoder: the same tokens, up to the shorter sentence's step limit.
    shorter = min(len(pruned.target_ids), len(other.target_ids))
    assert pruned.target_ids[:shorter] == other.target_ids[:shorter] and shorter > 5
    assert pruned.pruned == format_heads(heads) and parse_heads(pruned.pruned, model) == heads
    assert plain.pattern("cross").shape[1:] == pruned.pattern("cross").shape[1:]


@pytest.mark.slow
def test_the_cli_traces_and_translates_a_hugging_face_folder(model, folder, tmp_path, capsys):
    from explorer.cli import main  # in-process: the CLI's own code, without a new interpreter

    kinds = model.kinds
    assert main(["trace", "--model", str(folder), "--text", SENTENCE, "--out", str(tmp_path / "t.npz")]) == 0
    with np.load(tmp_path / "t.npz", allow_pickle=False) as data:
        meta = json.loads(str(data["metadata"]))
        assert {name.split(".")[0] for name in data.files if name.endswith(".pattern")} == set(kinds)
    assert bool(meta["source_ids"]) == ("encoder" in kinds) and bool(meta["target_ids"]) == ("decoder" in kinds)
    capsys.readouterr()
    code = main(["translate", "--model", str(folder), "--keep-casing", "--prune",
                 "enc.0.*" if "encoder" in kinds else "dec.0.1", SENTENCE])
    out, err = capsys.readouterr()
    if not isinstance(model, Generates):
        assert code == 1 and err.startswith("error:") and model.gives in err
        assert len(err.strip().splitlines()) == 1
        return
    assert code == 0 and len(out.splitlines()) == 1 and err == ""
    assert main(["translate", "--model", str(folder), "--prune", "cross.9.0", SENTENCE]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:") and "cross.9.0" in err


@pytest.mark.slow
def test_the_cli_analyses_every_family_on_the_right_corpus(model, folder, tmp_path, capsys):
    """evaluate, roles, importance and prune-curve: BLEU on pairs for translation models, perplexity on plain
    lines for GPT-2 and BERT; the wrong corpus shape is one clear line."""
    from explorer.cli import main
    from tests.hugging_face_models import TEXT

    kinds = model.kinds
    translates = model.task == TRANSLATE
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    src.write_text("\n".join(TEXT[:3]))       # three lines: every head's ablation translates them all
    ref.write_text("\n".join(TEXT[5:8]))
    corpus = ["--src", str(src)] + (["--ref", str(ref)] if translates else [])
    wrong = ["--src", str(src)] + ([] if translates else ["--ref", str(ref)])
    capsys.readouterr()
    assert main(["evaluate", "--model", str(folder), *corpus, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= ({"bleu", "chrf", "sentences"} if translates
                           else {"loss", corpus_task(model).metric_key, "lines"})
    assert main(["evaluate", "--model", str(folder), *wrong]) == 1
    assert capsys.readouterr().err.startswith("error:")
    assert main(["importance", "--model", str(folder), *corpus, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["heads"]) == 2 * 4 * len(kinds) and report["metric"] == corpus_task(model).metric
    (tmp_path / "importance.json").write_text(json.dumps(report))
    assert main(["prune-curve", "--model", str(folder), *corpus, "--importance", str(tmp_path / "importance.json"),
                 "--steps", "2", "--seeds", "1", "--kinds", "all", "--json"]) == 0
    curve = json.loads(capsys.readouterr().out)
    assert curve["kinds"]["all"]["pruned"] == [0, 4 * len(kinds), 8 * len(kinds)] and curve["importance_corpus"] == "src.txt"
    assert main(["roles", "--model", str(folder), "--text", str(src), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["heads"]) == 2 * 4 * len(kinds)


@pytest.mark.slow
def test_the_notebook_api_opens_a_hugging_face_folder(folder):
    import explorer

    model = explorer.load(str(folder))
    trace = explorer.trace_sentence(model, SENTENCE)
    kind = next(iter(trace.attention))
    figure = explorer.attention_figure(trace, kind, layer=1, head=2)
    np.testing.assert_allclose(np.array(figure.data[0].z, dtype=float), trace.pattern(kind)[1, 2], atol=1e-6)
    assert "<iframe sandbox" in explorer.head_view(trace)._repr_html_() and explorer.model_view(trace).html
    if "decoder" in trace.attention:
        assert explorer.translate(model, [SENTENCE]) == [trace.output_text]


@pytest.mark.slow
def test_beam_search_keeps_generates_best_hypothesis(model, folder):
    if not model.has("decoder"):
        pytest.skip("an encoder only does not decode")
    trace = trace_sentence(model, SENTENCE, beam_size=3)
    best = their_generate(model, folder, trace, num_beams=3, length_penalty=0.6)
    assert trace.decoding == "beam 3" and best[: len(trace.target_ids)] == trace.target_ids
    assert best[len(trace.target_ids):] in ([], [model.end_id])
    assert [step.chosen_id for step in trace.steps] == best[trace.first_step_position + 1:]
