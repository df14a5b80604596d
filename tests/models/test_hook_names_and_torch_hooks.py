"""One vocabulary of hook names, checked against the model; misspelt names raise; torch's own module hooks run;
projection weights have nn.Linear's layout, and older files in the other layout still load."""

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from explorer.models.checkpoint import load_checkpoint, save_checkpoint
from explorer.models.hooks import HookNameError, capture, model_run
from explorer.models.transformer import Transformer
from explorer.models.vocabulary import (
    ATTENTION_KINDS,
    ATTENTION_VALUES,
    STACK_VALUES,
    Kind,
    attention_hook,
    layer_names,
    stack_hook,
)
from explorer.models.weights_file import LAYOUT_KEY, read_weights
from tests.conftest import SENTENCES, batch_of, tiny_config


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Transformer(tiny_config()).eval()


def test_the_vocabulary_names_exactly_the_models_hook_points(model):
    config = model.config
    named = {attention_hook(kind, layer, value) for kind in ATTENTION_KINDS for layer in range(config.layers(kind))
             for value in ATTENTION_VALUES}
    named |= {stack_hook(stack, value) for stack in ("encoder", "decoder") for value in STACK_VALUES}
    per_layer = {f"{stack}.layers.{layer}.{value}" for stack in ("encoder", "decoder")
                 for layer in range(config.layers(stack))
                 for value in ("resid_pre", "resid_mid", "resid_post", "mlp_out", "ln1", "ln2")}
    per_layer |= {f"decoder.layers.{layer}.ln3" for layer in range(config.layers("decoder"))}
    # within a layer, in forward order (pre-norm: each norm before its sublayer)
    layer_zero = [name for name in model.hook_names if name.startswith("decoder.layers.0.")]
    assert layer_zero == layer_names("decoder", 0, [Kind.DECODER, Kind.CROSS], pre_norm=True)
    assert named | per_layer | {"logits"} == set(model.hook_names)
    with pytest.raises(ValueError, match="unknown attention kind 'self'"):
        attention_hook("self", 0, "pattern")
    with pytest.raises(ValueError, match="unknown attention value 'attn'"):
        attention_hook("cross", 0, "attn")


def test_run_with_cache_reads_by_kind_layer_and_value(model, tiny_tokenizer):
    src = batch_of(tiny_tokenizer, SENTENCES[:2])
    tgt = src[:, :5]
    logits, cache = model.run_with_cache(src, tgt, names=["*.pattern", "logits"])
    assert torch.equal(logits, cache["logits"]) and torch.equal(logits, model(src, tgt))
    every = cache.layers("cross", "pattern")
    assert every.shape == (2, model.config.decoder_layers, model.config.heads, 5, src.shape[1])
    assert torch.equal(every[:, 1], cache.attention("cross", 1, "pattern"))
    assert torch.equal(cache.attention("cross", 1, "pattern"), cache["decoder.layers.1.cross_attn.pattern"])


@pytest.mark.parametrize("names", ["decoder.layers.0.crossattn.pattern", ["*.pattern", "*.atention"], "encoder.layer.*"])
def test_a_name_that_matches_no_hook_point_raises(model, tiny_tokenizer, names):
    src = batch_of(tiny_tokenizer, SENTENCES[:1])
    with pytest.raises(HookNameError, match="no hook point is called"):
        model.run_with_cache(src, src, names=names)
    with pytest.raises(HookNameError), capture(model.hook_names, names):
        pass


def test_a_hook_on_an_unknown_name_raises_and_hooks_need_the_models_names(model):
    with pytest.raises(HookNameError, match="'encoder.layers.0.self_attn.patern'"), \
            model_run({"encoder.layers.0.self_attn.patern": lambda x, name: None}, hook_names=model.hook_names):
        pass
    with pytest.raises(TypeError, match="hook_names=model.hook_names"), \
            model_run({"encoder.layers.0.self_attn.pattern": lambda x, name: None}):
        pass


def test_torch_module_hooks_run_on_every_module_and_leave_nothing_behind(model, tiny_tokenizer):
    """Captum and other tools register torch's own hooks; the fast call path must not skip them."""
    src = batch_of(tiny_tokenizer, SENTENCES[:2])
    tgt = src[:, :4]
    plain = model(src, tgt)
    block = model.decoder.layers[1].cross_attn
    seen = {}
    handles = [block.register_forward_hook(lambda module, inputs, output: seen.setdefault("block", output)),
               model.encoder.layers[0].feed_forward.w_1.register_forward_pre_hook(
                   lambda module, inputs: seen.setdefault("w_1 input", inputs[0])),
               model.decoder.layers[0].self_attn.pattern.register_forward_hook(
                   lambda module, inputs, output: torch.full_like(output, 1.0 / output.shape[-1]))]
    changed = model(src, tgt)
    _, cache = model.run_with_cache(src, tgt, names=attention_hook("cross", 1, "out"))
    assert torch.equal(seen["block"], cache.attention("cross", 1, "out"))
    assert seen["w_1 input"].shape == (2, src.shape[1], model.config.d_model)
    assert (changed - plain).abs().max() > 1e-4          # the hook that replaces a pattern took effect
    for handle in handles:
        handle.remove()
    assert torch.equal(model(src, tgt), plain)


def test_gradients_flow_through_a_backward_hook(model, tiny_tokenizer):
    src = batch_of(tiny_tokenizer, SENTENCES[:1])
    grads, outputs = [], []

    def keep_output(module, inputs, output):       # autograd's own gradient of the block's output, to compare
        output = output[0] if isinstance(output, tuple) else output
        output.retain_grad()
        outputs.append(output)

    block = model.encoder.layers[0].self_attn
    handles = [block.register_forward_hook(keep_output),
               block.register_full_backward_hook(lambda m, gi, go: grads.append(go[0]))]
    with torch.enable_grad():
        model(src, src[:, :3]).sum().backward()
    for handle in handles:
        handle.remove()
    model.zero_grad()
    assert len(grads) == 1 and grads[0].abs().sum() > 0
    torch.testing.assert_close(grads[0], outputs[0].grad)       # the hook saw the gradient autograd computed


def test_projection_weights_have_nn_linears_layout(model):
    projection = model.encoder.layers[0].feed_forward.w_1
    linear = nn.Linear(model.config.d_model, model.config.d_ff)
    assert projection.weight.shape == linear.weight.shape == (model.config.d_ff, model.config.d_model)
    with torch.no_grad():
        linear.weight.copy_(projection.weight)
        linear.bias.copy_(projection.bias)
    x = torch.randn(3, model.config.d_model)
    torch.testing.assert_close(projection(x), linear(x))          # inference path (a long-row copy)
    with torch.enable_grad():
        torch.testing.assert_close(projection(x), linear(x))      # training path


def test_a_file_in_the_old_layout_loads_to_the_same_model(tiny_checkpoint, tmp_path):
    folder = save_checkpoint(tmp_path / "new", tiny_checkpoint.model, tiny_checkpoint.path / "tokenizer.model",
                             tiny_checkpoint.info)
    state = read_weights(folder / "model.safetensors")
    old = tmp_path / "old"
    old.mkdir()
    for name in ("config.json", "tokenizer.model"):
        (old / name).write_bytes((folder / name).read_bytes())
    legacy = {name: t.t().contiguous() if name.endswith(("w_q.weight", "w_1.weight", "w_2.weight", "w_o.weight",
                                                         "w_k.weight", "w_v.weight")) else t for name, t in state.items()}
    save_file(legacy, str(old / "model.safetensors"))               # no layout tag: written before the change
    src = batch_of(tiny_checkpoint.tokenizer, SENTENCES[:2])
    expected = load_checkpoint(folder).model(src, src[:, :4])
    assert torch.equal(load_checkpoint(old).model(src, src[:, :4]), expected)
    from safetensors import safe_open
    with safe_open(str(folder / "model.safetensors"), "pt") as handle:
        assert handle.metadata()[LAYOUT_KEY] == "out_in"


def test_a_global_module_hook_sees_every_attention_block(tiny_tokenizer):
    """torch.nn.modules.module.register_module_forward_hook (every module at once) must reach our modules too."""
    from torch.nn.modules.module import register_module_forward_hook

    torch.manual_seed(0)
    model = Transformer(tiny_config()).eval()
    src = batch_of(tiny_tokenizer, SENTENCES[:1])
    seen = []
    handle = register_module_forward_hook(lambda module, inputs, output: seen.append(type(module).__name__))
    try:
        model(src, src[:, :3])
    finally:
        handle.remove()
    config = model.config
    assert seen.count("MultiHeadAttention") == config.encoder_layers + 2 * config.decoder_layers
    assert seen.count("HookPoint") == len(model.hook_names)
