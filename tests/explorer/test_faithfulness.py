"""Faithfulness (explorer/analyses/sentence/faithfulness.py): leave-one-out on a model whose output depends on one source token by
construction; leave-one-out and last-layer cross-attention against transformers' own numbers; the input gradient
against finite differences; Spearman against a rank computation by hand; every family; one process = Ray."""

import json

import numpy as np
import pytest
import torch
import transformers

from explorer.analyses.sentence.faithfulness import (
    ATTENTION_METHODS,
    Unscorable,
    faithfulness,
    input_gradient,
    leave_one_out,
    output_log_probs,
    rank_correlation,
    setup_for,
)
from explorer.analyses.sentence.rollout import attention_rollout
from explorer.cli import main
from explorer.models.checkpoint import load_checkpoint
from explorer.models.hooks import model_run
from explorer.models.loader import open_model
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model


def test_the_one_token_the_output_depends_on_ranks_first(tiny_checkpoint):
    """Every other piece of the sentence gets the unknown token's embedding (the embedding is tied, so the
    encoder reads them as <unk> already): blanking them changes nothing, blanking the one kept piece changes the
    output's probability."""
    model = load_checkpoint(tiny_checkpoint.path)                  # a copy: the session's fixture stays as it was
    text = "Two dogs play in the snow."
    ids = model.encode(text).ids
    words = [i for i, token in enumerate(ids) if token not in model.special_ids]
    kept = words[1]
    with torch.no_grad():
        weights = model.model.embedding.weight
        for position in words:
            if ids[position] != ids[kept]:
                weights[ids[position]] = weights[model.unk_id]
    setup = setup_for(model, text)
    scores = leave_one_out(model, setup)
    assert setup.scored == words
    assert int(np.argmax(scores)) == words.index(kept)
    others = np.delete(scores, words.index(kept))
    assert np.abs(others).max() < 1e-4 < scores[words.index(kept)]


def test_leave_one_out_and_cross_attention_equal_transformers_own(tmp_path_factory):
    folder = saved_model("bart", tmp_path_factory)
    model = open_model(str(folder))
    setup = setup_for(model, SENTENCE)
    theirs = transformers.BartForConditionalGeneration.from_pretrained(folder, attn_implementation="eager").eval()
    target = model.decoder_input(setup.source_ids, setup.output_ids[:-1])[0]

    def log_prob(source: list[int]) -> tuple[float, torch.Tensor]:
        with torch.no_grad():
            out = theirs(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([target]),
                         output_attentions=True)
        picked = torch.log_softmax(out.logits[0], -1)[torch.arange(len(target)), setup.output_ids]
        return float(picked.sum()), out.cross_attentions[-1][0]

    whole, cross = log_prob(setup.source_ids)
    expected = []
    for position in setup.scored:
        blanked = list(setup.source_ids)
        blanked[position] = model.unk_id
        expected.append(whole - log_prob(blanked)[0])
    np.testing.assert_allclose(leave_one_out(model, setup), expected, atol=1e-4)
    result = faithfulness(model, SENTENCE)
    last = cross.mean(0).mean(0).numpy()                          # heads, then every output step
    np.testing.assert_allclose(result.attention["last_layer"], last[setup.scored], atol=1e-5)


def test_input_gradient_equals_finite_differences(tiny_checkpoint):
    model = load_checkpoint(tiny_checkpoint.path)
    model.model.double()                                    # central differences need more than float32's digits
    setup = setup_for(model, "A man in an orange hat.")
    gradient, inputs = input_gradient(model, setup)
    direction = torch.randn(inputs.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    step = 1e-4

    def total(shift: float) -> float:
        with torch.no_grad(), model_run(hooks={"encoder.input": lambda x, _: x + shift * direction},
                                        hook_names=model.hook_names):
            return float(output_log_probs(model, setup, [setup.source_ids])[0].double())

    numeric = (total(step) - total(-step)) / (2 * step)
    assert float((gradient * direction).sum()) == pytest.approx(numeric, rel=1e-4)


def ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    result = np.empty(len(values))
    result[order] = np.arange(len(values))
    return result


def test_spearman_is_the_correlation_of_ranks(tiny_checkpoint):
    result = faithfulness(tiny_checkpoint, "A little girl is climbing the stairs of a wooden playhouse.")
    for method in ATTENTION_METHODS:
        by_hand = np.corrcoef(ranks(result.attention[method]), ranks(result.leave_one_out))[0, 1]
        assert result.spearman[method] == pytest.approx(by_hand, abs=1e-9)
    assert np.isnan(rank_correlation(np.ones(4), np.arange(4.0)))


def test_rollout_carries_the_cross_attention_back_through_the_encoder(tiny_checkpoint):
    from explorer.capture.trace import trace_sentence

    text = "Two dogs play in the snow."
    result = faithfulness(tiny_checkpoint, text)
    trace = trace_sentence(tiny_checkpoint, text)
    setup = setup_for(tiny_checkpoint, text)
    rows = trace.pattern("cross")[-1].mean(0)[: len(setup.output_ids)].mean(0)
    np.testing.assert_allclose(result.attention["rollout"],
                               (rows @ attention_rollout(trace.pattern("encoder"))[-1])[setup.scored], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_is_scored_or_says_why(family, tmp_path_factory):
    model = open_model(str(saved_model(family, tmp_path_factory)))
    try:
        result = faithfulness(model, SENTENCE)
    except Unscorable as reason:               # a random tiny model may say nothing: a sentence, not a crash
        assert str(reason)
        return
    assert set(result.attention) == set(ATTENTION_METHODS)
    assert len(result.tokens) == len(result.leave_one_out) == len(result.gradient_x_input) >= 3
    for values in result.attention.values():
        assert values.shape == result.leave_one_out.shape and np.all(np.isfinite(values))
    assert np.all(result.gradient_x_input >= 0) and result.gradient_x_input.max() > 0


def test_too_few_tokens_is_a_reason_not_a_crash(tiny_checkpoint):
    with pytest.raises(Unscorable, match="at least 3"):
        faithfulness(tiny_checkpoint, "A.")


def run(capsys, *args) -> dict:
    capsys.readouterr()
    assert main(list(args)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_cli_bad_corpus_is_one_line(tiny_checkpoint, capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert main(["faithfulness", "--model", str(tiny_checkpoint.path), "--src", str(empty)]) == 1
    assert capsys.readouterr().err.startswith("error: ")


def test_notebook_api(tiny_checkpoint):
    import explorer
    from explorer.analyses.sentence.flow import attention_flow
    from explorer.capture.trace import trace_sentence

    text = "Two dogs play in the snow."
    first = explorer.faithfulness_of(tiny_checkpoint, text)
    again = explorer.faithfulness_of(tiny_checkpoint, text)      # a second call, once the module is imported
    assert first.spearman == again.spearman == faithfulness(tiny_checkpoint, text).spearman
    trace = trace_sentence(tiny_checkpoint, text)
    np.testing.assert_array_equal(explorer.attention_flow(trace, "decoder"), attention_flow(trace.pattern("decoder")))
    with pytest.raises(ValueError, match="self-attention"):
        explorer.attention_flow(trace, "cross")


def test_flow_beyond_its_cap_is_left_out_with_a_note(tiny_checkpoint, monkeypatch):
    import explorer.analyses.sentence.faithfulness as module

    monkeypatch.setattr(module, "MAX_FLOW_TOKENS", 5)
    result = faithfulness(tiny_checkpoint, "Two dogs play in the snow.")
    assert "flow" not in result.attention and "flow" not in result.spearman
    assert result.notes == ["Attention flow is left out: it takes at most 5 tokens (explorer/analyses/sentence/flow.py)."]
