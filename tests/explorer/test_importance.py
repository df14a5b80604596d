"""Head importance: a head that contributes nothing scores exactly zero, both ways."""

import pytest

from explorer.analyses.corpus.corpus_scoring import TranslationScorer
from explorer.analyses.corpus.importance import ablation, gradient_importance, importance_report
from explorer.capture.head_sets import HeadSpec
from explorer.models.data import make_training_batch, read_parallel
from explorer.models.hooks import model_run
from explorer.models.vocabulary import attention_hook
from tests.conftest import MULTI30K


@pytest.fixture(scope="module")
def pairs():
    sources, references = read_parallel(MULTI30K / "val.en.gz", MULTI30K / "val.de.gz")
    return sources[:40], references[:40]


def silence_head(z, name):
    """Encoder layer 0, head 2 outputs zeros: its gate multiplies nothing."""
    silenced = z.clone()
    silenced[:, 2] = 0
    return silenced


def test_a_silent_head_has_zero_importance_and_others_do_not(tiny_checkpoint, pairs):
    scorer = TranslationScorer(tiny_checkpoint, *pairs)
    with model_run({attention_hook("encoder", 0, "z"): silence_head}, hook_names=tiny_checkpoint.model.hook_names):
        gradient = gradient_importance(scorer)
        ablated = ablation(scorer, heads=[HeadSpec("encoder", 0, 2), HeadSpec("encoder", 0, 1)], with_quality=False)
    assert gradient["encoder"][0, 2] == 0.0
    assert (gradient["encoder"][0, [0, 1, 3]] > 0).all() and (gradient["cross"] > 0).all()
    assert ablated["heads"]["enc.0.2"]["loss_change"] == 0.0
    assert ablated["heads"]["enc.0.1"]["loss_change"] != 0.0


def test_gradient_pass_leaves_the_shared_model_untouched(tiny_checkpoint, pairs):
    scorer = TranslationScorer(tiny_checkpoint, *pairs)
    before = scorer.loss()
    gradient_importance(scorer)
    assert all(p.grad is None for p in tiny_checkpoint.model.parameters())
    assert scorer.loss() == before


@pytest.mark.slow
def test_report_lists_every_head_with_its_scores(tiny_checkpoint, pairs):
    progress = []
    report = importance_report(TranslationScorer(tiny_checkpoint, pairs[0][:10], pairs[1][:10]), progress=progress.append)
    assert len(report["heads"]) == 3 * 2 * 4
    head = report["heads"][0]
    assert {"kind", "layer", "head", "spec", "roles", "gradient_importance", "gradient_importance_normalised",
            "loss_change", "bleu_change"} <= set(head)
    assert report["unpruned"]["bleu"] >= 0 and report["seconds"] > 0
    assert set(report["rank_correlation"]) == {f"{m}_vs_{c}" for m in ("gradient_importance", "gradient_importance_normalised")
                                               for c in ("loss_change", "bleu_change")}
    assert progress[-1] == pytest.approx(1.0) and progress == sorted(progress)


def test_gradient_importance_is_the_mean_over_sentences_of_each_sentences_absolute_gradient(tiny_checkpoint, pairs):
    """Michel et al.'s expectation over examples, computed one sentence at a time for comparison."""
    import torch
    import torch.nn.functional as F

    from explorer.models.tokenizer import PAD

    scorer = TranslationScorer(tiny_checkpoint, pairs[0][:12], pairs[1][:12])
    pairs = [(source[:-1], reference[:-1]) for source, reference in scorer.examples]   # pieces without </s>
    config = tiny_checkpoint.model.config
    expected = {kind: torch.zeros(config.layers(kind), config.heads) for kind in ("encoder", "decoder", "cross")}
    for index in range(len(pairs)):
        src, tgt_in, tgt_out = make_training_batch(pairs, [index])
        gates = {kind: torch.ones(config.layers(kind), config.heads, requires_grad=True) for kind in expected}
        with torch.enable_grad(), model_run(head_mask=gates):
            logits = tiny_checkpoint.model(src, tgt_in)
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt_out.view(-1), ignore_index=PAD)
            grads = torch.autograd.grad(loss, list(gates.values()))
        for kind, grad in zip(gates, grads):
            expected[kind] += grad.abs() / len(pairs)
    batched = gradient_importance(scorer)
    for kind, value in expected.items():
        torch.testing.assert_close(torch.tensor(batched[kind]), value, rtol=1e-4, atol=1e-7)
    # Not the absolute gradient of the mean loss (per batch): signs differ between sentences.
    whole = {kind: torch.ones(config.layers(kind), config.heads, requires_grad=True) for kind in expected}
    src, tgt_in, tgt_out = make_training_batch(pairs, list(range(len(pairs))))
    with torch.enable_grad(), model_run(head_mask=whole):
        logits = tiny_checkpoint.model(src, tgt_in)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt_out.view(-1), ignore_index=PAD)
        per_batch = torch.autograd.grad(loss, list(whole.values()))
    assert any((grad.abs() < torch.tensor(batched[kind]) - 1e-6).any() for kind, grad in zip(whole, per_batch))


def test_spearman_rank_correlation():
    from explorer.analyses.corpus.importance import spearman

    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [1, 100, 2, 3]) == pytest.approx(0.4)   # ranks only, not values
    assert spearman([1, 1, 1], [1, 2, 3]) is None                            # undefined: null in the JSON


def test_one_bleu_and_one_rule_for_blank_lines_everywhere(tiny_checkpoint):
    from explorer.capture.translation import evaluate

    sources = ["A dog runs.", "", "Two men talk.", "A girl sings."]
    references = ["Ein Hund rennt.", "Leer.", "  ", "Ein Mädchen singt."]
    result = evaluate(tiny_checkpoint, sources, references)
    scorer = TranslationScorer(tiny_checkpoint, sources, references)
    assert (result["sentences"], result["skipped"]) == (scorer.size, 2) == (2, 2)
    assert scorer.references == ["Ein Hund rennt.", "Ein Mädchen singt."]
    assert result["bleu"] == round(scorer.quality(), 2)
