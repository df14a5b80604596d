"""The notebook API a study builds on (issue 60): run_with_cache and run_with_hooks take a string, a padded batch of
strings or token ids; each batch row equals its sentence run alone; the cache reads by shorthand; grad=True keeps
the graph; every layer's streams are hook points (checked against transformers' own hidden states); a greedy
target is decoded once; the text is read as typed; the corpus studies return their records."""

from __future__ import annotations

import json

import pytest
import torch

import explorer
from explorer.models.hooks import HookNameError
from explorer.models.loader import open_model
from explorer.models.vocabulary import layer_hook
from tests.hugging_face_models import saved_model

SHORT, LONG = "A dog runs.", "Two young men are playing football on a green field."


@pytest.fixture(scope="module")
def minilm():
    return open_model("all-MiniLM-L6-v2")


def assert_rows_equal_single_runs(model, names: str) -> None:
    """Each row of a batch of two sentences of different lengths equals the sentence run alone, on its positions
    (the padded ones masked as the model masks them)."""
    _, batch = explorer.run_with_cache(model, [SHORT, LONG], names=names)
    for row, sentence in enumerate([SHORT, LONG]):
        _, alone = explorer.run_with_cache(model, sentence, names=names)
        assert alone.keys() == batch.keys()
        for name, value in alone.items():
            own = batch[name][row][tuple(slice(0, size) for size in value.shape[1:])]
            torch.testing.assert_close(own, value[0], atol=1e-5, rtol=1e-5, msg=name)


def test_a_batch_row_is_its_sentence_run_alone_on_an_encoder_decoder(h8):
    assert_rows_equal_single_runs(h8, "*.pattern")


def test_a_batch_row_is_its_sentence_run_alone_on_a_sentence_encoder(minilm):
    assert_rows_equal_single_runs(minilm, "*.pattern")
    embeddings, _ = explorer.run_with_cache(minilm, [SHORT, LONG], names=[])
    alone, _ = explorer.run_with_cache(minilm, LONG, names=[])
    torch.testing.assert_close(embeddings[1], alone[0], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_batch_row_is_its_sentence_run_alone_on_a_decoder_only_model(family, tmp_path_factory):
    model = open_model(saved_model(family, tmp_path_factory))
    assert_rows_equal_single_runs(model, "*.pattern")


def test_token_ids_read_as_the_string_does(h8, minilm):
    for model in (h8, minilm):
        ids = torch.tensor([model.encode(SHORT).ids])
        from_ids, cache_ids = explorer.run_with_cache(model, ids, names="*.layers.0.*")
        from_text, cache_text = explorer.run_with_cache(model, SHORT, names="*.layers.0.*")
        torch.testing.assert_close(from_ids, from_text, atol=0, rtol=0)
        for name in cache_text:
            torch.testing.assert_close(cache_ids[name], cache_text[name], atol=0, rtol=0)


def test_the_cache_reads_by_shorthand(h8, minilm):
    _, one_stack = explorer.run_with_cache(minilm, SHORT)
    assert torch.equal(one_stack["pattern", 0], one_stack["encoder.layers.0.self_attn.pattern"])
    assert torch.equal(one_stack["resid_post", 5], one_stack[layer_hook("encoder", 5)])
    assert torch.equal(one_stack["embed"], one_stack["encoder.embed"])
    _, two_stacks = explorer.run_with_cache(h8, SHORT)
    for kind, name in (("encoder", "encoder.layers.0.self_attn.pattern"), ("decoder", "decoder.layers.0.self_attn.pattern"),
                       ("cross", "decoder.layers.0.cross_attn.pattern")):
        assert torch.equal(two_stacks["pattern", 0, kind], two_stacks[name])
    assert torch.equal(two_stacks["resid_mid", 1, "decoder"], two_stacks["decoder.layers.1.resid_mid"])
    with pytest.raises(KeyError, match="add where it is"):
        two_stacks["pattern", 0]                            # three blocks have a layer-0 pattern
    with pytest.raises(KeyError, match="say which layer"):
        two_stacks["pattern"]
    with pytest.raises(KeyError, match="is no value"):
        two_stacks["attention", 0]


def test_grad_keeps_the_graph_for_attribution_patching(h8):
    logits, cache = explorer.run_with_cache(h8, SHORT, names="*.cross_attn.z", grad=True)
    assert logits.requires_grad and logits.grad_fn is not None
    z = cache["z", 1, "cross"]
    (gradient,) = torch.autograd.grad(logits[0, -1].logsumexp(-1), z)
    assert gradient.shape == z.shape and gradient.abs().sum() > 0
    plain, plain_cache = explorer.run_with_cache(h8, SHORT, names="*.cross_attn.z")
    assert not plain.requires_grad and not plain_cache["z", 1, "cross"].requires_grad
    torch.testing.assert_close(plain, logits.detach(), atol=1e-5, rtol=1e-5)


def test_resid_post_is_transformers_hidden_states_on_minilm(minilm):
    """The real pretrained encoder: every layer's resid_post is transformers' hidden_states[layer + 1], resid_pre its
    hidden_states[layer] (the independent side: transformers' own output_hidden_states)."""
    _, cache = explorer.run_with_cache(minilm, [SHORT, LONG], names="*.resid_*")
    batch = minilm.pad([minilm.encode(SHORT).ids, minilm.encode(LONG).ids])
    with torch.no_grad():
        theirs = minilm.model(input_ids=batch.ids, attention_mask=batch.present.long(),
                              output_hidden_states=True).hidden_states
    for layer in range(minilm.layers("encoder")):
        torch.testing.assert_close(cache["resid_post", layer], theirs[layer + 1], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(cache["resid_pre", layer], theirs[layer], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["en-de-h8", "all-MiniLM-L6-v2"])
def test_every_layer_of_every_stack_has_its_streams(name, h8, minilm):
    model = {"en-de-h8": h8, "all-MiniLM-L6-v2": minilm}[name]
    for stack in ("encoder", "decoder"):
        for layer in range(model.layers(stack)):
            for value in ("resid_pre", "resid_mid", "resid_post", "mlp_out", "ln1", "ln2"):
                assert layer_hook(stack, layer, value) in model.hook_names
    assert model.layers("encoder") > 0


def test_a_greedy_target_is_decoded_once_for_every_hooked_run(h8, monkeypatch):
    sentence = "A man rides a bicycle down the street."
    calls = []
    decode = h8.generate
    monkeypatch.setattr(h8, "generate", lambda *args, **kwargs: calls.append(1) or decode(*args, **kwargs))
    runs = [explorer.run_with_hooks(h8, sentence, [explorer.ablate_head("cross", 0, head)]) for head in range(4)]
    assert len(calls) == 1 and len({tuple(run.output_ids) for run in runs}) == 1
    fixed = explorer.run_with_hooks(h8, sentence, [explorer.ablate_head("cross", 0, 3)],
                                    target=h8.detokenize(runs[0].output_ids))
    assert fixed.output_log_prob() == pytest.approx(runs[3].output_log_prob(), abs=1e-5)


def test_the_text_is_read_exactly_as_typed(h8):
    """No silent recasing: the trace, run_with_hooks and the tokenizer read the same ids for the same string."""
    typed = "THE DOG RUNS."
    trace = explorer.trace_sentence(h8, typed)
    assert trace.source_ids == h8.encode(typed).ids and trace.recased_from == ""
    assert explorer.run_with_hooks(h8, typed).source_tokens == h8.pieces(h8.encode(typed).ids)
    recased = explorer.trace_sentence(h8, typed, recase=True)
    assert recased.source_ids == h8.encode("The dog runs.").ids and recased.recased_from == typed


def test_bad_inputs_get_one_line(h8):
    with pytest.raises(explorer.capture.inputs.InputError, match="token ids are a LongTensor"):
        explorer.run_with_cache(h8, torch.zeros(1, 3))
    with pytest.raises(explorer.capture.inputs.InputError, match="outside en-de-h8's vocabulary"):
        explorer.run_with_cache(h8, torch.tensor([[10**7, 3]]))
    with pytest.raises(explorer.capture.inputs.InputError, match="2 outputs for 1 inputs"):
        explorer.run_with_cache(h8, SHORT, target=["Ein Hund.", "Zwei Hunde."])
    with pytest.raises(HookNameError):
        explorer.run_with_cache(h8, SHORT, names="*.resid_middle")


def test_the_corpus_studies_are_public_and_answer_as_the_command_line(tiny_checkpoint, tmp_path):
    from explorer.cli import main as cli

    sentences = ["a dog runs in the park", "two men play football", "a woman sings on a stage"]
    references = ["ein hund rennt im park", "zwei männer spielen fußball", "eine frau singt auf einer bühne"]
    (tmp_path / "src.txt").write_text("\n".join(sentences))
    (tmp_path / "ref.txt").write_text("\n".join(references))
    roles = explorer.roles(tiny_checkpoint, text=sentences)
    assert {"heads", "thresholds", "corpus"} <= set(roles.to_json())
    assert list(roles.table().index) == [head.spec for head in roles.heads]
    report = explorer.importance(tiny_checkpoint, tmp_path / "src.txt", references, gradient_only=True)
    table = report.table()
    assert table.loc[report.heads[0].spec, "gradient_importance"] == report.heads[0].gradient_importance
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli(["importance", "--model", str(tiny_checkpoint.path), "--src", str(tmp_path / "src.txt"), "--ref",
                    str(tmp_path / "ref.txt"), "--gradient-only", "--json"]) == 0
    from_cli = json.loads(printed.getvalue())
    for head, ours in zip(from_cli["heads"], report.to_json()["heads"]):
        assert head["gradient_importance"] == pytest.approx(ours["gradient_importance"], rel=1e-6)
    bench = explorer.replicate(tiny_checkpoint, "vaswani", sentences=3)
    assert [card.extra["name"] for card in bench.papers] == ["vaswani"]
    assert bench.table().loc["vaswani", "verdict"] == bench.papers[0].verdict
    assert bench.to_json()["papers"][0]["name"] == "vaswani"
