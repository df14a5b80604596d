"""unembed, the interface's way from a residual stream to logits, in every family: applied to the last layer's
residual stream (hook {stack}.layers.L.resid_post) it gives exactly the logits forward returns, so the logit lens
(explorer/analyses/sentence/logit_lens.py) reads every earlier layer as the model reads its last."""

from __future__ import annotations

import pytest
import torch

from explorer.models.interface import ExplorerModel
from explorer.models.loader import open_model
from explorer.models.vocabulary import layer_hook
from tests.hugging_face_models import PREDICTS_TOKENS, SENTENCE, saved_model


@pytest.fixture(scope="module", params=["ours", *PREDICTS_TOKENS])
def opened(request, tmp_path_factory, tiny_checkpoint) -> ExplorerModel:
    return tiny_checkpoint if request.param == "ours" else open_model(saved_model(request.param, tmp_path_factory))


def test_unembed_of_the_last_layer_is_the_models_own_logits(opened):
    model = opened
    sources = [model.encode(SENTENCE).ids, model.encode("a dog runs").ids]      # the second padded
    outputs = [model.encode_reference("two men play football")[:5], model.encode_reference("a cat")[:2]]
    source = model.pad(sources) if model.has("encoder") else None
    target = model.pad([model.decoder_input(s, o)[0] for s, o in zip(sources, outputs)]) if model.has("decoder") else None
    stack = "decoder" if model.has("decoder") else "encoder"
    bias = getattr(getattr(model, "model", None), "final_logits_bias", None)
    if bias is not None:            # Marian's and BART's, zero in a fresh model: made to matter
        with torch.no_grad():
            bias.copy_(torch.randn(bias.shape, generator=torch.Generator().manual_seed(1)))
    last = layer_hook(stack, model.layers(stack) - 1)
    logits, cache = model.run_with_cache(source, target, [last])
    with torch.no_grad():
        lensed = model.unembed(stack, cache[last])
    torch.testing.assert_close(lensed, logits, atol=1e-5, rtol=1e-4)
    # an earlier layer's residual stream is a different one: the lens is not the output whatever it is given
    first = layer_hook(stack, 0)
    _, early = model.run_with_cache(source, target, [first])
    with torch.no_grad():
        assert not torch.allclose(model.unembed(stack, early[first]), logits, atol=1e-3)


def test_the_other_stack_has_no_output_projection(opened):
    model = opened
    if not model.has("encoder") or not model.has("decoder"):
        pytest.skip("one stack only")
    with pytest.raises(ValueError, match="encoder"):
        model.unembed("encoder", torch.zeros(1, 1, model.d_model))
