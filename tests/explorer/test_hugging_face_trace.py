"""Traces of Hugging Face models: tiny random Marian, BART, GPT-2 and BERT with tokenizers built in
tests/hugging_face_models.py (SentencePiece, byte-level BPE, WordPiece). The trace's patterns are transformers' own, its ids are the ids used, and its
greedy output is transformers' greedy output."""

import json

import numpy as np
import pytest
import torch
import transformers

from explorer.hugging_face_trace import load_tokenizer, trace_hugging_face
from explorer.trace import Trace
from models.hugging_face import load_hugging_face
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model


@pytest.fixture(scope="module", params=list(FAMILIES))
def folder(request, tmp_path_factory):
    return saved_model(request.param, tmp_path_factory)


def their_run(folder, trace):
    """transformers' own eager model on the trace's ids: (attentions by our kind names, greedy ids)."""
    config = transformers.AutoConfig.from_pretrained(folder)
    cls = {"marian": transformers.MarianMTModel, "bart": transformers.BartForConditionalGeneration,
           "gpt2": transformers.GPT2LMHeadModel, "bert": transformers.BertForMaskedLM}[config.model_type]
    model = cls.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        if config.model_type in ("marian", "bart"):
            src = torch.tensor([trace.source_ids])
            out = model(input_ids=src, decoder_input_ids=torch.tensor([trace.target_ids]), output_attentions=True)
            greedy = model.generate(src, num_beams=1, do_sample=False, max_new_tokens=2 * src.shape[1] + 10)[0].tolist()
            return {"encoder": out.encoder_attentions, "decoder": out.decoder_attentions,
                    "cross": out.cross_attentions}, greedy
        if config.model_type == "gpt2":
            out = model(input_ids=torch.tensor([trace.target_ids]), output_attentions=True)
            prompt = torch.tensor([trace.target_ids[: len(trace.target_ids) - len(trace.output_tokens)]])
            greedy = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, num_beams=1,
                                    max_new_tokens=30, pad_token_id=config.eos_token_id)[0].tolist()
            return {"decoder": out.attentions}, greedy
        out = model(input_ids=torch.tensor([trace.source_ids]), output_attentions=True)
        return {"encoder": out.attentions}, None


def test_the_trace_holds_transformers_own_patterns_for_the_ids_it_used(folder):
    loaded, tokenizer = load_hugging_face(folder), load_tokenizer(folder)
    trace = trace_hugging_face(loaded, tokenizer, SENTENCE)
    theirs, greedy = their_run(folder, trace)
    assert set(trace.attention) == set(theirs) == set(loaded.kinds)
    for kind, layers in theirs.items():
        for layer, pattern in enumerate(layers):
            np.testing.assert_allclose(trace.pattern(kind)[layer], pattern[0].numpy(), atol=1e-5)
        assert trace.masks[kind].shape == trace.pattern(kind).shape[-2:]
    if greedy is not None:                       # the explorer's greedy output is transformers' greedy output
        eos = loaded.model.config.eos_token_id        # the trace's target ids stop before the final </s>
        assert greedy[: len(trace.target_ids)] == trace.target_ids and greedy[len(trace.target_ids):] in ([], [eos])
        assert len(trace.steps) == len(trace.output_tokens) and all(0 <= s.chosen_prob <= 1 for s in trace.steps)
    if "encoder" in trace.attention:
        assert trace.source_ids == tokenizer(SENTENCE).input_ids


def test_a_trace_of_each_family_saves_and_loads_with_its_own_kinds(folder, tmp_path):
    loaded, tokenizer = load_hugging_face(folder), load_tokenizer(folder)
    trace = trace_hugging_face(loaded, tokenizer, SENTENCE)
    for suffix in (".npz", ".json"):
        again = Trace.load(trace.save(tmp_path / f"trace{suffix}"))
        assert set(again.attention) == set(loaded.kinds) and again.source_ids == trace.source_ids
        assert again.target_ids == trace.target_ids
        np.testing.assert_allclose(again.pattern(loaded.kinds[0]), trace.pattern(loaded.kinds[0]), atol=1e-6)


def test_pruning_every_cross_attention_head_of_marian_cuts_the_output_loose_from_the_source(folder):
    loaded, tokenizer = load_hugging_face(folder), load_tokenizer(folder)
    if "cross" not in loaded.kinds:
        pytest.skip("no cross-attention")
    gates = {"cross": torch.zeros(loaded.layers("cross"), loaded.heads)}
    plain = trace_hugging_face(loaded, tokenizer, SENTENCE)
    pruned = trace_hugging_face(loaded, tokenizer, SENTENCE, head_mask=gates, pruned_text="cross.*.*")
    other = trace_hugging_face(loaded, tokenizer, "two men play football", head_mask=gates)
    assert pruned.target_ids == other.target_ids            # the source no longer reaches the decoder
    assert pruned.pruned == "cross.*.*" and plain.pattern("cross").shape == pruned.pattern("cross").shape


def test_the_cli_traces_and_translates_a_hugging_face_folder(folder, tmp_path, capsys):
    from explorer.cli import main                         # in-process: the CLI's own code, without a new interpreter

    kinds = load_hugging_face(folder).kinds
    assert main(["trace", "--model", str(folder), "--text", SENTENCE, "--out", str(tmp_path / "t.npz")]) == 0
    with np.load(tmp_path / "t.npz", allow_pickle=False) as data:
        meta = json.loads(str(data["metadata"]))
        assert {name.split(".")[0] for name in data.files if name.endswith(".pattern")} == set(kinds)
    assert bool(meta["source_ids"]) == ("encoder" in kinds) and bool(meta["target_ids"]) == ("decoder" in kinds)
    capsys.readouterr()
    code = main(["translate", "--model", str(folder), "--prune", "enc.0.*" if "encoder" in kinds else "dec.0.1", SENTENCE])
    out, err = capsys.readouterr()
    if "decoder" in kinds:
        assert code == 0 and len(out.splitlines()) == 1 and err == ""
    else:
        assert code == 1 and err.startswith("error:") and "encoder only" in err and len(err.splitlines()) == 1
    assert main(["translate", "--model", str(folder), "--prune", "cross.9.0", SENTENCE]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:") and "cross.9.0" in err


def test_the_cli_analyses_every_family_on_the_right_corpus(folder, tmp_path, capsys):
    """evaluate, roles, importance and prune-curve: BLEU on pairs for translation models, perplexity on plain
    lines for GPT-2 and BERT; the wrong corpus shape is one clear line."""
    from explorer.cli import main
    from tests.hugging_face_models import TEXT

    kinds = load_hugging_face(folder).kinds
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    src.write_text("\n".join(TEXT[:5]))
    ref.write_text("\n".join(TEXT[5:10]))
    corpus = ["--src", str(src)] + (["--ref", str(ref)] if "cross" in kinds else [])
    wrong = ["--src", str(src)] + ([] if "cross" in kinds else ["--ref", str(ref)])
    capsys.readouterr()
    assert main(["evaluate", "--model", str(folder), *corpus, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= ({"bleu", "chrf", "sentences"} if "cross" in kinds else {"loss", "perplexity", "lines"})
    assert main(["evaluate", "--model", str(folder), *wrong]) == 1
    assert capsys.readouterr().err.startswith("error:")
    assert main(["importance", "--model", str(folder), *corpus, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["heads"]) == 2 * 4 * len(kinds) and report["metric"] == ("BLEU" if "cross" in kinds else "perplexity")
    (tmp_path / "importance.json").write_text(json.dumps(report))
    assert main(["prune-curve", "--model", str(folder), *corpus, "--importance", str(tmp_path / "importance.json"),
                 "--steps", "2", "--seeds", "1", "--kinds", "all", "--json"]) == 0
    curve = json.loads(capsys.readouterr().out)
    assert curve["kinds"]["all"]["pruned"] == [0, 4 * len(kinds), 8 * len(kinds)] and curve["importance_corpus"] == "src.txt"
    assert main(["roles", "--model", str(folder), "--text", str(src), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["heads"]) == 2 * 4 * len(kinds)


def test_the_notebook_api_opens_a_hugging_face_folder(folder):
    import explorer

    model = explorer.load(str(folder))
    trace = explorer.trace_sentence(model, SENTENCE)
    kind = next(iter(trace.attention))
    figure = explorer.attention_figure(trace, kind, layer=1, head=2)
    np.testing.assert_allclose(np.array(figure.data[0].z, dtype=float), trace.pattern(kind)[1, 2], atol=1e-6)
    assert "<iframe sandbox" in explorer.head_view(trace)._repr_html_() and explorer.model_view(trace).html
    if "decoder" in trace.attention:
        assert explorer.translate(model, [SENTENCE]) == [trace.translation]


def test_beam_search_keeps_generates_best_hypothesis(folder):
    loaded, tokenizer = load_hugging_face(folder), load_tokenizer(folder)
    if "decoder" not in loaded.kinds:
        pytest.skip("an encoder only does not decode")
    trace = trace_hugging_face(loaded, tokenizer, SENTENCE, beam_size=3)
    model = loaded.model
    encoded = tokenizer(SENTENCE, return_tensors="pt")
    with torch.no_grad():
        if "cross" in loaded.kinds:
            best = model.generate(**encoded, num_beams=3, do_sample=False,
                                  max_new_tokens=2 * encoded.input_ids.shape[1] + 10)[0].tolist()
        else:
            best = model.generate(encoded.input_ids, attention_mask=torch.ones_like(encoded.input_ids), num_beams=3,
                                  do_sample=False, max_new_tokens=30, pad_token_id=model.config.eos_token_id)[0].tolist()
    assert trace.decoding == "beam 3" and best[: len(trace.target_ids)] == trace.target_ids
