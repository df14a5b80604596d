"""Corpus analyses on Hugging Face models (explorer/analyses/corpus/corpus_scoring.py, roles.py): the losses are the models' own,
gradient importance is the per-example mean of |∂L/∂gate|, a silent head scores zero, pruning a whole layer
changes the score, and word ↔ piece alignment holds for SentencePiece, WordPiece and byte-level BPE. Tiny random
models of every family (tests/hugging_face_models.py)."""

import math

import numpy as np
import pytest
import torch

from explorer.analyses.corpus.corpus_scoring import ContinuationScorer, MaskedScorer, TranslationScorer, scorer_for
from explorer.analyses.corpus.importance import ablation, gradient_importance
from explorer.analyses.corpus.pruning import pruning_curve
from explorer.analyses.corpus.roles import analyse_roles
from explorer.capture.forcing import IGNORED
from explorer.capture.head_sets import HeadSpec, head_mask
from explorer.capture.trace import trace_sentence
from explorer.capture.treebank import Tree
from explorer.models.hooks import model_run
from explorer.models.interface import CONTINUE, FILL_MASK, TRANSLATE, Batch, Embeds
from explorer.models.loader import open_model
from explorer.models.vocabulary import attention_hook
from tests.hugging_face_models import FAMILIES, TEXT, saved_model

LINES = TEXT[:6]


@pytest.fixture(scope="module", params=list(FAMILIES))
def opened(request, tmp_path_factory):
    """(model, transformers' own model of the folder with eager attention)."""
    folder = saved_model(request.param, tmp_path_factory)
    model = open_model(folder)
    return model, type(model.model).from_pretrained(folder, attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def model(opened):
    return opened[0]


def scorer(model):
    return scorer_for(model, LINES, LINES[::-1] if model.task == TRANSLATE else None)


def row_of(batch, row):
    """One row of a scorer's batch (source, target, labels), padding kept."""
    def one(part):
        return None if part is None else Batch(part.ids[row: row + 1], part.present[row: row + 1])
    source, target, labels = batch
    return one(source), one(target), labels[row: row + 1]


def their_loss(model, theirs, scored, index):
    """transformers' own mean cross-entropy of one example, its inputs built here from the example's ids."""
    source, output = scored.examples[index]
    with torch.no_grad():
        if model.task == TRANSLATE:      # the decoder reads its start token (and a target-language token), then the output
            prefix = [theirs.config.decoder_start_token_id]
            if hasattr(model.tokenizer, "get_lang_id"):
                prefix.append(model.tokenizer.get_lang_id(model.target_language))
            labels = [IGNORED] * (len(prefix) - 1) + output
            return theirs(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([prefix + output[:-1]]),
                          labels=torch.tensor([labels])).loss
        if model.task == CONTINUE:       # next-token loss over the line (transformers shifts the labels itself)
            ids = source + output
            return theirs(input_ids=torch.tensor([ids]), labels=torch.tensor([ids])).loss
        positions = scored.masked_positions(index)
        masked = [model.tokenizer.mask_token_id if i in positions else t for i, t in enumerate(source)]
        labels = [t if i in positions else IGNORED for i, t in enumerate(source)]
        return theirs(input_ids=torch.tensor([masked]), labels=torch.tensor([labels])).loss


@pytest.mark.slow
def test_the_scorer_fits_the_task_and_its_loss_is_the_models_own(opened):
    model, theirs = opened
    if isinstance(model, Embeds):
        pytest.skip("a sentence encoder's scorer has no token loss: tests/explorer/test_sentence_embeddings.py")
    scored = scorer(model)
    assert type(scored) is {TRANSLATE: TranslationScorer, CONTINUE: ContinuationScorer, FILL_MASK: MaskedScorer}[model.task]
    translates = model.task == TRANSLATE
    assert (scored.metric, scored.higher_is_better) == (("BLEU", True) if translates else ("perplexity", False))
    for indices, batch in scored.batches():
        with torch.no_grad():
            losses, alone = scored.sentence_losses(batch), [scored.sentence_losses(row_of(batch, row))[0]
                                                            for row in range(len(indices))]
        for row, index in enumerate(indices):       # padded beside the others or alone, the same loss
            expected = float(their_loss(model, theirs, scored, index))
            assert float(losses[row]) == pytest.approx(expected, abs=1e-5)
            assert float(alone[row]) == pytest.approx(expected, abs=1e-5)
    if not translates:
        assert scored.quality() == pytest.approx(math.exp(scored.loss()), rel=1e-9)


@pytest.mark.slow
def test_a_masked_language_model_masks_a_fixed_share_of_real_tokens(model):
    if model.task != FILL_MASK:
        pytest.skip("masked-token scoring is for masked language models")
    scored = scorer(model)
    special = set(model.tokenizer.all_special_ids)
    for index, (example, _) in enumerate(scored.examples):
        positions = scored.masked_positions(index)
        real = [i for i, token in enumerate(example) if token not in special]
        assert positions == scored.masked_positions(index)                      # the same every time
        assert len(positions) == max(1, round(0.15 * len(real))) and set(positions) <= set(real)


@pytest.mark.slow
def test_gradient_importance_is_the_mean_of_each_examples_absolute_gradient(model):
    scored = scorer(model)
    kinds = model.kinds
    expected = {kind: torch.zeros(model.layers(kind), model.heads) for kind in kinds}
    for _, batch in scored.batches():
        for row in range(batch[-1].shape[0]):
            gates = {kind: torch.ones(model.layers(kind), model.heads, requires_grad=True) for kind in kinds}
            with torch.enable_grad():
                grads = torch.autograd.grad(scored.sentence_losses(row_of(batch, row), gates).sum(),
                                            list(gates.values()))
            for kind, grad in zip(kinds, grads):
                expected[kind] += grad.abs() / scored.size
    batched = gradient_importance(scored)
    for kind in kinds:
        torch.testing.assert_close(torch.tensor(batched[kind]), expected[kind], rtol=1e-3, atol=1e-9)
    assert all(p.grad is None for p in model.model.parameters())      # the shared model is untouched


@pytest.mark.slow
def test_a_silent_head_scores_zero_and_pruning_a_whole_layer_changes_the_score(model):
    scored = scorer(model)
    # Cross-attention where there is one: a tiny random encoder's heads move the loss by less than float precision.
    kind = "cross" if model.has("cross") else model.kinds[0]

    def silence(z, name):      # head 2 of layer 0 outputs zeros: its gate multiplies nothing
        z = z.clone()
        z[:, 2] = 0
        return z

    with model_run({attention_hook(kind, 0, "z"): silence}, hook_names=model.hook_names):
        gradient = gradient_importance(scored)
        ablated = ablation(scored, heads=[HeadSpec(kind, 0, 2), HeadSpec(kind, 0, 1)], with_quality=False)
    assert gradient[kind][0, 2] == 0.0 and (np.delete(gradient[kind][0], 2) > 0).all()
    assert ablated["heads"][f"{HeadSpec(kind, 0, 2)}"]["loss_change"] == 0.0
    assert ablated["heads"][f"{HeadSpec(kind, 0, 1)}"]["loss_change"] != 0.0
    layer = [HeadSpec(kind, 1, head) for head in range(model.heads)]
    assert scored.loss(head_mask(layer, model)) != pytest.approx(scored.loss(), abs=1e-7)


@pytest.mark.slow
def test_the_pruning_curve_covers_the_kinds_the_model_has(model):
    scored = scorer(model)
    scores = {HeadSpec(kind, layer, head): float(layer * 10 + head) for kind in model.kinds
              for layer in range(2) for head in range(4)}
    curve = pruning_curve(scored, scores, steps=2, seeds=1)
    short = {"encoder": "enc", "decoder": "dec", "cross": "cross"}
    assert set(curve["kinds"]) == {short[k] for k in model.kinds} | {"all"}
    assert curve["metric"] == scored.metric
    everything = curve["kinds"]["all"]
    assert everything["importance"][0] == round(scored.quality(), 2)
    assert everything["importance"][-1] == round(scored.quality(head_mask(list(scores), model)), 2)


def test_words_align_with_their_pieces(model):
    tokenizer = model.tokenizer
    words = ["two", "men", "play", "football"]
    aligned = model.align_words(words)
    assert aligned is not None and aligned.ids == tokenizer(" ".join(words)).input_ids
    for word, positions in zip(words, aligned.word_pieces):
        text = tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens([aligned.ids[p] for p in positions]))
        assert text.strip() == word
    too_long = words * (model.max_positions // len(words) + 1)       # more words than the model has positions
    assert model.align_words(too_long) is None


def test_a_sentence_as_written_is_tokenized_once_and_each_word_spelled_by_its_pieces(model):
    """"did" + "n't" written together (CoNLL-U SpaceAfter=No): the ids are the model's own reading of "didn't", by
    offsets (fast tokenizers) or by reading the pieces in order (slow ones), and each word's pieces spell it."""
    words, space_after = ["They", "did", "n't", "play", "football", "."], [True, False, True, True, False, False]
    aligned = model.align_words(words, space_after)
    assert aligned is not None and aligned.ids == model.encode("They didn't play football.").ids
    labels = model.pieces(aligned.ids)
    for word, positions in zip(words, aligned.word_pieces):
        assert "".join(labels[p].lstrip("▁").removeprefix("##") for p in positions).lower() == word.lower()


@pytest.mark.slow
def test_roles_confidence_is_the_mean_top_weight_of_the_real_queries(model):
    """One sentence: every head's confidence is the mean over its real queries of the largest weight."""
    sentence = "two men play football on a field"
    report = analyse_roles(model, [sentence], [Tree(sentence.split(), [1, 2, -1, 2, 6, 6, 2],
                                                    ["nummod", "nsubj", "root", "obj", "case", "det", "obl"])])
    kind = "encoder" if model.has("encoder") else "decoder"
    trace = trace_sentence(model, sentence, fix_casing=False)         # roles read the text as it is
    ids = trace.source_ids if kind == "encoder" else trace.target_ids
    pattern = trace.pattern(kind)
    if kind == "decoder":             # a decoder-only model's roles read the text itself, not the continuation
        ids = ids[: trace.first_step_position + 1]
        pattern = pattern[:, :, : len(ids), : len(ids)]
    real = [i for i, token in enumerate(ids) if token not in set(model.tokenizer.all_special_ids)]
    entry = next(h for h in report.heads if h["spec"] == str(HeadSpec(kind, 1, 3)))
    assert entry["confidence"] == pytest.approx(float(pattern[1, 3][real].max(-1).mean()), abs=1e-4)
    assert report.corpus["treebank"]["sentences"] == 1 and "syntactic" in entry
