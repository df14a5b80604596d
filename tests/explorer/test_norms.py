"""Norm-based attention (Kobayashi et al. 2020): ‖α_ij · v_j W_O^h‖, recomputed here from transformers' own
modules and hidden states, never from the explorer's captured values."""

import numpy as np
import pytest
import torch
import transformers

from explorer.analyses.sentence.norms import share_on
from explorer.capture.head_sets import HeadSpec
from explorer.capture.trace import trace_sentence
from explorer.models.loader import open_model
from tests.hugging_face_models import SENTENCE, saved_model


def head_slices(weight_out_in: torch.Tensor, heads: int) -> list[torch.Tensor]:
    """W_O^h [d_model, d_k] for each head, from W_O stored [out, in]."""
    d_k = weight_out_in.shape[1] // heads
    return [weight_out_in[:, h * d_k:(h + 1) * d_k] for h in range(heads)]


def expected_norms(attentions, values, w_o, heads):
    """α [heads, q, k] · ‖v_j^h W_O^hᵀ‖ for one layer; values [keys, heads × d_k]."""
    d_k = values.shape[-1] // heads
    out = []
    for h, block in enumerate(head_slices(w_o, heads)):
        lengths = torch.linalg.vector_norm(values[:, h * d_k:(h + 1) * d_k] @ block.T, dim=-1)
        out.append(attentions[h] * lengths[None, :])
    return torch.stack(out).numpy()


def test_bart_encoder_norms_equal_transformers_own_numbers(tmp_path_factory):
    folder = saved_model("bart", tmp_path_factory)
    model = open_model(str(folder))
    trace = trace_sentence(model, SENTENCE)
    theirs = transformers.BartForConditionalGeneration.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([trace.source_ids])
    with torch.no_grad():
        output = theirs.model.encoder(input_ids=ids, output_attentions=True, output_hidden_states=True)
        for layer, block in enumerate(theirs.model.encoder.layers):
            values = block.self_attn.v_proj(output.hidden_states[layer])[0]      # BART: attention reads h_l itself
            expected = expected_norms(output.attentions[layer][0], values, block.self_attn.out_proj.weight, 4)
            np.testing.assert_allclose(trace.attention["encoder"].value("norm")[layer], expected, rtol=1e-4, atol=1e-6)


def test_gpt2_norms_use_its_transposed_output_projection(tmp_path_factory):
    folder = saved_model("gpt2", tmp_path_factory)
    model = open_model(str(folder))
    trace = trace_sentence(model, SENTENCE)
    kind = model.kinds[0]
    theirs = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    positions = trace.attention[kind].value("pattern").shape[-1]
    ids = torch.tensor([trace.target_ids[:positions]])
    with torch.no_grad():
        output = theirs.transformer(input_ids=ids, output_attentions=True, output_hidden_states=True)
        for layer, block in enumerate(theirs.transformer.h):
            values = block.attn.c_attn(block.ln_1(output.hidden_states[layer]))[0].split(16, dim=-1)[2]
            expected = expected_norms(output.attentions[layer][0], values, block.attn.c_proj.weight.T, 4)
            np.testing.assert_allclose(trace.attention[kind].value("norm")[layer], expected, rtol=1e-4, atol=1e-6)


def test_a_pruned_head_adds_nothing_and_norms_vanish_on_zero_weight(h8):
    trace = trace_sentence(h8, "Two dogs play in the snow.", pruned=[HeadSpec("cross", 1, 3)])
    norm, pattern = trace.attention["decoder"].value("norm"), trace.attention["decoder"].value("pattern")
    assert np.all(norm[pattern == 0] == 0)                  # future positions: weight 0, norm 0
    assert np.all(trace.attention["cross"].value("norm")[1, 3] == 0) and trace.attention["cross"].value("norm")[1, 2].sum() > 0
    assert np.all(norm >= 0)


def test_share_on_normalises_each_row_first():
    weights = np.array([[0.5, 0.5], [1.0, 0.0]])
    norms = np.array([[1.0, 3.0], [2.0, 0.0]])               # rows normalise to [0.25, 0.75] and [1, 0]
    assert share_on(weights, [0]) == pytest.approx(0.75)
    assert share_on(norms, [0]) == pytest.approx(0.625)
    assert share_on(norms, []) == 0.0


def test_the_norms_travel_with_a_saved_trace(h8, tmp_path):
    from explorer.capture.trace import Trace

    trace = trace_sentence(h8, "Two dogs play in the snow.")
    for suffix in (".npz", ".json"):
        loaded = Trace.load(trace.save(tmp_path / f"trace{suffix}"))
        np.testing.assert_allclose(loaded.attention["cross"].value("norm"), trace.attention["cross"].value("norm"), atol=1e-5)


def test_bertviz_gets_each_rows_norms_as_shares_of_one(h8):
    """What bertviz draws for norms: each query's ‖α·f(x)‖ divided by that row's sum (recomputed here in float64)."""
    from explorer.analyses.sentence.norms import norm_shares
    from explorer.figures.bertviz_views import head_view_html

    trace = trace_sentence(h8, "Two dogs play in the snow.")
    drawn = norm_shares(trace)
    for kind, values in trace.attention.items():
        norms = values.value("norm").astype(np.float64)
        np.testing.assert_allclose(drawn.pattern(kind), norms / norms.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(drawn.pattern(kind).sum(-1), 1.0, atol=1e-5)
        assert not np.allclose(drawn.pattern(kind), trace.pattern(kind), atol=1e-3)   # not the weights again
    assert head_view_html(drawn) != head_view_html(trace)
