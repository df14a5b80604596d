"""Clark et al.'s card on all-MiniLM-L6-v2, a real BERT: its Figure 2 shares ([CLS], [SEP], periods and commas by
layer) and its Table 1 scores (best head per relation, best fixed offset) recomputed here from transformers' own
attentions and tokenizer, with numpy, none of the explorer's capture, alignment or word-level code."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.capture.treebank import read_trees
from explorer.models.data import read_lines
from explorer.models.installed import INSTALLED
from explorer.models.loader import open_model
from explorer.papers.bench import Budget
from explorer.papers.cards import PAPERS, clark_measures
from explorer.papers.cards.heads_measures import EWT, MULTI30K

NAME = "all-MiniLM-L6-v2"
SENTENCES = 3                       # the card reads 3 val sentences and 5 × 3 UD EWT trees
COMMAS = ["A man, a woman and a dog walk on the beach.", "Two girls, both in red, play soccer."]


@pytest.fixture(scope="module")
def minilm():
    assert INSTALLED[NAME].installed_folder() is not None, f"{NAME} is not installed: run bash scripts/setup.sh"
    return open_model(NAME)


@pytest.fixture(scope="module")
def reference(minilm):
    """transformers' BertModel and tokenizer read from the same folder: (attentions [layers, heads, n, n], tokens)."""
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(minilm.folder, local_files_only=True)
    bert = BertModel.from_pretrained(minilm.folder, attn_implementation="eager", local_files_only=True).eval()

    def attend(encoded):
        with torch.no_grad():
            out = bert(input_ids=torch.tensor([encoded["input_ids"]]), output_attentions=True)
        return np.stack([layer[0].double().numpy() for layer in out.attentions])
    return tokenizer, attend


@pytest.fixture(scope="module")
def card(minilm):
    return PAPERS["clark"](minilm, Budget(sentences=SENTENCES))


def figure_2(reference, texts: list[str]) -> dict[str, np.ndarray]:
    """Per category, the mean over sentences of each layer's share (mean over heads and queries)."""
    tokenizer, attend = reference
    expected = {category: [] for category in ("first", "end", "punctuation")}
    for text in texts:
        encoded = tokenizer(text)
        tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
        attention = attend(encoded)                                      # [layers, heads, n, n]
        columns = {"first": [i for i, t in enumerate(tokens) if t == "[CLS]"],
                   "end": [i for i, t in enumerate(tokens) if t == "[SEP]"],
                   "punctuation": [i for i, t in enumerate(tokens) if t in (".", ",")]}
        assert columns["first"] == [0] and columns["end"] == [len(tokens) - 1]
        for category, keys in columns.items():
            expected[category].append(attention[..., keys].sum(-1).mean(axis=(1, 2)))
    return {category: np.mean(rows, axis=0) for category, rows in expected.items()}


@pytest.mark.slow
def test_figure_2_shares_are_recomputed_from_transformers_attentions(card, minilm, reference):
    shares = card.numbers["token_shares"]
    assert shares["sentences"] == SENTENCES
    for category, expected in figure_2(reference, read_lines(MULTI30K / "val.en.gz")[:SENTENCES]).items():
        np.testing.assert_allclose(shares["by_layer"][category], expected, atol=1e-4)
    with_commas = clark_measures.token_shares(minilm, COMMAS)       # captions seldom have a comma
    for category, expected in figure_2(reference, COMMAS).items():
        np.testing.assert_allclose(with_commas["by_layer"][category], expected, atol=1e-4)
    end = shares["by_layer"]["end"]
    peak = int(np.argmax(end))
    interval = card.interval.parts["end token"]             # over the sentences of the peak layer
    assert interval.mean == pytest.approx(end[peak], abs=1e-4) and interval.count == SENTENCES
    assert card.numbers["met"]["end token"] == (peak > 0 and interval.low >= 0.5)


def reading_words(tokenizer, tree) -> tuple[dict, list]:
    """The written sentence tokenized once, and each piece's word: the one its first character falls in (word
    spans from the words and their SpaceAfter), None for a special token ([CLS], [SEP])."""
    starts, text = [], ""
    for word, space in zip(tree.words, tree.space_after):
        starts.append(len(text))
        text += word + (" " if space else "")
    encoded = tokenizer(text.rstrip(" "), return_offsets_mapping=True)
    return encoded, [None if token in tokenizer.all_special_ids else max(w for w, first in enumerate(starts)
                                                                          if first <= start)
                     for token, (start, _) in zip(encoded.input_ids, encoded.offset_mapping)]


def _clark_scores(attention: np.ndarray, word_ids: list, heads: list[int], relations: list[str], wanted: str):
    """One tree's hits per head for `wanted` in both directions, and the offsets of its arcs (Clark's notebook:
    word-level attention, self-attention zeroed, argmax)."""
    words = max(w for w in word_ids if w is not None) + 1
    to_word = np.zeros((len(word_ids), words))
    from_word = np.zeros((words, len(word_ids)))
    for piece, word in enumerate(word_ids):
        if word is not None:
            to_word[piece, word] = 1
    for word in range(words):
        pieces = [p for p, w in enumerate(word_ids) if w == word]
        from_word[word, pieces] = 1 / len(pieces)
    by_word = from_word @ attention @ to_word                             # [layers, heads, W, W]
    by_word[..., range(words), range(words)] = 0
    hits = {"dependent→head": 0, "head→dependent": 0}
    offsets = []
    for dependent, (head, relation) in enumerate(zip(heads, relations)):
        if relation != wanted or head < 0:
            continue
        hits["dependent→head"] = hits["dependent→head"] + (by_word[:, :, dependent, :].argmax(-1) == head)
        hits["head→dependent"] = hits["head→dependent"] + (by_word[:, :, :, dependent].argmax(-1) == head)
        offsets.append(head - dependent)
    return hits, offsets


@pytest.mark.slow
@pytest.mark.parametrize("relation", ["det", "case"])
def test_table_1_scores_are_recomputed_from_transformers_attentions(card, reference, relation):
    tokenizer, attend = reference
    trees = read_trees(EWT, 5 * SENTENCES, subtypes=True)
    total = {"dependent→head": 0, "head→dependent": 0}
    offsets = []
    for tree in trees:
        encoded, word_ids = reading_words(tokenizer, tree)
        hits, found = _clark_scores(attend(encoded), word_ids, tree.heads, tree.relations, relation)
        total = {d: total[d] + hits[d] for d in total}
        offsets += found
    [row] = [row for row in card.numbers["relations"] if row["ud"] == relation]
    ours = row["ours"]
    assert ours["count"] == len(offsets) > 10
    assert ours["accuracy"] == pytest.approx(max(float(np.max(h)) for h in total.values()) / len(offsets), abs=1e-4)
    layer, head = (int(part) - 1 for part in ours["head"].split("-"))
    assert total[ours["direction"]][layer, head] / len(offsets) == pytest.approx(ours["accuracy"], abs=1e-4)
    best_offset = max(range(-3, 3), key=lambda o: (offsets.count(o), o))
    assert ours["baseline"] == pytest.approx(offsets.count(best_offset) / len(offsets), abs=1e-4)
    assert card.numbers["trees"] == len(trees)


def test_a_words_attention_to_itself_is_never_its_prediction():
    words = np.full((1, 1, 3, 3), 0.1)
    words[0, 0, 1, 1], words[0, 0, 1, 2] = 0.6, 0.3          # word 1 attends most to itself, then to word 2
    assert clark_measures._hits(words, 1, 2).tolist() == [[True]]


def test_the_paper_column_is_clarks_table_with_each_relation_mapped_to_ud(card):
    rows = {row["relation"]: row for row in card.numbers["relations"]}
    assert rows["det"]["paper"] == {"head": "8-11", "accuracy": 0.943, "baseline": 0.517}
    assert rows["dobj"]["ud"] == "obj" and rows["dobj"]["paper"]["accuracy"] == 0.868
    assert rows["prep"]["ud"] is None and rows["prep"]["ours"] is None and "no UD counterpart" in rows["prep"]["note"]
    uds = [row["ud"] for row in card.numbers["relations"] if row["ud"]]
    assert len(uds) == len(set(uds))                                  # one paper relation per UD relation
    assert "det→det" in card.ours and "paper 8-11 94.3% vs 51.7%" in card.ours
    # [SEP] over half of the attention in layers 6–10 (§3.2): the figure's reading says so too
    assert all(clark_measures.PAPER_FIGURE["end"][layer - 1] > 0.45 for layer in range(5, 11))
