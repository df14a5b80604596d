"""Word-level views (Clark et al. 2019): words found from the text itself, never from the explorer's rule, and the
aggregated matrices recomputed with loops."""

import re

import numpy as np
import pytest

from explorer.capture.trace import Trace, trace_sentence
from explorer.capture.words import word_trace, words_of
from explorer.models.loader import open_model
from explorer.models.vocabulary import Kind
from tests.hugging_face_models import FAMILIES, saved_model

# No contraction, no two punctuation marks in a row: every tokenizer's pre-tokenizer agrees on its words.
TEXT = "a dog plays in the snow-field, near two men."


@pytest.fixture(scope="module", params=[*FAMILIES, "ours"])
def model(request, tmp_path_factory, tiny_checkpoint):
    return tiny_checkpoint if request.param == "ours" else open_model(str(saved_model(request.param, tmp_path_factory)))


def expected_spans(model, text: str, ids: list[int]) -> list[range]:
    """Piece positions of each word, found by reading the text: its words are runs of letters and single marks of
    punctuation; pieces are consumed until their letters spell the next word. A special token is a word alone,
    except an unknown token, which stands for the next word of the text (the tiny vocabularies lack punctuation)."""
    words = re.findall(r"\w+|[^\w\s]", text)
    labels = model.pieces(ids)
    spans, position, word = [], 0, 0
    unknown = {model.unk_id}
    while position < len(ids):
        if ids[position] in model.special_ids and ids[position] not in unknown:
            spans.append(range(position, position + 1))
            position += 1
            continue
        start, spelled = position, ""
        while spelled != words[word]:
            if ids[position] in unknown:
                spelled = words[word]
            else:
                spelled += labels[position].replace("▁", "").removeprefix("##")
            assert words[word].startswith(spelled), (labels, words[word], spelled)
            position += 1
        spans.append(range(start, position))
        word += 1
    assert word == len(words)
    return spans


def looped(matrix: np.ndarray, queries: list[range], keys: list[range]) -> np.ndarray:
    """Attention from a word: the mean over its pieces; to a word: the sum over its pieces."""
    out = np.zeros(matrix.shape[:-2] + (len(queries), len(keys)))
    for i, query in enumerate(queries):
        for j, key in enumerate(keys):
            out[..., i, j] = np.mean([matrix[..., q, key.start:key.stop].sum(axis=-1) for q in query], axis=0)
    return out


@pytest.mark.slow
def test_words_are_the_texts_words_for_every_tokenizer(model):
    trace = trace_sentence(model, TEXT, fix_casing=False)
    for ids in (trace.source_ids, trace.target_ids[: trace.first_step_position + 1] if not trace.source_ids else []):
        if ids:
            assert words_of(model, ids).spans == expected_spans(model, TEXT, ids)


def test_fast_tokenizers_word_ids_agree(model):
    """transformers' own pre-tokenization (BERT: WordPiece, GPT-2 and BART: byte-level BPE) names the same words."""
    tokenizer = getattr(model, "tokenizer", None)
    backend = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    if type(backend).__name__ not in ("WordPiece", "BPE"):      # SentencePiece's pre-tokenizer keeps "field," whole
        pytest.skip("only WordPiece's and byte-level BPE's pre-tokenizers split punctuation off, as words_of does")
    encoding = tokenizer(TEXT)
    spans = {}
    for position, word in enumerate(encoding.word_ids()):
        spans.setdefault(("special", position) if word is None else word, []).append(position)
    assert words_of(model, encoding.input_ids).spans == [range(p[0], p[-1] + 1) for p in spans.values()]


@pytest.mark.slow
def test_word_trace_sums_to_words_and_averages_from_them(model):
    trace = trace_sentence(model, TEXT, fix_casing=False)
    words = word_trace(model, trace)
    sides = {"source": words_of(model, trace.source_ids).spans, "target": words_of(model, trace.target_ids).spans}
    spans = {"encoder": ("source", "source"), "decoder": ("target", "target"), "cross": ("target", "source")}
    for kind, values in trace.attention.items():
        queries, keys = (sides[side] for side in spans[kind])
        for name in ("pattern", "norm"):
            np.testing.assert_allclose(words.attention[kind].value(name), looped(values.value(name), queries, keys), atol=1e-5)
        np.testing.assert_allclose(words.attention[kind].value("pattern").sum(axis=-1), 1.0, atol=1e-5)
        assert words.masks[kind].shape == (len(queries), len(keys))
        assert set(words.attention[kind].arrays()) == {"pattern", "norm"}
    assert len(words.source_tokens) == len(sides["source"]) and len(words.target_tokens) == len(sides["target"])


def test_wordpiece_continuations_join_their_word():
    """The interface's default word_starts on a WordPiece vocabulary (no ▁ anywhere): ## continues a word."""
    from explorer.models.interface import ExplorerModel

    labels = {0: "[CLS]", 1: "play", 2: "##ing", 3: ",", 4: "ball", 9: "[SEP]"}

    class WordPiece:
        special_ids = frozenset({0, 9})
        word_starts = ExplorerModel.word_starts

        def encode(self, text):
            return type("Encoded", (), {"ids": [0, 1, 1, 9]})

        def pieces(self, ids):
            return [labels[i] for i in ids]

    words = words_of(WordPiece(), [0, 1, 2, 3, 4, 2, 9])
    assert words.spans == [range(0, 1), range(1, 3), range(3, 4), range(4, 6), range(6, 7)]
    assert words.labels == ["[CLS]", "playing", ",", "balling", "[SEP]"]


def test_decoder_causality_survives_at_word_level(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "Two dogs play in the snow.")
    words = word_trace(tiny_checkpoint, trace)
    pattern = words.attention["decoder"].value("pattern")
    future = np.triu(np.ones(pattern.shape[-2:], dtype=bool), 1)
    assert np.all(pattern[..., future] == 0)              # no word attends to a later word
    assert not np.any(words.masks["decoder"][future])


def test_a_word_trace_saves_and_loads(tiny_checkpoint, tmp_path):
    words = word_trace(tiny_checkpoint, trace_sentence(tiny_checkpoint, "A dog's ball, in the snow."))
    loaded = Trace.load(words.save(tmp_path / "words.npz"))
    assert loaded.source_tokens == words.source_tokens
    np.testing.assert_allclose(loaded.attention["cross"].value("pattern"), words.attention["cross"].value("pattern"))


def test_cli_and_notebook_give_the_word_trace(tiny_checkpoint, tmp_path):
    import explorer
    from explorer import cli

    sentence = "A dog's ball, in the snow."
    expected = word_trace(tiny_checkpoint, trace_sentence(tiny_checkpoint, sentence))
    assert cli.main(["trace", "--model", str(tiny_checkpoint.path), "--text", sentence, "--out",
                     str(tmp_path / "words.npz"), "--words"]) == 0
    saved = Trace.load(tmp_path / "words.npz")
    notebook = explorer.word_trace(tiny_checkpoint, explorer.trace_sentence(tiny_checkpoint, sentence))
    for trace in (saved, notebook):
        assert trace.source_tokens == expected.source_tokens and trace.target_tokens == expected.target_tokens
        np.testing.assert_allclose(trace.attention[Kind.ENCODER].value("norm"),
                                   expected.attention[Kind.ENCODER].value("norm"), atol=1e-6)


LECTURE = "The animal didn't cross the street because it was too tired."


def test_contractions_are_one_word_in_the_bundled_model(h8):
    """The bundled SentencePiece splits "didn't" into "▁di", "d", "n", "'", "t": the apostrophe inside a word is no
    punctuation mark of its own, while the final full stop still is."""
    ids = h8.encode(LECTURE).ids
    assert h8.pieces(ids)[2:7] == ["▁di", "d", "n", "'", "t"]        # the case this guards: an apostrophe piece
    assert words_of(h8, ids).labels == ["▁The", "▁animal", "▁didn't", "▁cross", "▁the", "▁street", "▁because", "▁it",
                                        "▁was", "▁too", "▁tired", ".", "</s>"]


def test_apostrophes_inside_words_join_them_quotation_marks_do_not(h8):
    ids = h8.encode("O'Neil said it’s fine, isn't it? 'Yes.'").ids
    assert words_of(h8, ids).labels == ["▁O'Neil", "▁said", "▁it’s", "▁fine", ",", "▁isn't", "▁it", "?", "▁'", "Yes",
                                        ".", "'", "</s>"]


@pytest.mark.parametrize("family", ["gpt2", "bart"])
def test_byte_level_bpe_contractions_are_one_word(family, tmp_path_factory):
    """Byte-level BPE writes the apostrophe as a piece of its own here (the tiny vocabulary has no "'t"); GPT-2's
    pre-tokenizer even cuts "didn" from "'t", but a reader sees one word."""
    model = open_model(str(saved_model(family, tmp_path_factory)))
    ids = model.encode("a dog didn't run, it's o'neil 'yes'").ids
    words = words_of(model, ids)
    labels = [label for label, span in zip(words.labels, words.spans) if ids[span.start] not in model.special_ids]
    assert "'" in model.pieces(ids)
    assert labels == ["a", "▁dog", "▁didn't", "▁run", ",", "▁it's", "▁o'neil", "▁'", "yes", "'"]


def test_wordpiece_contractions_are_one_word():
    """BERT's pre-tokenizer splits "didn't" into "didn", "'", "t", each a word-initial piece, exactly as it splits
    "didn ' t": a clitic after the apostrophe (or an elided "o'" before it) joins; a quotation mark stays apart."""
    from explorer.models.interface import ExplorerModel

    pieces = ["[CLS]", "she", "didn", "'", "t", "say", "'", "yes", "'", "to", "o", "'", "neil", "[SEP]"]
    vocabulary = list(dict.fromkeys(pieces))

    class WordPiece:
        special_ids = frozenset({vocabulary.index("[CLS]"), vocabulary.index("[SEP]")})
        word_starts = ExplorerModel.word_starts

        def encode(self, text):
            return type("Encoded", (), {"ids": [vocabulary.index(p) for p in ("[CLS]", "she", "she", "[SEP]")]})

        def pieces(self, ids):
            return [vocabulary[i] for i in ids]

    words = words_of(WordPiece(), [vocabulary.index(piece) for piece in pieces])
    assert words.labels == ["[CLS]", "she", "didn't", "say", "'", "yes", "'", "to", "o'neil", "[SEP]"]
    assert words.spans[2] == range(2, 5)
