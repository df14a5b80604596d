"""The head atlas (issue 62) against independent computations: the map's distances from transformers' own eager
attentions and scipy's Jensen–Shannon distance, the search's shares from hand-written loops over the same attentions,
the query–key alignment keeping every pattern, shards that add up to the one-process result, and the commands."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

from explorer.analyses.corpus.atlas import head_map, layer_grouping, map_statistics
from explorer.analyses.corpus.head_search import search_heads
from explorer.analyses.corpus.query_key_space import aligned, query_key_space
from explorer.analyses.jobs.job_registry import registered
from explorer.capture.treebank import read_trees
from explorer.cli import main
from explorer.models.loader import open_model

# Held out: not Multi30k captions, of different lengths, one with a repeated word (the `same` pattern has a hit)
HELD_OUT = ["The old lighthouse keeper counted the ships before the storm.", "Why?",
            "A cat watched a cat on the windowsill while rain fell on the roof of the house."]


@pytest.fixture(scope="module")
def minilm():
    return open_model("all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def their_attentions(minilm):
    """[layers × heads, queries, keys] per sentence, from transformers' BertModel with eager attention."""
    from transformers import BertModel, BertTokenizerFast

    tokenizer = BertTokenizerFast.from_pretrained(minilm.folder)
    theirs = BertModel.from_pretrained(minilm.folder, attn_implementation="eager").eval()
    patterns = []
    for sentence in HELD_OUT:
        encoded = tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            attentions = theirs(**encoded, output_attentions=True).attentions
        pattern = torch.cat(attentions).double().numpy()                       # [layers, heads, q, k]
        patterns.append((pattern.reshape(-1, *pattern.shape[2:]), tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])))
    return patterns


@pytest.mark.slow      # transformers' own model beside ours, 72 × 72 heads (the fast tier: the planted heads)
def test_the_atlas_command_is_scipys_jensen_shannon_over_transformers_attentions(minilm, their_attentions, tmp_path,
                                                                                capsys):
    text = tmp_path / "held_out.txt"
    text.write_text("\n".join(HELD_OUT) + "\n", encoding="utf-8")
    assert main(["atlas", "--model", "all-MiniLM-L6-v2", "--text", str(text), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    distance = np.array(answer["distance"])
    assert distance.shape == (72, 72) and len(answer["heads"]) == 72 and answer["sentences"] == 3
    assert [head["name"] for head in answer["heads"][:3]] == ["enc.0.0", "enc.0.1", "enc.0.2"]
    assert {"name", "layer", "head", "x", "y"} <= set(answer["heads"][0])
    assert np.allclose(distance, distance.T) and np.all(np.diag(distance) == 0)
    sums, queries = np.zeros((72, 72)), 0
    for rows, _ in their_attentions:
        for query in range(rows.shape[1]):
            for i in range(72):
                for j in range(i + 1, 72):
                    sums[i, j] += jensenshannon(rows[i, query], rows[j, query], base=2) ** 2
        queries += rows.shape[1]
    expected = (sums + sums.T) / queries
    assert np.abs(distance - expected).max() < 1e-3
    # the layout keeps the distances' order: MDS puts far heads farther on the whole
    xy = np.array([[head["x"], head["y"]] for head in answer["heads"]])
    drawn = np.linalg.norm(xy[:, None] - xy[None, :], axis=-1)
    upper = np.triu_indices(72, 1)
    assert np.corrcoef(drawn[upper], expected[upper])[0, 1] > 0.8


@pytest.mark.slow
def test_the_search_is_a_hand_count_of_transformers_attentions(minilm, their_attentions):
    found = search_heads(minilm, HELD_OUT, "any", "previous")
    given, counted = np.zeros(72), 0
    for rows, _ in their_attentions:
        for query in range(1, rows.shape[1]):
            given += rows[:, query, query - 1]
            counted += 1
    shares = {head.name: head.share for head in found.heads}
    expected = {f"enc.{n // 12}.{n % 12}": given[n] / counted for n in range(72)}
    assert found.queries == counted and max(abs(shares[name] - expected[name]) for name in expected) < 1e-4
    assert all(head.low <= head.share <= head.high for head in found.heads)
    assert [head.share for head in found.heads] == sorted(shares.values(), reverse=True)
    # `same`: "cat" at position 5 sees its earlier copy at position 2 (the tokenizer's pieces; [CLS] at 0)
    _, tokens = their_attentions[2]
    assert tokens[2] == tokens[5] == "cat"
    same = search_heads(minilm, HELD_OUT[2:], "word:cat", "same")
    rows, _ = their_attentions[2]
    assert same.queries == 1 and np.isclose(same.heads[0].share, rows[:, 5, 2].max(), atol=1e-4)


def test_planted_heads_are_apart_by_the_formula():
    """Three planted heads over 4 keys: two identical one-hot heads are 0 bits apart; a one-hot and a uniform head
    are H(m) − (0 + 2) / 2 bits apart, m their mean (written out here); the diagonal is 0."""
    from explorer.analyses.corpus.atlas import divergence_sums

    one_hot, uniform = np.array([1.0, 0, 0, 0]), np.full(4, 0.25)
    pattern = np.stack([one_hot, one_hot, uniform])[None, :, None, :]              # [1 layer, 3 heads, 1 query, 4]
    sums = divergence_sums(np.repeat(pattern, 2, axis=2))                             # two queries
    m = (one_hot + uniform) / 2
    expected = -(m * np.log2(m)).sum() - (0 + 2) / 2
    assert np.allclose(sums, 2 * np.array([[0, 0, expected], [0, 0, expected], [expected, expected, 0]]))


def test_aligning_queries_and_keys_keeps_every_pattern(h8):
    """AttentionViz's move and scale leave softmax(q·k) of every query as it was; the space has one point per query
    and key of the sentences read."""
    space = query_key_space(h8, HELD_OUT, 1, 6)
    pieces = sum(len(h8.encode(sentence).ids) for sentence in HELD_OUT)
    assert len(space.points) == 2 * pieces and space.head == "enc.1.6"
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(9, 32)), rng.normal(size=(9, 32)) + 3.0
    q2, k2 = aligned(q, k)
    softmax = lambda scores: np.exp(scores - scores.max(-1, keepdims=True)) / np.exp(                  # noqa: E731
        scores - scores.max(-1, keepdims=True)).sum(-1, keepdims=True)
    assert np.allclose(softmax(q @ k.T), softmax(q2 @ k2.T))
    assert np.allclose(k2.mean(0), q2.mean(0))                  # one centre
    scale = (q2 / q)[0, 0]                                       # the c that scaled the queries
    assert np.isclose(np.linalg.norm(q * scale, axis=1).mean(), np.linalg.norm(k / scale, axis=1).mean())


def test_shards_add_up_to_the_one_process_map_and_search(h8):
    sentences = HELD_OUT * 2
    one = head_map(h8, "cross", map_statistics(h8, sentences, "cross"))
    job = registered("atlas", "explorer.analyses.jobs.atlas_jobs")
    parts = [job.run(h8, shard) for shard in job.shard(h8, {"sentences": sentences}, {"kind": "cross"}, 3)]
    assert len(parts) == 3
    merged = job.merge(h8, {"sentences": sentences}, {"kind": "cross"}, parts)
    assert np.allclose(merged.matrix(), one.matrix(), atol=1e-6) and merged.queries == one.queries
    search = registered("search-heads", "explorer.analyses.jobs.atlas_jobs")
    options = {"kind": "encoder", "query": "any", "key": "previous"}
    parts = [search.run(h8, shard) for shard in search.shard(h8, {"sentences": sentences}, options, 2)]
    merged = search.merge(h8, {"sentences": sentences}, options, parts)
    alone = search_heads(h8, sentences, "any", "previous")
    assert [(h.name, h.share, h.low, h.high) for h in merged.heads] == [(h.name, h.share, h.low, h.high)
                                                                        for h in alone.heads]


@pytest.mark.slow
def test_heads_of_one_layer_are_closer_on_minilm(minilm):
    """Issue 62's finding on 40 held-out captions: two heads of one layer nearer than two of different layers."""
    from explorer import settings
    from explorer.models.data import read_lines

    captions = read_lines(settings.MULTI30K / "test_2016_flickr.en.gz")[:40]
    statistics = map_statistics(minilm, captions, "encoder", keep_each=True)
    grouping = layer_grouping(statistics["each"], minilm.heads)
    assert grouping["pairs_within"] == 6 * 66 and grouping["pairs_across"] == 72 * 71 // 2 - 6 * 66
    assert grouping["within"] < grouping["across"] and grouping["interval"].low > 0
    distance = head_map(minilm, "encoder", statistics).matrix()
    layer = np.arange(72) // 12
    same = layer[:, None] == layer[None, :]
    upper = np.triu(np.ones((72, 72), dtype=bool), 1)
    assert np.isclose(distance[upper & same].mean(), grouping["within"], atol=2e-3)


def test_bad_patterns_and_stacks_are_one_line(capsys):
    assert main(["search-heads", "--model", "en-de-h8", "--limit", "3", "--key", "later"]) == 1
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert main(["search-heads", "--model", "en-de-h8", "--limit", "3", "--kind", "cross", "--key", "previous"]) == 1
    assert "needs self-attention" in capsys.readouterr().err
    assert main(["atlas", "--model", "all-MiniLM-L6-v2", "--kind", "cross", "--limit", "3"]) == 1
    assert "has no cross attention" in capsys.readouterr().err


CONLLU = """# text = The dog saw a cat.
1	The	the	DET	DT	_	2	det	_	_
2	dog	dog	NOUN	NN	_	3	nsubj	_	_
3	saw	see	VERB	VBD	_	0	root	_	_
4	a	a	DET	DT	_	5	det	_	_
5	cat	cat	NOUN	NN	_	3	obj	_	SpaceAfter=No
6	.	.	PUNCT	.	_	3	punct	_	_

"""


def test_a_search_over_a_treebank_reads_its_grammar_word_by_word(minilm, tmp_path, capsys):
    """deprel:det → head on one tree of one-piece words: each determiner's attention on its noun, averaged over the
    two determiners, from transformers' attentions at the pieces' positions ([CLS] first); pos:NOUN → dependent the
    same from the nouns to their determiners."""
    from transformers import BertModel, BertTokenizerFast

    treebank = tmp_path / "tiny.conllu"
    treebank.write_text(CONLLU, encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(minilm.folder)
    encoded = tokenizer("The dog saw a cat.", return_tensors="pt")
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"][0]) == ["[CLS]", "the", "dog", "saw", "a", "cat", ".",
                                                                        "[SEP]"]
    theirs = BertModel.from_pretrained(minilm.folder, attn_implementation="eager").eval()
    with torch.no_grad():
        rows = torch.cat(theirs(**encoded, output_attentions=True).attentions).double().numpy().reshape(72, 8, 8)
    assert main(["search-heads", "--model", "all-MiniLM-L6-v2", "--conllu", str(treebank), "--query", "deprel:det",
                 "--key", "head", "--json"]) == 0
    found = {head["name"]: head["share"] for head in json.loads(capsys.readouterr().out)["heads"]}
    expected = (rows[:, 1, 2] + rows[:, 4, 5]) / 2                 # the → dog, a → cat (pieces 1 → 2, 4 → 5)
    assert max(abs(found[f"enc.{n // 12}.{n % 12}"] - expected[n]) for n in range(72)) < 1e-4
    nouns = search_heads(minilm, None, "pos:NOUN", "dependent", trees=read_trees(treebank))
    # dog's dependent is The (2 → 1); cat's is a (5 → 4)
    expected = (rows[:, 2, 1] + rows[:, 5, 4]) / 2
    shares = {head.name: head.share for head in nouns.heads}
    assert nouns.queries == 2 and max(abs(shares[f"enc.{n // 12}.{n % 12}"] - expected[n]) for n in range(72)) < 1e-4
    assert main(["search-heads", "--model", "all-MiniLM-L6-v2", "--key", "head", "--limit", "2"]) == 1
    assert "with a treebank" in capsys.readouterr().err
