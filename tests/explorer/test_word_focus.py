"""Where one word looks (explorer/analyses/sentence/word_focus.py), its grid (explorer/figures/word_focus.py) and the
shipped pronoun examples (explorer/analyses/lecture/pronoun_examples.py): every number checked against the trace's
piece-level patterns aggregated here by hand, and a planted pattern whose answer is known."""

from __future__ import annotations

import html
import re
import string

import numpy as np
import pytest

from explorer.analyses.lecture.pronoun_examples import EXAMPLES_FILE, noun_like, pronoun_and_antecedent, shipped_examples
from explorer.analyses.sentence.word_focus import (
    LECTURE,
    WordAttention,
    answer_text,
    default_word,
    focus,
    resolution,
    resolution_text,
    sentence_attention,
    word_attention,
    word_keys,
)
from explorer.capture.trace import trace_sentence
from explorer.figures.word_focus import (
    CELL_PADDING,
    CHARACTER,
    COLUMN,
    ROW_LABELS,
    WORD_FONT,
    heads_per_block,
    word_focus_grid,
)
from tests.conftest import BUNDLED

LECTURE_SENTENCE = LECTURE[0][0]
LECTURE_WORDS = ["The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired", ".",
                 "</s>"]


def hand_spans(pieces: list[str], special: set[str]) -> list[list[int]]:
    """Words by hand: a word starts at a ▁ piece, at a special token or punctuation, and after either; an
    apostrophe with letters right before and after it and no space after it ("didn", "'", "t") stays in its word."""
    def breaks(piece: str) -> bool:
        bare = piece.lstrip("▁")
        return piece in special or (bool(bare) and all(c in string.punctuation for c in bare))

    def inside(position: int) -> bool:
        return (pieces[position] == "'" and 0 < position < len(pieces) - 1 and pieces[position - 1][-1].isalpha()
                and pieces[position + 1][0].isalpha())

    spans: list[list[int]] = []
    for position, piece in enumerate(pieces):
        joined = inside(position) or (position > 0 and inside(position - 1))
        if not spans or piece.startswith("▁") or (not joined and (breaks(piece) or breaks(pieces[position - 1]))):
            spans.append([position])
        else:
            spans[-1].append(position)
    return spans


def by_hand(trace) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(words, [layers, heads, words, words] pattern, content mask) from the trace's encoder pattern over pieces:
    to a word the sum over its pieces, from a word the mean of its pieces' rows."""
    pieces, special = trace.source_tokens, {"</s>", "<s>", "<pad>"}
    spans = hand_spans(pieces, special)
    pattern = trace.pattern("encoder").astype(np.float64)
    words = np.zeros(pattern.shape[:2] + (len(spans), len(spans)))
    for i, rows in enumerate(spans):
        for j, columns in enumerate(spans):
            words[:, :, i, j] = pattern[:, :, rows][:, :, :, columns].sum(-1).mean(-1)
    labels = ["".join(pieces[p] for p in span).lstrip("▁") for span in spans]
    content = np.array([label not in special and not all(c in string.punctuation for c in label)
                        for label in labels])
    return labels, words, content


def hand_focus(words: np.ndarray, content: np.ndarray, word: int) -> tuple[np.ndarray, np.ndarray]:
    """Each head's most-attended other content word and its weight, by a loop."""
    layers, heads = words.shape[:2]
    target, weight = np.zeros((layers, heads), int), np.zeros((layers, heads))
    for layer in range(layers):
        for head in range(heads):
            best = max((k for k in range(len(content)) if content[k] and k != word),
                       key=lambda k: words[layer, head, word, k])
            target[layer, head], weight[layer, head] = best, words[layer, head, word, best]
    return target, weight


@pytest.fixture(scope="module")
def lecture(h8):
    trace = trace_sentence(h8, LECTURE_SENTENCE)
    return trace, word_attention(h8, trace), by_hand(trace)


def test_words_and_grid_numbers_are_the_traces_pieces_aggregated_by_hand(lecture):
    trace, reading, (labels, words, content) = lecture
    assert labels == LECTURE_WORDS and reading.words == LECTURE_WORDS
    assert len(trace.source_tokens) > len(labels)          # some words are several pieces: the sum/mean matters
    np.testing.assert_allclose(reading.pattern, words, atol=1e-5)
    it = LECTURE_WORDS.index("it")
    assert default_word(reading) == it
    target, weight = hand_focus(words, content, it)
    found = focus(reading, it)
    np.testing.assert_array_equal(found.target, target)
    np.testing.assert_allclose(found.weight, weight, atol=1e-5)
    np.testing.assert_allclose(found.itself, words[:, :, it, it], atol=1e-5)
    # The grid writes those words and percentages in its cells, rows layers and columns heads.
    cells = grid_cells(word_focus_grid(reading, found))
    assert len(cells) == 3 * 8
    for (layer, head), (text, _) in cells.items():
        assert text == f"{labels[target[layer, head]]}\n{round(100 * weight[layer, head])}%"


def parsed_answer(text: str) -> dict[tuple[int, int], tuple[int, str]]:
    """(layer, head) → (percent, word) as the answer states them."""
    stated = {}
    for layer, clauses in re.findall(r"In encoder layer (\d+), (.*?)\.(?= In |$)", text):
        for head, share, word in re.findall(r"head (\d+) gives (\d+)% to “([^”]+)”", clauses):
            stated[int(layer), int(head)] = (int(share), word)
    return stated


def test_answer_states_the_strongest_heads_with_the_traces_percentages(lecture):
    _, reading, (labels, words, content) = lecture
    it = LECTURE_WORDS.index("it")
    target, weight = hand_focus(words, content, it)
    text = answer_text(reading, focus(reading, it))
    stated = parsed_answer(text)
    assert len(stated) == 3 * 2, text                        # the two strongest heads of each of the 3 layers
    for (layer, head), (share, word) in stated.items():
        assert word == labels[target[layer, head]]
        assert abs(share - 100 * weight[layer, head]) <= 0.5 + 1e-6
        others = sorted(weight[layer], reverse=True)
        assert weight[layer, head] >= others[1] - 1e-9      # among the layer's two strongest


def test_lecture_resolution_names_the_heads_whose_top_word_is_animal(lecture):
    _, reading, (labels, words, content) = lecture
    it, animal = LECTURE_WORDS.index("it"), LECTURE_WORDS.index("animal")
    target, weight = hand_focus(words, content, it)
    found = focus(reading, it)
    settled = resolution(reading, found, animal)
    expected = [(int(layer), int(h)) for layer, h in zip(*np.nonzero(target == animal))]
    assert sorted(settled.resolving) == sorted(expected)
    best = np.unravel_index(words[:, :, it, animal].argmax(), weight.shape)
    assert settled.best == tuple(int(i) for i in best)
    text = resolution_text(reading, found, settled)
    for layer, head in expected:
        assert f"enc.{layer}.{head} ({round(100 * weight[layer, head])}%)" in text


# A planted case: "The cat sat because it purred . </s>", 2 layers × 3 heads, only the row of "it" (word 4) filled.
PLANTED = ["The", "cat", "sat", "because", "it", "purred", ".", "</s>"]


def grid_cells(grid: str) -> dict[tuple[int, int], tuple[str, str]]:
    """(layer, head) → (the cell's text, lines split by "\\n"; its background) as the HTML grid writes them."""
    found = re.findall(r'<td data-layer="(\d+)" data-head="(\d+)"[^>]*style="background: ([^;]+);[^>]*>(.*?)</td>', grid)
    return {(int(layer), int(head)): (html.unescape(text.replace("<br>", "\n")), background)
            for layer, head, background, text in found}


def planted(pruned=frozenset()) -> WordAttention:
    pattern = np.zeros((2, 3, 8, 8))
    row = {(0, 0): {1: 0.6, 7: 0.3, 4: 0.1},                # → cat 60%
           (0, 1): {6: 0.9, 2: 0.1},                        # most on ".", which is never named → sat 10%
           (0, 2): {4: 0.5, 1: 0.2, 5: 0.3},                # most on itself, never named → purred 30%
           (1, 0): {1: 0.25, 2: 0.25, 3: 0.25, 5: 0.25},    # a tie → the first, cat 25%
           (1, 1): {3: 0.7, 1: 0.3},                        # → because 70%
           (1, 2): {1: 0.95, 7: 0.05}}                      # → cat 95%
    for (layer, head), weights in row.items():
        for key, weight in weights.items():
            pattern[layer, head, 4, key] = weight
    content = np.array([True, True, True, True, True, True, False, False])
    return WordAttention("encoder", PLANTED, content, pattern, frozenset(pruned))


def test_planted_pattern_gives_the_known_answer():
    reading = planted()
    assert default_word(reading) == 4
    found = focus(reading, 4)
    np.testing.assert_array_equal(found.target, [[1, 2, 5], [1, 3, 1]])
    np.testing.assert_allclose(found.weight, [[0.6, 0.1, 0.3], [0.25, 0.7, 0.95]])
    np.testing.assert_allclose(found.parked, [[0.3, 0.9, 0.0], [0.0, 0.0, 0.05]])
    assert answer_text(reading, found) == (
        "Where “it” looks most: In encoder layer 0, head 0 gives 60% to “cat”; head 2 gives 30% to “purred”. "
        "In encoder layer 1, head 2 gives 95% to “cat”; head 1 gives 70% to “because”.")
    settled = resolution(reading, found, 1)
    assert settled.resolving == [(1, 2), (0, 0), (1, 0)] and settled.best == (1, 2)
    assert resolution_text(reading, found, settled).startswith("Here “it” means “cat”. 3 of 6 heads resolve it")


def test_planted_pruned_heads_are_never_named():
    reading = planted(pruned={(1, 1), (1, 2)})
    found = focus(reading, 4)
    assert answer_text(reading, found).endswith("In encoder layer 1, head 0 gives 25% to “cat”.")
    settled = resolution(reading, found, 3)                    # “because”: only the pruned enc.1.1 looks at it
    assert settled.resolving == [] and settled.heads == 4
    assert resolution_text(reading, found, settled) == (
        "Here “it” means “because”. No head resolves it: none of the 4 heads gives “because” the most weight among "
        "the other words; the most any gives it is 25% (enc.1.0, whose most-attended word is “cat”).")
    cells = grid_cells(word_focus_grid(reading, found))
    assert cells[1, 2] == ("pruned", "#eeeeee") and cells[1, 0][0] == "cat\n25%"


def test_the_grid_colours_by_weight_and_escapes_every_word():
    reading = planted()
    reading.words[1] = '<img src=x onerror="alert(1)">'          # a word of the user's sentence, as the grid gets it
    grid = word_focus_grid(reading, focus(reading, 4))
    assert "<img" not in grid and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in grid
    cells = grid_cells(grid)
    assert cells[1, 2][0] == '<img src=x onerror="alert(1)">\n95%' and cells[0, 1][0] == "sat\n10%"
    assert sum(text.startswith("<img") for text, _ in cells.values()) == 3
    # Darker is more weight: plotly's "Blues" runs from rgb(247, 251, 255) at 0 to rgb(8, 48, 107) at 1.
    found = focus(reading, 4)
    by_weight = sorted(cells, key=lambda cell: found.weight[cell])
    brightness = [sum(map(int, re.findall(r"\d+", cells[cell][1]))) for cell in by_weight]
    assert brightness == sorted(brightness, reverse=True) and len(set(brightness)) == len(set(found.weight.ravel()))
    assert min(brightness) >= 8 + 48 + 107 and max(brightness) <= 247 + 251 + 255
    assert re.search(r'data-layer="1" data-head="2"[^>]*color: white', grid)         # 95%: white on dark blue
    assert re.search(r'data-layer="0" data-head="1"[^>]*color: black', grid)         # 10%: black on pale


def test_word_keys_tell_repeated_words_apart():
    reading = WordAttention("encoder", ["the", "dog", "saw", "the", "cat", "."], np.array([1, 1, 1, 1, 1, 0], bool),
                            np.zeros((1, 1, 6, 6)))
    assert word_keys(reading) == {"the": 0, "dog": 1, "saw": 2, "the~2": 3, "cat": 4}
    assert default_word(reading) == 2                           # no pronoun: the middle content word


def test_grid_keeps_every_label_whole_in_the_narrow_column():
    assert WORD_FONT >= 11
    assert heads_per_block(8, ["because", "animal"]) == 8      # the bundled model: one row of 8 heads
    for heads, words in ((16, ["granddaughter"]), (12, ["a" * 30]), (8, ["businesswoman"])):
        per = heads_per_block(heads, words)
        assert per * (CHARACTER * WORD_FONT * max(map(len, words)) + CELL_PADDING) + ROW_LABELS <= COLUMN


def test_mining_rule_settles_gender_agreement(h8):
    nouns = frozenset({"shirt", "dog", "ball"})

    def settled(text):
        reading = sentence_attention(h8, text)
        found = pronoun_and_antecedent(reading, nouns)
        return found and (reading.words[found[0]], reading.words[found[1]])

    assert settled("A man in a blue shirt is holding his dog.") == ("his", "man")
    assert settled("A girl throws her ball.") == ("her", "girl")
    assert settled("A man and a boy play with his dog.") is None          # two male nouns
    assert settled("Two men and a boy play with his dog.") is None        # a plural one
    assert settled("A woman throws his ball.") is None                     # no agreement
    assert settled("A man smiles at his wife.") is None                    # no other noun-like word in the lexicon
    reading = sentence_attention(h8, "A man in a blue shirt is holding his dog.")
    assert {reading.words[i] for i in noun_like([w.lower() for w in reading.words], reading.content, nouns)} == {
        "shirt", "dog"}


def test_shipped_weights_are_remeasured_on_the_trace(h8):
    shipped = shipped_examples(BUNDLED[8])
    assert shipped is not None, \
        f"models/en-de-h8/{EXAMPLES_FILE} is missing: python -m explorer.analyses.lecture.pronoun_examples"
    assert shipped["sentences_scanned"] > 1000 and 0 <= shipped["best_head_top_share"] <= 1
    assert len(shipped["examples"]) >= 3
    for row in (shipped["examples"][0], shipped["lecture"][0]):
        trace = trace_sentence(h8, row["sentence"])             # as the page traces it
        labels, words, content = by_hand(trace)
        pronoun = labels.index(row["pronoun"])
        antecedent = max(i for i in range(pronoun) if labels[i] == row["antecedent"])
        _, layer, head = row["head"].split(".")
        weight = words[int(layer), int(head), pronoun, antecedent]
        assert abs(weight - row["weight"]) < 0.005, (row, weight)
        target, _ = hand_focus(words, content, pronoun)
        if row in shipped["examples"]:                          # an example's head finds the antecedent
            assert target[int(layer), int(head)] == antecedent
