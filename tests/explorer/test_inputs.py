"""Whatever a person types gives a translation or a clear message; nothing breaks."""

import pytest

from explorer.capture.inputs import InputError, prepare_source, sentence_case
from explorer.capture.trace import trace_sentence
from explorer.capture.translation import translate

ODD = ["😀🐕 A dog 🐶 runs.", "一只狗在跑。 A dog.", "A\x00 dog\x07 runs\u200b\u202e.", "Ein Hund läuft über die Straße.",
       "</script><script>alert(1)</script><img src=x onerror=alert(2)>", "\ud800 broken surrogate", "ﬁ ligature Ⅻ"]


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\x00\x01"])
def test_empty_input_asks_for_a_sentence(tiny_checkpoint, text):
    with pytest.raises(InputError, match="Please type a sentence"):
        prepare_source(text, tiny_checkpoint)


@pytest.mark.parametrize("text", ODD)
def test_odd_unicode_translates(tiny_checkpoint, text):
    source = prepare_source(text, tiny_checkpoint)
    assert source.ids[-1] == 3 and all(0 <= i < 400 for i in source.ids)
    assert not any(ch in source.text for ch in "\x00\x07\u200b\u202e")
    [translation] = translate(tiny_checkpoint, [text])
    assert isinstance(translation, str)


def test_a_5000_character_sentence_is_cut_with_a_notice(tiny_checkpoint):
    text = "A man rides a bike down the street. " * 140
    assert len(text) >= 5000
    source = prepare_source(text, tiny_checkpoint)
    assert source.truncated and len(source.ids) == 64
    trace = trace_sentence(tiny_checkpoint, text)
    assert trace.truncated and trace.pattern("encoder").shape[-1] == 64
    assert not prepare_source("A dog.", tiny_checkpoint).truncated


@pytest.mark.parametrize("typed, fed", [
    ("THE DOG IS RUNNING.", "The dog is running."),
    ("a man rides a bike.", "A man rides a bike."),
    ("I THINK I SAW IT", "I think I saw it"),             # the lone English "i" stays a capital
    ("ÜBER DEN WOLKEN", "Über den wolken"),
    ("2 dogs run.", None),                                # starts with a digit: already as a caption writes it
    ("The dog is running.", None), ("NASA launches a rocket.", None),   # mixed casing is left as typed
    ("OK", None), ("a", None), ("😀 123", None)])          # too few letters to be a casing choice
def test_sentence_case_only_changes_all_caps_or_all_lower_text(typed, fed):
    assert sentence_case(typed) == fed


def test_the_trace_says_what_was_fed_when_the_casing_was_fixed(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "THE  DOG IS RUNNING.", fix_casing=True)
    assert (trace.text, trace.recased_from) == ("The dog is running.", "THE DOG IS RUNNING.")
    assert trace.source_ids == prepare_source("The dog is running.", tiny_checkpoint).ids
    as_typed = trace_sentence(tiny_checkpoint, "THE DOG IS RUNNING.")          # the default: as typed
    assert (as_typed.text, as_typed.recased_from) == ("THE DOG IS RUNNING.", "")
    assert as_typed.source_ids != trace.source_ids


def test_the_app_recases_only_for_a_model_trained_on_sentence_case(tiny_checkpoint, tmp_path_factory):
    """The sidebar's casing fix applies to the bundled translators (trained on sentence-case captions); a Hugging
    Face model reads the text as typed, as the command line and the notebook read it for every model."""
    from explorer.capture.inputs import app_casing
    from explorer.models.loader import open_model
    from tests.hugging_face_models import saved_model

    gpt2 = open_model(saved_model("gpt2", tmp_path_factory))
    assert app_casing(tiny_checkpoint, True) and not app_casing(tiny_checkpoint, False)
    assert not app_casing(gpt2, True) and not gpt2.reads_sentence_case
