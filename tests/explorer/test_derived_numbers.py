"""The derived numbers agree with the model: rollout, the Q/K/V walkthrough, teacher forcing, PE similarity."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from explorer.analyses.sentence.internals import masked_scores, qkv_walkthrough
from explorer.analyses.sentence.positional import position_similarity, sin_cos_halves
from explorer.analyses.sentence.rollout import attention_rollout, head_average
from explorer.capture.decoding_steps import beam_tree, teacher_forcing
from explorer.capture.head_sets import parse_heads
from explorer.capture.trace import trace_sentence
from explorer.models.tokenizer import BOS, EOS
from explorer.models.vocabulary import attention_hook

SENTENCE = "A little girl climbs the stairs."


@pytest.fixture(scope="module")
def trace(tiny_checkpoint):
    return trace_sentence(tiny_checkpoint, SENTENCE)


def test_rollout_of_uniform_attention_is_uniform_and_rows_sum_to_one(trace):
    rollout = attention_rollout(trace.pattern("encoder"))
    np.testing.assert_allclose(rollout.sum(-1), 1, atol=1e-6)
    length = len(trace.source_tokens)
    uniform = np.full((3, 2, length, length), 1 / length)
    # 0.5·U + 0.5·I, squared, etc.: rows stay distributions, and the diagonal keeps the residual's share.
    result = attention_rollout(uniform)
    np.testing.assert_allclose(result[0], 0.5 / length + 0.5 * np.eye(length), atol=1e-9)
    identity = np.tile(np.eye(length), (2, 4, 1, 1))
    np.testing.assert_allclose(attention_rollout(identity)[-1], np.eye(length))
    np.testing.assert_allclose(head_average(trace.pattern("encoder"))[0], trace.pattern("encoder")[0].mean(0))


@pytest.mark.parametrize("kind, query", [("encoder", 2), ("decoder", 1), ("cross", 0)])
def test_walkthrough_reproduces_the_models_numbers(trace, tiny_checkpoint, kind, query):
    walk = qkv_walkthrough(tiny_checkpoint, trace, kind, 1, 2, query)
    np.testing.assert_allclose(walk.weights, trace.pattern(kind)[1, 2, query], atol=1e-5)
    np.testing.assert_allclose(walk.scaled, trace.attention[kind].value("scores")[1, 2, query], atol=1e-4)
    np.testing.assert_allclose(walk.z, trace.attention[kind].value("z")[1, 2, query], atol=1e-5)
    _, cache = tiny_checkpoint.model.run_with_cache(torch.tensor([trace.source_ids]), torch.tensor([trace.target_ids]),
                                                    attention_hook(kind, 1, "out"))
    np.testing.assert_allclose(walk.output, cache.attention(kind, 1, "out")[0, query].detach().numpy(), atol=1e-4)
    if kind == "decoder":
        assert np.isneginf(walk.masked[query + 1:]).all() and walk.weights[query + 1:].max() == 0


def test_walkthrough_of_a_pruned_trace_gates_the_pruned_head(tiny_checkpoint):
    pruned = parse_heads("enc.0.1", tiny_checkpoint.model.config)
    trace = trace_sentence(tiny_checkpoint, SENTENCE, pruned=pruned)
    walk = qkv_walkthrough(tiny_checkpoint, trace, "encoder", 0, 0, 1)
    d_k = tiny_checkpoint.model.config.d_k
    assert not walk.concatenated[d_k: 2 * d_k].any()


def test_masked_scores_put_minus_infinity_above_the_diagonal(trace):
    masked = masked_scores(trace, "decoder", 0, 0)
    length = masked.shape[0]
    assert np.isneginf(masked[np.triu_indices(length, 1)]).all()
    assert np.isfinite(masked[np.tril_indices(length)]).all()


def test_positional_similarity_and_halves(trace, tiny_checkpoint):
    positional = trace.positional["source"]
    similarity = position_similarity(positional)
    # sin² + cos² = 1 for each of the d/2 frequency pairs.
    np.testing.assert_allclose(np.diag(similarity), tiny_checkpoint.model.config.d_model / 2, atol=1e-4)
    assert similarity[0, 1] > similarity[0, -1]  # nearer positions are more alike
    halves = sin_cos_halves(positional)
    np.testing.assert_allclose(halves[:, 0], np.sin(np.arange(len(positional))), atol=1e-6)
    np.testing.assert_allclose(halves[:, 16], np.cos(np.arange(len(positional))), atol=1e-6)


def test_teacher_forcing_loss_is_the_models_cross_entropy(tiny_checkpoint):
    reference = "Ein kleines Mädchen klettert die Treppe hinauf."
    forced = teacher_forcing(tiny_checkpoint, SENTENCE, reference)
    tokenizer, model = tiny_checkpoint.tokenizer, tiny_checkpoint.model
    target = tokenizer.encode_ids(reference) + [EOS]
    src = torch.tensor([tokenizer.encode(SENTENCE).ids])
    logits = model(src, torch.tensor([[BOS] + target[:-1]]))[0]
    assert forced.tokens[-1] == "</s>" and len(forced.probabilities) == len(target)
    assert abs(forced.loss - F.cross_entropy(logits, torch.tensor(target)).item()) < 1e-4
    assert all(rank >= 1 for rank in forced.ranks)


def test_beam_tree_scores_are_the_models_own_in_rank_order(tiny_checkpoint):
    """Every live beam's cumulative log-probability is the model's, recomputed here by feeding the beam's path back
    through the raw forward (teacher forcing); the beams of a step are ranked best first; the finished hypotheses
    by their score, the log-probability over GNMT's length penalty."""
    from explorer.capture.inputs import prepare_source
    from explorer.models.decoding import length_penalty

    result = beam_tree(tiny_checkpoint, SENTENCE, 3)
    assert result.finished and all(len(step.tokens) <= 3 for step in result.steps)
    source = torch.tensor([prepare_source(SENTENCE, tiny_checkpoint).ids])
    paths: list[list[int]] = [[]]
    with torch.no_grad():
        for step in result.steps:
            paths = [paths[parent] + [token] for parent, token in zip(step.parents, step.tokens)]
            assert step.log_probs == sorted(step.log_probs, reverse=True)
            for path, cumulative in zip(paths, step.log_probs):
                logits = tiny_checkpoint.model(source, torch.tensor([[BOS] + path[:-1]]))[0].float()
                chosen = torch.log_softmax(logits, -1)[torch.arange(len(path)), torch.tensor(path)]
                assert cumulative == pytest.approx(chosen.sum().item(), abs=1e-4)
    scores = [hypothesis.score for hypothesis in result.finished]
    assert scores == sorted(scores, reverse=True) and result.best == result.finished[0]
    for hypothesis in result.finished:
        length = len(hypothesis.tokens) + hypothesis.ended           # the end token counts when it was chosen
        assert hypothesis.score == pytest.approx(hypothesis.log_prob / length_penalty(length, 0.6))


def test_stopping_reason_names_the_end_token_or_the_length_limit(tiny_checkpoint, h8):
    from explorer.capture.decoding_steps import stopping_reason
    from explorer.capture.trace import trace_sentence

    # An untrained model never chooses </s>: it runs to 1.5 × source tokens + 10.
    untrained = trace_sentence(tiny_checkpoint, "Two dogs play in the snow.")
    limit = int(1.5 * len(untrained.source_tokens)) + 10
    assert len(untrained.steps) == limit and f"= {limit} steps" in stopping_reason(tiny_checkpoint, untrained)
    trained = trace_sentence(h8, "Two dogs play in the snow.")
    assert stopping_reason(h8, trained) == f"It stopped because the model chose </s> at step {len(trained.steps) - 1}."
