"""Incremental decoding reuses keys/values without changing what the model computes."""

import torch

from explorer.models.decoding import beam_search, greedy, translate_ids
from explorer.models.hooks import model_run
from explorer.models.tokenizer import BOS, EOS
from tests.conftest import SENTENCES, batch_of


def greedy_with_distributions(model, src, max_steps):
    """Greedy decoding, and each incremental step's log-probabilities read at the `logits` hook point."""
    seen = []
    with model_run({"logits": lambda logits, name: seen.append(logits[:, -1].float())}, hook_names=model.hook_names):
        result = greedy(model, src, max_steps=max_steps)
    return result, torch.log_softmax(torch.stack(seen, 1), -1)


def test_incremental_steps_match_the_full_teacher_forced_pass(tiny_checkpoint):
    model = tiny_checkpoint.model
    src = batch_of(tiny_checkpoint.tokenizer, SENTENCES[:1])
    result, steps = greedy_with_distributions(model, src, 12)
    tokens = result.tokens[0]
    full = torch.log_softmax(model(src, torch.tensor([[BOS] + tokens])), -1)[0]
    assert torch.allclose(full[: steps.shape[1]], steps[0], atol=1e-4)


def test_greedy_picks_the_argmax_and_distributions_sum_to_one(tiny_checkpoint):
    src = batch_of(tiny_checkpoint.tokenizer, SENTENCES[1:2])
    result, distributions = greedy_with_distributions(tiny_checkpoint.model, src, 10)
    distributions = distributions[0]
    assert torch.allclose(distributions.exp().sum(-1), torch.ones(distributions.shape[0]), atol=1e-5)
    chosen = (result.tokens[0] + [EOS])[: distributions.shape[0]]
    assert distributions.argmax(-1).tolist() == chosen


def test_batched_and_single_sentence_results_agree(tiny_checkpoint):
    model, tokenizer = tiny_checkpoint.model, tiny_checkpoint.tokenizer
    batched, together = greedy_with_distributions(model, batch_of(tokenizer, SENTENCES), 15)
    for i, sentence in enumerate(SENTENCES):
        single, alone = greedy_with_distributions(model, batch_of(tokenizer, [sentence]), 15)
        assert single.tokens[0] == batched.tokens[i]
        steps = alone.shape[1]                      # a finished sentence's row runs on in the batch
        assert torch.allclose(alone[0], together[i, :steps], atol=1e-4)


def test_beam_of_one_is_greedy(tiny_checkpoint):
    model, tokenizer = tiny_checkpoint.model, tiny_checkpoint.tokenizer
    for sentence in SENTENCES:
        src = batch_of(tokenizer, [sentence])
        assert beam_search(model, src, beam_size=1, max_steps=15).best.tokens == greedy(model, src, max_steps=15).tokens[0]


def test_beam_search_keeps_a_consistent_tree(tiny_checkpoint):
    model, tokenizer = tiny_checkpoint.model, tiny_checkpoint.tokenizer
    result = beam_search(model, batch_of(tokenizer, SENTENCES[:1]), beam_size=4, alpha=0.0, max_steps=10)
    assert result.finished and result.best is result.finished[0]
    assert all(a.score >= b.score for a, b in zip(result.finished, result.finished[1:]))
    # Cumulative log-probabilities only go down along a path, and each beam extends a live beam of the step before.
    for before, after in zip(result.steps, result.steps[1:]):
        for parent, log_prob in zip(after.parents, after.log_probs):
            assert parent < len(before.tokens)
            assert log_prob <= before.log_probs[parent] + 1e-5
    # The best hypothesis' log-prob is the sum of its tokens' log-probs (and EOS's, when it ended) in a full pass.
    best = result.best
    chosen = best.tokens + [EOS] if best.ended else best.tokens
    full = torch.log_softmax(model(batch_of(tokenizer, SENTENCES[:1]), torch.tensor([[BOS] + best.tokens])), -1)[0]
    path = full[torch.arange(len(chosen)), chosen]
    assert abs(path.sum().item() - best.log_prob) < 1e-3


def test_translate_ids_keeps_input_order(tiny_checkpoint):
    model, tokenizer = tiny_checkpoint.model, tiny_checkpoint.tokenizer
    ids = [tokenizer.encode(s).ids for s in SENTENCES]
    together = translate_ids(model, ids, batch_size=3)
    alone = [translate_ids(model, [i])[0] for i in ids]
    assert together == alone
