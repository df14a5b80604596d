"""What the Internals and Decoding pages compute for Hugging Face models, checked against the models' own
numbers: position tables, the first layer's input, the Q/K/V walkthrough, the beam tree's scores, teacher
forcing's loss and BERT's masked-token view. Tiny random models (tests/hugging_face_models.py)."""

import numpy as np
import pytest
import torch

from explorer.decoding_steps import beam_tree, step_attention_row, teacher_forcing
from explorer.hugging_face_decoding import maskable_positions, masked_word
from explorer.internals import qkv_walkthrough
from explorer.open_model import open_model
from explorer.hugging_face_trace import trace_hugging_face
from models.hooks import model_run
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model


@pytest.fixture(scope="module", params=list(FAMILIES))
def opened(request, tmp_path_factory):
    checkpoint = open_model(saved_model(request.param, tmp_path_factory))
    return checkpoint, trace_hugging_face(checkpoint.model, checkpoint.tokenizer, SENTENCE)


def test_position_tables_are_the_models_own_rows(opened):
    checkpoint, trace = opened
    model, family = checkpoint.model.model, checkpoint.model.family
    for side, stack in (("source", "encoder"), ("target", "decoder")):
        if side not in trace.positional:
            continue
        length = len(trace.source_ids if side == "source" else trace.target_ids)
        if family in ("marian", "bart"):
            table, offset = getattr(model.model, stack).embed_positions.weight, 2 if family == "bart" else 0
        elif family == "bert":
            table, offset = model.bert.embeddings.position_embeddings.weight, 0
        else:
            table, offset = model.transformer.wpe.weight, 0
        np.testing.assert_allclose(trace.positional[side], table[offset: offset + length].detach().numpy(), atol=1e-6)
        if family in ("marian", "gpt2"):        # no layer norm after the sum: input = embedding + position
            np.testing.assert_allclose(trace.inputs[side], trace.embeddings[side] + trace.positional[side], atol=1e-5)
    assert set(trace.positional) == {"bert": {"source"}, "gpt2": {"target"}}.get(family, {"source", "target"})


def test_the_walkthrough_reproduces_the_pattern_and_the_blocks_output(opened):
    checkpoint, trace = opened
    kind = next(iter(trace.attention))
    walk = qkv_walkthrough(trace, checkpoint, kind, 1, 2, 1)
    np.testing.assert_allclose(walk.weights, trace.pattern(kind)[1, 2, 1], atol=1e-6)
    np.testing.assert_allclose(walk.scaled, trace.attention[kind]["scores"][1, 2, 1], atol=1e-5)
    _, cache = checkpoint.model.run_with_cache(f"*{kind}*.1.*out" if kind != "cross" else "*1.cross_attn.out",
                                               **model_inputs(checkpoint, trace))
    block_output = next(iter(cache.values()))[0, 1].numpy()
    if checkpoint.model.family != "bert":      # BERT's block output is after its residual and layer norm
        np.testing.assert_allclose(walk.output, block_output, atol=1e-5)


def model_inputs(checkpoint, trace):
    if "cross" in checkpoint.model.kinds:
        return {"input_ids": torch.tensor([trace.source_ids]), "decoder_input_ids": torch.tensor([trace.target_ids])}
    return {"input_ids": torch.tensor([trace.source_ids or trace.target_ids])}


def test_the_beam_trees_scores_are_the_models_log_probabilities(opened):
    checkpoint, trace = opened
    if "decoder" not in checkpoint.model.kinds:
        pytest.skip("an encoder-only model does not decode")
    result = beam_tree(checkpoint, SENTENCE, 3, alpha=0.0)
    best = result.best
    config = checkpoint.model.model.config
    ended = best.tokens + [config.eos_token_id]
    with torch.no_grad():
        if "cross" in checkpoint.model.kinds:
            logits = checkpoint.model.model(input_ids=torch.tensor([trace.source_ids]), decoder_input_ids=torch.tensor(
                [[config.decoder_start_token_id] + best.tokens])).logits[0]
            log_probs = torch.log_softmax(logits, -1)
        else:
            prompt = trace.target_ids[: trace.first_step_position + 1]
            logits = checkpoint.model.model(input_ids=torch.tensor([prompt + best.tokens])).logits[0]
            log_probs = torch.log_softmax(logits, -1)[len(prompt) - 1:]
    steps = len(best_log_probs := result.best_log_probs)
    chosen = ended[:steps]
    total = float(log_probs[torch.arange(steps), chosen].sum())
    assert best.log_prob == pytest.approx(total, abs=1e-4)
    assert best.score == best.log_prob                                      # alpha 0: no length penalty
    assert all(a.score >= b.score for a, b in zip(result.finished, result.finished[1:]))
    assert best_log_probs.shape[-1] == logits.shape[-1]


def test_teacher_forcing_loss_is_the_models_cross_entropy(opened):
    checkpoint, trace = opened
    if "cross" not in checkpoint.model.kinds:
        pytest.skip("translation models only (GPT-2's continuation is checked below)")
    forced = teacher_forcing(checkpoint, SENTENCE, "two men play football")
    labels = checkpoint.tokenizer(text_target="two men play football", return_tensors="pt").input_ids
    with torch.no_grad():
        loss = checkpoint.model.model(input_ids=torch.tensor([trace.source_ids]), labels=labels).loss
    assert forced.loss == pytest.approx(float(loss), abs=1e-5)
    assert len(forced.tokens) == labels.shape[1] and all(r >= 1 for r in forced.ranks)


def test_a_continuation_is_scored_after_the_prompt(opened):
    checkpoint, trace = opened
    if checkpoint.model.family != "gpt2":
        pytest.skip("decoder-only models")
    forced = teacher_forcing(checkpoint, SENTENCE, "in the snow")
    prompt = checkpoint.tokenizer(SENTENCE).input_ids
    continuation = checkpoint.tokenizer(" in the snow").input_ids
    with torch.no_grad():
        logits = checkpoint.model.model(input_ids=torch.tensor([prompt + continuation])).logits[0]
    expected = torch.log_softmax(logits, -1)[torch.arange(len(prompt) - 1, len(prompt) + len(continuation) - 1),
                                             continuation]
    np.testing.assert_allclose(forced.probabilities, expected.exp().numpy(), atol=1e-6)
    # the step rows of the decoding page are the positions that chose each new token
    np.testing.assert_allclose(step_attention_row(trace, 0, 0, 1), trace.pattern("decoder")[0, 1, len(prompt) - 1])


def test_the_masked_token_view_predicts_from_the_masked_input(opened):
    checkpoint, trace = opened
    if checkpoint.model.family != "bert":
        pytest.skip("BERT-like models")
    positions = maskable_positions(trace, checkpoint)
    special = set(checkpoint.tokenizer.all_special_ids)
    assert positions and all(trace.source_ids[i] not in special for i in positions)
    position = positions[1]
    masked = masked_word(checkpoint, trace, position)
    ids = list(trace.source_ids)
    ids[position] = checkpoint.tokenizer.mask_token_id
    with torch.no_grad():
        probs = torch.softmax(checkpoint.model.model(input_ids=torch.tensor([ids])).logits[0, position], -1)
    assert masked.prediction.chosen_id == trace.source_ids[position]
    assert masked.prediction.chosen_prob == pytest.approx(float(probs[trace.source_ids[position]]), abs=1e-6)
    assert masked.prediction.top_probs[0] == pytest.approx(float(probs.max()), abs=1e-6)
    # the head effect is the gradient of log p(hidden) w.r.t. each head's gate: check one against a finite difference
    layer, head = np.unravel_index(masked.head_effect.argmax(), masked.head_effect.shape)
    gates = torch.ones(checkpoint.model.layers("encoder"), checkpoint.model.heads, dtype=torch.float64)

    def log_p(gate_value):
        gates[layer, head] = gate_value
        with torch.no_grad(), model_run(head_mask={"encoder": gates.float()}):
            logits = checkpoint.model.model(input_ids=torch.tensor([ids])).logits[0, position].double()
        return float(torch.log_softmax(logits, -1)[trace.source_ids[position]])

    slope = (log_p(1.0) - log_p(1.0 - 1e-3)) / 1e-3
    assert abs(slope) == pytest.approx(masked.head_effect[layer, head], rel=0.05, abs=1e-4)
    assert masked.attention.shape == (checkpoint.model.layers("encoder"), checkpoint.model.heads, len(ids))
