"""What the Internals and Decoding pages compute for Hugging Face models, checked against the models' own
numbers: position tables (T5's relative position bias; Llama's rotary positions), the first layer's input, the
Q/K/V walkthrough, the beam tree's scores, teacher forcing's loss and a masked language model's masked-token view.
Tiny random models of every family (tests/hugging_face_models.py)."""

import numpy as np
import pytest
import torch

from explorer.analyses.sentence.internals import qkv_walkthrough
from explorer.capture.decoding_steps import (
    beam_tree,
    maskable_positions,
    masked_word,
    step_attention_row,
    teacher_forcing,
)
from explorer.capture.trace import trace_sentence
from explorer.models.hooks import model_run
from explorer.models.interface import CONTINUE, FILL_MASK, TRANSLATE
from explorer.models.loader import open_model
from explorer.models.vocabulary import attention_hook
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model

STACKS = {"source": "encoder", "target": "decoder"}


@pytest.fixture(scope="module", params=list(FAMILIES))
def opened(request, tmp_path_factory):
    """(model, its trace of SENTENCE, transformers' own model of the folder with eager attention)."""
    folder = saved_model(request.param, tmp_path_factory)
    model = open_model(folder)
    theirs = type(model.model).from_pretrained(folder, attn_implementation="eager").eval()
    return model, trace_sentence(model, SENTENCE), theirs


def their_position_rows(theirs, stack: str, length: int) -> np.ndarray:
    """transformers' own position table of one stack (learned, or sinusoidal), from the row of position 0 on: BART
    and M2M100 keep rows before it (the module's offset)."""
    base = theirs.base_model
    module = getattr(getattr(base, stack, None), "embed_positions", None)     # encoder–decoders, each stack its own
    if module is None:
        module = base.wpe if hasattr(base, "wpe") else base.embeddings.position_embeddings     # GPT-2, BERT
    table = module.weights if hasattr(module, "weights") else module.weight
    offset = getattr(module, "offset", 0)
    return table[offset: offset + length].detach().numpy()


def their_prefix(model, theirs) -> list[int]:
    """What transformers' own decoder reads before the output: its start token, then the target language's token
    where generate is forced to produce it first (M2M100)."""
    prefix = [theirs.config.decoder_start_token_id]
    if hasattr(model.tokenizer, "get_lang_id"):
        prefix.append(model.tokenizer.get_lang_id(model.target_language))
    return prefix


def sides(model) -> list[str]:
    return [side for side, stack in STACKS.items() if model.has(stack)]


@pytest.mark.slow
def test_position_tables_are_the_models_own_rows(opened):
    model, trace, theirs = opened
    if model.architecture.positional in ("relative", "rotary"):
        pytest.skip("no position table: T5's relative position bias is checked below, rotary positions nothing added")
    assert set(trace.positional) == set(sides(model))
    scale = theirs.config.d_model ** 0.5 if getattr(theirs.config, "scale_embedding", False) else 1.0
    for side in sides(model):
        ids = trace.source_ids if side == "source" else trace.target_ids
        positions = their_position_rows(theirs, STACKS[side], len(ids))
        np.testing.assert_allclose(trace.positional[side], positions, atol=1e-6)
        tokens = (theirs.get_input_embeddings().weight[ids] * scale).detach().numpy()
        np.testing.assert_allclose(trace.embeddings[side], tokens, atol=1e-5)
        # no layer norm after the sum: input = embedding + position
        if "layer norm" not in model.architecture.embedding_steps[2]:
            np.testing.assert_allclose(trace.inputs[side], tokens + positions, atol=1e-5)


@pytest.mark.slow
def test_a_relative_position_bias_is_what_the_scores_add_to_q_dot_k(opened):
    model, trace, theirs = opened
    if model.architecture.positional != "relative":
        pytest.skip("positions come from a table (checked above), or rotate q and k (below)")
    assert trace.positional == {} and trace.embeddings == {} and set(trace.inputs) == set(sides(model))
    for side in sides(model):                            # nothing is added to the token embedding
        ids = trace.source_ids if side == "source" else trace.target_ids
        np.testing.assert_allclose(trace.inputs[side], theirs.get_input_embeddings().weight[ids].detach().numpy(),
                                   atol=1e-5)
    for kind in model.kinds:
        queries, keys = trace.masks[kind].shape
        bias = model.position_bias(kind, queries, keys)
        if kind == "cross":
            assert bias is None
            continue
        stack = getattr(theirs, kind)           # the bias of each stack's first layer, shared by all its layers
        np.testing.assert_allclose(bias.numpy(), stack.block[0].layer[0].SelfAttention.compute_bias(queries, keys)[0]
                                   .detach().numpy(), atol=1e-6)
        values = trace.attention[kind]
        for layer in range(model.layers(kind)):
            dots = values.value("q")[layer] @ values.value("k")[layer].transpose(0, 2, 1) * model.attention_scaling(kind, layer)
            added = values.value("scores")[layer] - dots
            allowed = np.broadcast_to(trace.masks[kind], added.shape)
            np.testing.assert_allclose(added[allowed], bias.numpy()[allowed], atol=1e-4)


def test_rotary_positions_add_nothing_to_the_input_and_nothing_to_the_scores(opened):
    """Llama: layer 0 reads the token embeddings alone, the scores are the (rotated) q·k × scaling with no bias,
    and the angles the Internals page draws come from the model's own rotary module."""
    model, trace, theirs = opened
    if model.architecture.positional != "rotary":
        pytest.skip("rotary positions only")
    assert trace.positional == {} and set(trace.inputs) == {"target"}
    np.testing.assert_allclose(trace.inputs["target"], theirs.get_input_embeddings().weight[trace.target_ids]
                               .detach().numpy(), atol=1e-6)
    assert model.position_bias("decoder", 3, 5) is None
    np.testing.assert_allclose(model.architecture.rotary_frequencies, theirs.model.rotary_emb.inv_freq.numpy())
    values = trace.attention["decoder"]
    for layer in range(model.layers("decoder")):
        dots = values.value("q")[layer] @ values.value("k")[layer].transpose(0, 2, 1) * model.attention_scaling("decoder", layer)
        np.testing.assert_allclose(values.value("scores")[layer], dots, atol=1e-5)


@pytest.mark.slow
def test_the_walkthrough_reproduces_the_pattern_and_the_blocks_output(opened):
    model, trace, _ = opened
    source = model.pad([trace.source_ids]) if model.has("encoder") else None
    target = model.pad([trace.target_ids]) if model.has("decoder") else None
    _, cache = model.run_with_cache(source, target, [attention_hook(kind, 1, "out") for kind in model.kinds])
    for kind in model.kinds:
        query = min(1, trace.masks[kind].shape[0] - 1)
        walk = qkv_walkthrough(model, trace, kind, 1, 2, query)
        allowed = trace.masks[kind][query]
        np.testing.assert_allclose(walk.weights, trace.pattern(kind)[1, 2, query], atol=1e-6)
        np.testing.assert_allclose(walk.scaled[allowed], trace.attention[kind].value("scores")[1, 2, query][allowed],
                                   atol=1e-5)
        assert walk.biased == (model.position_bias(kind, 1, 1) is not None)
        # the output projection W_O of every head's z is what the block's own projection made of them
        np.testing.assert_allclose(walk.output, cache.attention(kind, 1, "out")[0, query].numpy(), atol=1e-5)


def test_the_beam_trees_scores_are_the_models_log_probabilities(opened):
    model, trace, theirs = opened
    if not model.has("decoder"):
        pytest.skip("an encoder-only model does not decode")
    result = beam_tree(model, trace.text, 3, alpha=0.0)          # as the Decoding page: the trace's text
    best = result.best
    ended = best.tokens + [theirs.config.eos_token_id]
    read = model.tokenizer(trace.text).input_ids
    with torch.no_grad():
        if model.has("encoder"):
            prefix = their_prefix(model, theirs)
            logits = theirs(input_ids=torch.tensor([read]), decoder_input_ids=torch.tensor([prefix + best.tokens])
                            ).logits[0]
            log_probs = torch.log_softmax(logits, -1)[len(prefix) - 1:]
        else:
            logits = theirs(input_ids=torch.tensor([read + best.tokens])).logits[0]
            log_probs = torch.log_softmax(logits, -1)[len(read) - 1:]
    steps = len(best.tokens) + best.ended                                   # the end token when it chose it
    chosen = ended[:steps]
    total = float(log_probs[torch.arange(steps), chosen].sum())
    assert best.log_prob == pytest.approx(total, abs=1e-4)
    assert best.score == best.log_prob                                      # alpha 0: no length penalty
    assert all(a.score >= b.score for a, b in zip(result.finished, result.finished[1:]))


def test_teacher_forcing_loss_is_the_models_cross_entropy(opened):
    model, trace, theirs = opened
    if model.task != TRANSLATE:
        pytest.skip("translation models only (a continuation is checked below)")
    forced = teacher_forcing(model, trace.text, "two men play football")
    labels = model.tokenizer(text_target="two men play football", return_tensors="pt").input_ids
    # a multilingual model's labels start with the target language's token: the decoder's prefix, not scored
    forced_first = len(their_prefix(model, theirs)) - 1
    assert labels[0, :forced_first].tolist() == their_prefix(model, theirs)[1:]
    decoder_input = torch.cat([torch.tensor([[theirs.config.decoder_start_token_id]]), labels[:, :-1]], 1)
    labels[:, :forced_first] = -100
    with torch.no_grad():
        loss = theirs(input_ids=torch.tensor([model.tokenizer(trace.text).input_ids]), decoder_input_ids=decoder_input,
                      labels=labels).loss
    assert forced.loss == pytest.approx(float(loss), abs=1e-5)
    assert len(forced.tokens) == labels.shape[1] - forced_first and all(r >= 1 for r in forced.ranks)


def test_a_continuation_is_scored_after_the_prompt(opened):
    model, trace, theirs = opened
    if model.task != CONTINUE:
        pytest.skip("decoder-only models")
    forced = teacher_forcing(model, trace.text, "in the snow")
    prompt = model.tokenizer(trace.text).input_ids
    # the reference ends with the end token, and gets no start token of its own (Llama's tokenizer adds one)
    continuation = model.tokenizer(" in the snow", add_special_tokens=False).input_ids + [theirs.config.eos_token_id]
    with torch.no_grad():
        logits = theirs(input_ids=torch.tensor([prompt + continuation])).logits[0]
    expected = torch.log_softmax(logits, -1)[torch.arange(len(prompt) - 1, len(prompt) + len(continuation) - 1),
                                             continuation]
    np.testing.assert_allclose(forced.probabilities, expected.exp().numpy(), atol=1e-6)
    # the step rows of the decoding page are the positions that chose each new token
    np.testing.assert_allclose(step_attention_row(trace, 0, 0, 1), trace.pattern("decoder")[0, 1, len(prompt) - 1])


def test_the_masked_token_view_predicts_from_the_masked_input(opened):
    model, trace, theirs = opened
    if model.task != FILL_MASK:
        pytest.skip("masked language models")
    positions = maskable_positions(model, trace)
    special = set(model.tokenizer.all_special_ids)
    assert positions and all(trace.source_ids[i] not in special for i in positions)
    position = positions[1]
    masked = masked_word(model, trace, position)
    ids = list(trace.source_ids)
    ids[position] = model.tokenizer.mask_token_id
    with torch.no_grad():
        probs = torch.softmax(theirs(input_ids=torch.tensor([ids])).logits[0, position], -1)
    assert masked.prediction.chosen_id == trace.source_ids[position]
    assert masked.prediction.chosen_prob == pytest.approx(float(probs[trace.source_ids[position]]), abs=1e-6)
    assert masked.prediction.top_probs[0] == pytest.approx(float(probs.max()), abs=1e-6)
    # the head effect is the gradient of log p(hidden) w.r.t. each head's gate: check one against a finite difference
    layer, head = np.unravel_index(masked.head_effect.argmax(), masked.head_effect.shape)
    gates = torch.ones(model.layers("encoder"), model.heads, dtype=torch.float64)

    def log_p(gate_value):
        gates[layer, head] = gate_value
        with torch.no_grad(), model_run(head_mask={"encoder": gates.float()}):
            logits = model.forward(model.pad([ids]))[0, position].double()
        return float(torch.log_softmax(logits, -1)[trace.source_ids[position]])

    slope = (log_p(1.0) - log_p(1.0 - 1e-3)) / 1e-3
    assert abs(slope) == pytest.approx(masked.head_effect[layer, head], rel=0.05, abs=1e-4)
    assert masked.attention.shape == (model.layers("encoder"), model.heads, len(ids))
