"""The trace service (explorer/service.py), as a notebook uses it without Streamlit: a model opened once, a trace equal
to a fresh capture and computed once per key, a folder retrained in place opened anew, and a loaded model answered
while another one loads. And the typed trace's attention kinds (models/vocabulary.py Kind) against the captured
shapes and masks."""

from __future__ import annotations

import os
import shutil
import threading

import numpy as np

from explorer.capture.head_sets import HeadSpec
from explorer.capture.trace import trace_sentence
from explorer.models.loader import open_model
from explorer.service import ModelRef, TraceService

SENTENCE = "A man rides a bike."


def counting_service() -> tuple[TraceService, list[str]]:
    opened: list[str] = []

    def opener(path: str):
        opened.append(path)
        return open_model(path)

    return TraceService(opener=opener), opened


def test_a_model_is_opened_once_and_a_trace_computed_once_per_key(tiny_checkpoint):
    service, opened = counting_service()
    ref = ModelRef.of(tiny_checkpoint.path)
    trace = service.trace(ref, SENTENCE)
    assert service.trace(ref, SENTENCE) is trace and service.traces.computed == 1 and opened == [ref.path]
    expected = trace_sentence(open_model(tiny_checkpoint.path), SENTENCE)        # an independent capture
    assert trace.output_text == expected.output_text
    for kind in open_model(tiny_checkpoint.path).kinds:
        np.testing.assert_array_equal(trace.pattern(kind), expected.pattern(kind))
    pruned = service.trace(ref, SENTENCE, pruned=(HeadSpec("encoder", 0, 0),))         # another key: computed anew
    assert service.traces.computed == 2 and pruned.pruned and not trace.pruned
    assert not trace.pattern("encoder").flags.writeable                          # shared, so read-only


def test_a_folder_retrained_in_place_is_opened_anew(tiny_checkpoint, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_checkpoint.path, folder)
    service, opened = counting_service()
    first = ModelRef.of(folder)
    service.model(first)
    weights = folder / "model.safetensors"
    os.utime(weights, (weights.stat().st_atime, weights.stat().st_mtime + 10))
    second = ModelRef.of(folder)
    assert second != first and second.path == first.path
    service.model(second)
    assert opened == [str(folder), str(folder)]
    assert ModelRef.of(tmp_path / "missing").modified == 0.0        # opening it says why
    bundled = open_model("en-de-h1").path / "model.safetensors"      # a bare name is timed by its folder's weights
    assert ModelRef.of("en-de-h1").modified == bundled.stat().st_mtime > 0


def test_a_loaded_model_is_not_held_up_by_another_ones_load(tiny_checkpoint):
    service, _ = counting_service()
    ref = ModelRef.of(tiny_checkpoint.path)
    loaded = service.model(ref)
    found = []
    with service._loading:                          # another model is loading
        asking = threading.Thread(target=lambda: found.append(service.model(ref)))
        asking.start()
        asking.join(5)
        assert found == [loaded]                    # answered while the lock was still held


def test_each_kind_knows_its_sides_and_its_mask_as_the_model_computes_them(tiny_checkpoint):
    """The Kind's query and key sides are the trace's rows and columns, and `causal` is exactly the kind whose
    captured mask hides later keys; an independent reading of the model's own numbers, not of the Kind's table."""
    from explorer.models.vocabulary import ATTENTION_KINDS, Kind, Side

    model = open_model(tiny_checkpoint.path)
    trace = trace_sentence(model, "Two dogs play in the snow near a red house.")
    assert len(trace.source_tokens) != len(trace.target_tokens)          # so the sides cannot be mistaken
    for kind in ATTENTION_KINDS:
        rows, columns = trace.pattern(kind).shape[-2:]
        assert (rows, columns) == (len(trace.tokens(kind.query_side)), len(trace.tokens(kind.key_side)))
        hides_every_later_key = not trace.masks[kind][np.triu_indices(rows, 1, columns)].any()
        assert kind.causal == hides_every_later_key == (kind is Kind.DECODER)
        assert kind.is_self == (kind.query_side is kind.key_side) and kind == Kind(str(kind))
    assert Kind.CROSS.reads_the_source and Kind("encoder").query_side is Side.SOURCE
    assert trace.step_kind is Kind.CROSS and trace.key_ids("cross") == trace.source_ids


def test_a_traces_attention_is_typed_values_by_kind_not_nested_dicts(tiny_checkpoint):
    """Trace.attention maps a Kind to its HeadValues; no field of a Trace is a dict of dicts, and a saved trace reads
    back as the same types."""
    import typing

    from explorer.capture.trace import HeadValues, Trace
    from explorer.models.vocabulary import Kind

    nested = [name for name, hint in typing.get_type_hints(Trace).items()
              if typing.get_origin(hint) is dict and typing.get_origin(typing.get_args(hint)[1]) is dict]
    assert nested == []
    trace = trace_sentence(open_model(tiny_checkpoint.path), SENTENCE)
    assert all(type(kind) is Kind and isinstance(values, HeadValues) for kind, values in trace.attention.items())
    values = trace.attention[Kind.ENCODER]
    assert set(values.arrays()) == {"pattern", "scores", "q", "k", "v", "z", "norm"}
    assert values.value("norm") is values.norm and values.pattern.shape[-2:] == values.value("scores").shape[-2:]
    try:
        HeadValues(values.pattern).value("scores")          # a window's view has its weights only
    except KeyError as missing:
        assert missing.args == ("scores",)
    else:
        raise AssertionError("a value the view lacks was returned")
