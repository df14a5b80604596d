"""A sentence encoder's output (models/sentence_encoder.py, explorer/analyses/sentence/sentence_similarity.py and the
EmbeddingScorer of corpus_scoring.py), checked against computations made here: transformers' own BertModel pooled
by hand, cosines and nearest captions by brute force, the Jacobian of the embedding by autograd, every head
ablated alone, and the focus command's answer recomputed from transformers' own attentions."""

from __future__ import annotations

import json
import string

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from explorer.analyses.corpus.corpus_scoring import EmbeddingScorer, scorer_for
from explorer.analyses.corpus.importance import gradient_importance
from explorer.analyses.sentence.sentence_similarity import caption_embeddings, cosine, embed_texts, nearest, pruning_effect
from explorer.capture.head_sets import HeadSpec, all_heads, head_mask
from explorer.cli import main
from explorer.models.data import read_lines
from explorer.models.hugging_face import HuggingFaceError
from explorer.models.interface import Embeds
from explorer.models.loader import open_model
from tests.conftest import MULTI30K
from tests.hugging_face_models import saved_model, sentence_bert

LECTURE = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def minilm():
    return open_model("all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return open_model(saved_model("sentence-bert", tmp_path_factory))


def captions(count: int, start: int = 0) -> list[str]:
    return read_lines(MULTI30K / "test_2016_flickr.en.gz")[start: start + count]


def test_minilm_embeds_as_sentence_transformers_does(minilm):
    """Mean of transformers' own last layer over the real tokens, scaled to length 1, on a padded batch."""
    from transformers import BertModel, BertTokenizerFast

    texts = captions(4)
    tokenizer = BertTokenizerFast.from_pretrained(minilm.folder)
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    theirs = BertModel.from_pretrained(minilm.folder).eval()
    with torch.no_grad():
        states = theirs(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    expected = torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    assert isinstance(minilm, Embeds) and minilm.mask_id is None and minilm.pooling == "mean"
    np.testing.assert_allclose(embed_texts(minilm, texts), expected, atol=1e-5)
    # similar captions are nearer than unrelated ones: the model is the trained one, not a random head on BERT
    dog, dogs, guitar = embed_texts(minilm, ["A dog runs in the snow.", "Two dogs play in the snow.",
                                             "A man plays the guitar on stage."])
    assert cosine(dog, dogs) > 0.45 > 0.15 > cosine(dog, guitar)


def test_cls_pooling_and_an_unread_pooling(tmp_path):
    """A folder asking for [CLS] pooling embeds the first token's row; one asking for max pooling is refused,
    naming its file."""
    torch.manual_seed(0)
    for pooling in ("cls", "max"):
        folder = tmp_path / pooling
        folder.mkdir()
        model, tokenizer = sentence_bert(folder, pooling)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        if pooling == "max":
            with pytest.raises(HuggingFaceError, match=r"1_Pooling/config.json: the explorer reads mean or \[CLS\]"):
                open_model(folder)
            continue
        opened = open_model(folder)
        batch = opened.pad([opened.encode("a dog runs").ids])
        with torch.no_grad():
            first = model.eval()(input_ids=batch.ids).last_hidden_state[:, 0]
            torch.testing.assert_close(opened.embed(batch), torch.nn.functional.normalize(first, dim=-1))


def test_nearest_and_the_disk_cache(tiny, tmp_path, monkeypatch):
    texts = captions(30)
    embeddings = caption_embeddings(tiny, texts, "weights-a", tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 1
    query = embed_texts(tiny, ["A dog runs in the snow."])[0]
    brute = sorted(range(len(texts)), key=lambda i: -cosine(query, embeddings[i]))[:5]
    assert [n.index for n in nearest(query, texts, embeddings)] == brute
    monkeypatch.setattr("explorer.analyses.sentence.sentence_similarity.embed_texts",
                        lambda *a, **k: pytest.fail("embedded again instead of read from the cache"))
    np.testing.assert_array_equal(caption_embeddings(tiny, texts, "weights-a", tmp_path), embeddings)
    with pytest.raises(pytest.fail.Exception):         # other weights: another file, computed again
        caption_embeddings(tiny, texts, "weights-b", tmp_path)


def test_pruning_moves_the_embedding_and_its_neighbours(tiny):
    texts = captions(40)
    pruned = [HeadSpec("encoder", 0, head) for head in range(tiny.heads)]
    whole, after = embed_texts(tiny, texts), embed_texts(tiny, texts, pruned)
    effect = pruning_effect(tiny, texts[3], pruned, texts, whole, after)
    assert effect.cosine == pytest.approx(cosine(whole[3], after[3]), abs=1e-5) and effect.cosine < 0.99
    assert effect.whole[0].index == 3 and effect.pruned[0].index == 3        # each finds the sentence itself first
    assert effect.kept == len({n.index for n in effect.whole} & {n.index for n in effect.pruned})
    nothing = pruning_effect(tiny, texts[3], [], texts, whole, whole)
    assert nothing.cosine == pytest.approx(1, abs=1e-6) and nothing.kept == 5


def test_the_scorer_is_cosine_to_the_whole_model_and_its_probe_is_the_jacobian(tiny):
    scorer = scorer_for(tiny, captions(6))
    assert isinstance(scorer, EmbeddingScorer) and scorer.higher_is_better
    assert scorer.quality() == pytest.approx(1, abs=1e-6) and scorer.loss() == pytest.approx(0, abs=1e-6)
    pruned = [HeadSpec("encoder", 1, 2)]
    texts = [tiny.detokenize(ids) for ids, _ in scorer.examples]
    expected = np.mean([cosine(a, b) for a, b in zip(embed_texts(tiny, texts), embed_texts(tiny, texts, pruned))])
    assert scorer.quality(head_mask(pruned, tiny)) == pytest.approx(expected, abs=1e-5)
    # d(u·e)/dξ for each line and head is u · ∂e/∂ξ, with ∂e/∂ξ taken by autograd's Jacobian here
    indices, batch = next(scorer.batches())
    gates = {"encoder": torch.ones(tiny.layers("encoder"), len(indices), tiny.heads, requires_grad=True)}
    (gradient,) = torch.autograd.grad(scorer.sentence_losses(batch, gates).sum(), [gates["encoder"]])

    def embedding(flat_gates):
        return scorer.embeddings(batch, {"encoder": flat_gates})[0]
    jacobian = torch.autograd.functional.jacobian(embedding, torch.ones_like(gates["encoder"]))   # [B, d, L, B, H]
    for row, index in enumerate(indices):
        direction = scorer.direction(index, tiny.d_model)
        expected = torch.einsum("d,dlh->lh", direction, jacobian[row, :, :, row, :])
        torch.testing.assert_close(gradient[:, row], expected, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_gradient_importance_ranks_heads_as_ablating_each_does(minilm):
    """On MiniLM (measured on 1,014 captions, all 72 heads: ρ 0.993): here on 40 held-out captions and every other
    head (36: each layer's even heads), each ablated in turn (ρ 0.94 here; all 72: 0.95)."""
    scorer = scorer_for(minilm, captions(40, start=100))
    importance = gradient_importance(scorer)["encoder"].ravel()[::2]
    cost = [1 - scorer.quality(head_mask([spec], minilm)) for spec in all_heads(minilm)[::2]]
    assert len(cost) == 36 and spearmanr(importance, cost).statistic > 0.9


@pytest.mark.slow
def test_the_focus_command_is_transformers_own_attention_over_words(minilm, capsys):
    """`focus --word it --json` on the lecture's sentence: each head's top word and weight, recomputed from
    transformers' eager attentions (a word's weight: the sum over its pieces; from a word: the mean of its rows)."""
    from transformers import BertModel, BertTokenizerFast

    assert main(["focus", "--model", "all-MiniLM-L6-v2", "--text", LECTURE, "--word", "it", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    tokenizer = BertTokenizerFast.from_pretrained(minilm.folder)
    encoded = tokenizer(LECTURE, return_tensors="pt")
    theirs = BertModel.from_pretrained(minilm.folder, attn_implementation="eager").eval()
    with torch.no_grad():
        attentions = theirs(**encoded, output_attentions=True).attentions
    # Words from the tokenizer's offsets: touching pieces form one word, a punctuation mark is a word of its own
    # except an apostrophe inside a word ("didn't"), and a special token is a word of its own.
    offsets = tokenizer(LECTURE, return_offsets_mapping=True)["offset_mapping"]
    groups: list[list[int]] = []
    for index, (start, end) in enumerate(offsets):
        text = LECTURE[start:end]
        special = start == end == 0
        mark = bool(text) and all(character in string.punctuation for character in text)
        before = LECTURE[offsets[index - 1][0]: offsets[index - 1][1]] if index else ""
        touching = index > 0 and offsets[index - 1][1] == start and not special and bool(before)
        glued = touching and (not mark or text == "'") and (before == "'" or not all(
            character in string.punctuation for character in before))
        if glued:
            groups[-1].append(index)
        else:
            groups.append([index])
    words = [LECTURE[offsets[g[0]][0]: offsets[g[-1]][1]] or tokenizer.convert_ids_to_tokens(
        [int(encoded["input_ids"][0, g[0]])])[0] for g in groups]
    it = words.index("it")
    assert answer["position"] == it and len(answer["heads"]) == 72
    for row in answer["heads"]:
        pattern = attentions[row["layer"]][0, row["head"]].numpy()
        from_it = pattern[groups[it]].mean(0)
        by_word = np.array([from_it[g].sum() for g in groups])
        assert row["top_position"] == int(by_word.argmax())
        assert words[row["top_position"]].lower() == row["top_word"].lower()
        assert row["weight"] == pytest.approx(float(by_word.max()), abs=1e-5)
    best = max((r for r in answer["heads"] if r["top_word"] == "animal"), key=lambda r: r["weight"])
    assert best["spec"] == "enc.3.1" and best["weight"] > 0.6        # the lecture's head, on a real model
