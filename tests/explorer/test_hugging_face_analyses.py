"""Corpus analyses on Hugging Face models (explorer/corpus_scoring.py, hugging_face_roles.py): the losses are the
models' own, gradient importance is the per-example mean of |∂L/∂gate|, a silent head scores zero, pruning a
whole layer changes the score, and word ↔ piece alignment holds for SentencePiece, WordPiece and byte-level BPE.
Tiny random models (tests/hugging_face_models.py)."""

import math

import numpy as np
import pytest
import torch

from explorer.corpus_scoring import HuggingFaceText, HuggingFaceTranslation, scorer_for
from explorer.head_sets import HeadSpec, head_mask
from explorer.hugging_face_roles import align_words
from explorer.importance import ablation, gradient_importance
from explorer.open_model import open_model
from explorer.pruning import pruning_curve
from explorer.roles import analyse_roles
from explorer.treebank import Tree
from models.hooks import model_run
from models.vocabulary import attention_hook
from tests.hugging_face_models import FAMILIES, TEXT, saved_model

LINES = TEXT[:6]


@pytest.fixture(scope="module", params=list(FAMILIES))
def checkpoint(request, tmp_path_factory):
    return open_model(saved_model(request.param, tmp_path_factory))


def scorer(checkpoint):
    translates = "cross" in checkpoint.model.kinds
    return scorer_for(checkpoint, LINES, LINES[::-1] if translates else None)


def test_the_scorer_fits_the_family_and_its_loss_is_the_models_own(checkpoint):
    scored = scorer(checkpoint)
    model = checkpoint.model.model
    translates = "cross" in checkpoint.model.kinds
    assert isinstance(scored, HuggingFaceTranslation if translates else HuggingFaceText)
    assert (scored.metric, scored.higher_is_better) == (("BLEU", True) if translates else ("perplexity", False))
    _, batch = next(iter(scored.batches()))
    one = {k: v[:1] for k, v in batch.items()}
    with torch.no_grad():
        if translates:     # transformers' own loss from labels (it shifts them into decoder inputs itself)
            expected = model(input_ids=one["input_ids"], attention_mask=one["attention_mask"], labels=one["labels"]).loss
        elif checkpoint.model.family == "gpt2":
            length = int(one["attention_mask"].sum())
            expected = model(input_ids=one["input_ids"][:, :length], labels=one["input_ids"][:, :length]).loss
        else:
            expected = model(input_ids=one["input_ids"], attention_mask=one["attention_mask"], labels=one["labels"]).loss
        assert float(scored.sentence_losses(one)[0]) == pytest.approx(float(expected), abs=1e-5)
    if not translates:
        assert scored.quality() == pytest.approx(math.exp(scored.loss()), rel=1e-9)


def test_bert_masks_a_fixed_share_of_real_tokens(checkpoint):
    if checkpoint.model.family != "bert":
        pytest.skip("masked-token scoring is BERT's")
    scored = scorer(checkpoint)
    special = set(checkpoint.tokenizer.all_special_ids)
    for index, example in enumerate(scored.examples):
        positions = scored.masked_positions(index)
        real = [i for i, token in enumerate(example) if token not in special]
        assert positions == scored.masked_positions(index)                      # the same every time
        assert len(positions) == max(1, round(0.15 * len(real))) and set(positions) <= set(real)


def test_gradient_importance_is_the_mean_of_each_examples_absolute_gradient(checkpoint):
    scored = scorer(checkpoint)
    config = scored.config
    kinds = checkpoint.model.kinds
    expected = {kind: torch.zeros(config.layers(kind), config.heads) for kind in kinds}
    for _, batch in scored.batches():
        for row in range(batch["input_ids"].shape[0]):
            one = {k: v[row: row + 1] for k, v in batch.items()}
            gates = {kind: torch.ones(config.layers(kind), config.heads, requires_grad=True) for kind in kinds}
            with torch.enable_grad():
                grads = torch.autograd.grad(scored.sentence_losses(one, gates).sum(), list(gates.values()))
            for kind, grad in zip(kinds, grads):
                expected[kind] += grad.abs() / scored.size
    batched = gradient_importance(scored)
    for kind in kinds:
        torch.testing.assert_close(torch.tensor(batched[kind]), expected[kind], rtol=1e-3, atol=1e-9)
    assert all(p.grad is None for p in checkpoint.model.model.parameters())      # the shared model is untouched


def test_a_silent_head_scores_zero_and_pruning_a_whole_layer_changes_the_score(checkpoint):
    scored = scorer(checkpoint)
    # Cross-attention where there is one: a tiny random encoder's heads move the loss by less than float precision.
    kind = "cross" if "cross" in checkpoint.model.kinds else checkpoint.model.kinds[0]

    def silence(z, name):      # head 2 of layer 0 outputs zeros: its gate multiplies nothing
        z = z.clone()
        z[:, 2] = 0
        return z

    with model_run({attention_hook(kind, 0, "z"): silence}, hook_names=checkpoint.model.hook_names):
        gradient = gradient_importance(scored)
        ablated = ablation(scored, heads=[HeadSpec(kind, 0, 2), HeadSpec(kind, 0, 1)], with_quality=False)
    assert gradient[kind][0, 2] == 0.0 and (np.delete(gradient[kind][0], 2) > 0).all()
    assert ablated["heads"][f"{HeadSpec(kind, 0, 2)}"]["loss_change"] == 0.0
    assert ablated["heads"][f"{HeadSpec(kind, 0, 1)}"]["loss_change"] != 0.0
    layer = [HeadSpec(kind, 1, head) for head in range(scored.config.heads)]
    assert scored.loss(head_mask(layer, scored.config)) != pytest.approx(scored.loss(), abs=1e-7)


def test_the_pruning_curve_covers_the_kinds_the_model_has(checkpoint):
    scored = scorer(checkpoint)
    scores = {HeadSpec(kind, layer, head): float(layer * 10 + head) for kind in checkpoint.model.kinds
              for layer in range(2) for head in range(4)}
    curve = pruning_curve(scored, scores, steps=2, seeds=1)
    short = {"encoder": "enc", "decoder": "dec", "cross": "cross"}
    assert set(curve["kinds"]) == {short[k] for k in checkpoint.model.kinds} | {"all"}
    assert curve["metric"] == scored.metric
    everything = curve["kinds"]["all"]
    assert everything["importance"][0] == round(scored.quality(), 2)
    assert everything["importance"][-1] == round(scored.quality(head_mask(list(scores), scored.config)), 2)


def test_words_align_with_their_pieces(checkpoint):
    tokenizer = checkpoint.tokenizer
    words = ["two", "men", "play", "football"]
    aligned = align_words(words, tokenizer, 64)
    assert aligned is not None and aligned.ids == tokenizer(" ".join(words)).input_ids
    for word, positions in zip(words, aligned.word_pieces):
        text = tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens([aligned.ids[p] for p in positions]))
        assert text.strip() == word
    assert align_words(words * 40, tokenizer, 64) is None            # longer than the model's positions


def test_roles_confidence_is_the_mean_top_weight_of_the_real_queries(checkpoint):
    """One sentence: every head's confidence is the mean over its real queries of the largest weight."""
    from explorer.hugging_face_trace import trace_hugging_face

    sentence = "two men play football on a field"
    report = analyse_roles(checkpoint, [sentence], [Tree(sentence.split(), [1, 2, -1, 2, 6, 6, 2],
                                                         ["nummod", "nsubj", "root", "obj", "case", "det", "obl"])])
    kind = "encoder" if "encoder" in checkpoint.model.kinds else "decoder"
    trace = trace_hugging_face(checkpoint.model, checkpoint.tokenizer, sentence)
    ids = trace.source_ids if kind == "encoder" else trace.target_ids
    pattern = trace.pattern(kind)
    if kind == "decoder":             # GPT-2's roles read the text itself, not the continuation
        ids = ids[: trace.first_step_position + 1]
        pattern = pattern[:, :, : len(ids), : len(ids)]
    real = [i for i, token in enumerate(ids) if token not in set(checkpoint.tokenizer.all_special_ids)]
    entry = next(h for h in report.heads if h["spec"] == str(HeadSpec(kind, 1, 3)))
    assert entry["confidence"] == pytest.approx(float(pattern[1, 3][real].max(-1).mean()), abs=1e-4)
    assert report.corpus["treebank"]["sentences"] == 1 and "syntactic" in entry
