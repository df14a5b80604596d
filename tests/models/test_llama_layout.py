"""The Llama layout (models/llama.py): grouped-query attention captured with k and v expanded to the query heads,
patterns equal to transformers' own eager attention on several sentences, and Qwen2 and Mistral, which share the
layout, opened by the same class (tiny random models, tests/hugging_face_models.py)."""

import pytest
import torch
import transformers

from explorer.models.loader import open_model
from tests.hugging_face_models import TEXT, eager_attentions, llama, saved_model

SENTENCES = list(dict.fromkeys(TEXT))            # five captions of different lengths: a padded batch


def captured_and_eager(folder):
    model = open_model(folder)
    batch = model.pad([model.encode(text).ids for text in SENTENCES])
    _, cache = model.run_with_cache(None, batch, ["*.pattern", "*.k", "*.v", "*.q"])
    return model, batch, cache, eager_attentions(model, folder, None, batch)["decoder"]


def test_llama_keys_and_values_are_expanded_to_the_query_heads(tmp_path_factory):
    folder = saved_model("llama", tmp_path_factory)
    model, batch, cache, theirs = captured_and_eager(folder)
    config = model.model.config
    groups = config.num_attention_heads // config.num_key_value_heads
    assert groups == 2 and model.heads == config.num_attention_heads and model.d_k == config.head_dim
    for layer, pattern in enumerate(theirs):
        q, k, v = (cache.attention("decoder", layer, value) for value in "qkv")
        assert q.shape == k.shape == v.shape == (len(SENTENCES), model.heads, batch.ids.shape[1], model.d_k)
        # each key/value head serves `groups` neighbouring query heads: those heads see the same k and v
        for head in range(model.heads):
            assert torch.equal(k[:, head], k[:, head - head % groups])
            assert torch.equal(v[:, head], v[:, head - head % groups])
        torch.testing.assert_close(cache.attention("decoder", layer, "pattern"), pattern, atol=1e-5, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["qwen2", "mistral"])
def test_qwen2_and_mistral_share_the_llama_layout(family, tmp_path):
    torch.manual_seed(0)
    config_class, model_class, end = {
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, "<|endoftext|>"),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM, "</s>")}[family]
    built, tokenizer = llama(tmp_path, config_class, model_class, end)
    built.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model, _, cache, theirs = captured_and_eager(tmp_path)
    assert model.architecture.positional == "rotary" and model.layers("decoder") == 2 and model.heads == 4
    for layer, pattern in enumerate(theirs):
        torch.testing.assert_close(cache.attention("decoder", layer, "pattern"), pattern, atol=1e-5, rtol=0)
    prompt, output = model.encode(SENTENCES[0]).ids, []
    with torch.no_grad():                                     # greedy is the step-by-step argmax
        for _ in range(model.step_limit(len(prompt))):
            token = int(model.forward(None, model.pad([prompt + output]))[0, -1].argmax())
            if token == model.end_id:
                break
            output.append(token)
    assert model.generate([prompt]) == [output]
