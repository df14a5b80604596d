"""AppTest of the Attention page's “Which word does a word look at?” (pages/components/word_focus_section.py): the lecture's
sentence answered with the trace's own numbers, the “Try a sentence” examples, and odd input."""

import re

import numpy as np
import pytest

from explorer.analyses.lecture.pronoun_examples import shipped_examples
from explorer.capture.trace import trace_sentence
from tests.app.conftest import open_page
from tests.conftest import BUNDLED
from tests.explorer.test_word_focus import LECTURE_SENTENCE, by_hand, grid_cells, hand_focus, parsed_answer


def answer_of(at) -> str:
    found = [block.value for block in at.markdown if block.value.startswith("Where “")]
    assert len(found) == 1, [block.value[:60] for block in at.markdown]
    return found[0]


def resolution_of(at) -> str:
    found = [box.value for box in at.info if box.value.startswith("Here “")]
    assert len(found) == 1, [box.value[:60] for box in at.info]
    return found[0]


def test_lecture_sentence_is_answered_with_the_traces_numbers(h8):
    at = open_page("attention.py", LECTURE_SENTENCE)
    assert at.selectbox(key="word_focus_word").value == "it" and at.query_params["word"] == "it"
    labels, words, content = by_hand(trace_sentence(h8, LECTURE_SENTENCE))
    it, animal = labels.index("it"), labels.index("animal")
    target, weight = hand_focus(words, content, it)
    stated = parsed_answer(answer_of(at))
    assert len(stated) == 6
    for (layer, head), (share, word) in stated.items():
        assert word == labels[target[layer, head]] and abs(share - 100 * weight[layer, head]) <= 0.5 + 1e-6
    # Whether a head resolves “it”: the heads named are exactly those whose top word is “animal”, at their weight.
    said = resolution_of(at).split("\n\n")[0]
    assert "“it” means “animal”" in said
    named = {(int(layer), int(h)): int(p) for layer, h, p in re.findall(r"enc\.(\d+)\.(\d+) \((\d+)%\)", said)}
    resolving = {(int(layer), int(h)) for layer, h in zip(*np.nonzero(target == animal))}
    if resolving:
        assert set(named) == resolving
        for (layer, head), share in named.items():
            assert abs(share - 100 * weight[layer, head]) <= 0.5 + 1e-6
    else:
        assert said.startswith("Here “it” means “animal”. No head resolves it")
    # The grid: one cell per head, its word and percentage the trace's.
    [grid] = [block.proto.body for block in at.get("html") if "Where “it” looks" in block.proto.body]
    cells = [text for _, (text, _) in grid_cells(grid).items()]
    assert sorted(cells) == sorted(f"{labels[target[layer, h]]}\n{round(100 * weight[layer, h])}%"
                                   for layer in range(3) for h in range(8))


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1])
def test_try_a_sentence_sets_the_sidebar_sentence_and_its_pronoun(h8, index):
    example = shipped_examples(BUNDLED[8])["examples"][index]
    at = open_page("attention.py", LECTURE_SENTENCE)
    at.selectbox(key="word_focus_try").select(example["sentence"]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["sentence"] == example["sentence"]
    assert at.selectbox(key="word_focus_word").value == example["pronoun"]
    said = resolution_of(at)
    assert f"“{example['pronoun']}” means “{example['antecedent']}”" in said
    assert f"{example['head']} ({round(100 * example['weight'])}%)" in said
    # …and that percentage is the trace's, recomputed here: the head's top word is the antecedent, at that weight.
    labels, words, content = by_hand(trace_sentence(h8, example["sentence"]))
    target, weight = hand_focus(words, content, labels.index(example["pronoun"]))
    layer, head = (int(part) for part in example["head"].split(".")[1:])
    assert labels[target[layer, head]] == example["antecedent"]
    assert abs(round(100 * weight[layer, head]) - round(100 * example["weight"])) <= 1


def test_empty_and_markup_sentences_do_not_raise():
    open_page("attention.py", "")                       # the page says to type a sentence; nothing raises
    at = open_page("attention.py", "<script>alert('it')</script>")
    assert at.selectbox(key="word_focus_word").value == "it"
    assert "<script>" not in answer_of(at)
