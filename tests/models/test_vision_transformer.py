"""The Vision Transformer on handwritten digits, through the one model interface: the bundled model reaches its
held-out accuracy; every pattern, and the class logits, equal a recomputation from the weights with plain torch
(a pruned head included); a Hugging Face ViT opens through the same interface with transformers' own
output_attentions; bad folders, images and addresses say what is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import explorer
from explorer.capture.head_sets import parse_heads
from explorer.capture.image_inputs import read_image
from explorer.capture.image_trace import trace_image
from explorer.capture.inputs import InputError
from explorer.capture.trace import Trace
from explorer.cli import main as cli
from explorer.models.digits import held_out
from explorer.models.interface import AttentionModel, ImageInput, ModelError, TextInput
from explorer.models.loader import open_model
from explorer.models.vision_transformer import VisionTransformer, VitConfig, save_classifier
from tests.conftest import ROOT

BUNDLED = ROOT / "models" / "digits-vit"
TINY = VitConfig(patch_size=2, d_model=16, heads=4, encoder_layers=2, d_ff=32, dropout=0.0)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    torch.manual_seed(3)
    model = VisionTransformer(TINY)
    with torch.no_grad():                   # not the zero start: every parameter takes part
        model.encoder.class_token.normal_()
    return save_classifier(tmp_path_factory.mktemp("vit"), model, {"description": "a tiny random ViT"})


def recomputed(state: dict, config: VitConfig, image: np.ndarray, gates: np.ndarray | None = None):
    """(patterns [layers, heads, tokens, tokens], class logits) from the saved weights alone."""
    d, heads, size = config.d_model, config.heads, config.patch_size
    rows, columns = config.image_height // size, config.image_width // size
    pixels = torch.tensor(image, dtype=torch.float32)
    squares = [pixels[r * size:(r + 1) * size, c * size:(c + 1) * size].reshape(-1)
               for r in range(rows) for c in range(columns)]
    embedded = torch.stack(squares) @ state["encoder.patch_embedding.weight"].T + state["encoder.patch_embedding.bias"]
    x = torch.cat([state["encoder.class_token"][None], embedded]) + state["encoder.positions"]
    patterns = []
    for layer in range(config.encoder_layers):
        w = lambda name, layer=layer: state[f"encoder.layers.{layer}.{name}"]        # noqa: E731
        normed = F.layer_norm(x, (d,), w("norm_attn.weight"), w("norm_attn.bias"))
        q, k, v = ((normed @ w(f"self_attn.w_{n}.weight").T + w(f"self_attn.w_{n}.bias")).reshape(-1, heads, d // heads)
                   .transpose(0, 1) for n in "qkv")
        pattern = torch.softmax(q @ k.transpose(1, 2) / (d // heads) ** 0.5, dim=-1)
        z = pattern @ v
        if gates is not None:
            z = z * torch.tensor(gates[layer], dtype=torch.float32)[:, None, None]
        x = x + z.transpose(0, 1).reshape(-1, d) @ w("self_attn.w_o.weight").T + w("self_attn.w_o.bias")
        normed = F.layer_norm(x, (d,), w("norm_ff.weight"), w("norm_ff.bias"))
        x = x + torch.relu(normed @ w("feed_forward.w_1.weight").T + w("feed_forward.w_1.bias")) \
            @ w("feed_forward.w_2.weight").T + w("feed_forward.w_2.bias")
        patterns.append(pattern)
    final = F.layer_norm(x, (d,), state["encoder.norm.weight"], state["encoder.norm.bias"])
    return torch.stack(patterns).numpy(), (final[0] @ state["head.weight"].T + state["head.bias"]).numpy()


def test_the_bundled_vit_reads_the_held_out_digits_as_its_card_says():
    model = open_model(BUNDLED)
    assert isinstance(model, AttentionModel) and isinstance(model, ImageInput) and not isinstance(model, TextInput)
    digits = held_out()
    assert len(digits.labels) == 360 and np.bincount(digits.labels).min() >= 35       # stratified: every digit
    with torch.no_grad():
        logits = model.forward(model.image_batch(torch.tensor(digits.images)))
    accuracy = float((logits[:, 0].argmax(-1).numpy() == digits.labels).mean())
    assert accuracy >= 0.97
    assert accuracy == pytest.approx(model.info["scores"]["held_out_accuracy"], abs=1e-4)
    assert model.grid == (4, 4) and model.max_positions == 17 and model.class_names == tuple("0123456789")


def test_patterns_and_logits_equal_a_recomputation_from_the_weights(tiny_folder):
    model = open_model(tiny_folder)
    state = {name: tensor.float() for name, tensor in model.model.state_dict().items()}
    image = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    trace = trace_image(model, image)
    patterns, logits = recomputed(state, TINY, image)
    np.testing.assert_allclose(trace.pattern("encoder"), patterns, atol=1e-5)
    np.testing.assert_allclose(trace.pattern("encoder").sum(-1), 1.0, atol=1e-5)
    probabilities = torch.softmax(torch.tensor(logits), -1).numpy()
    assert trace.output_text == str(int(logits.argmax()))
    assert trace.steps[0].chosen_prob == pytest.approx(float(probabilities.max()), abs=1e-5)
    assert trace.source_tokens[:3] == ["[CLS]", "r0c0", "r0c1"] and trace.source_tokens[-1] == "r3c3"
    np.testing.assert_allclose(trace.positional["source"], state["encoder.positions"].numpy(), atol=1e-6)
    np.testing.assert_array_equal(trace.image, image)
    # a pruned head: its z multiplied by 0 before W_O, the later layers' patterns follow
    gates = np.ones((2, 4))
    gates[0, 2] = 0.0
    pruned = trace_image(model, image, parse_heads("enc.0.2", model))
    patterns, logits = recomputed(state, TINY, image, gates)
    np.testing.assert_allclose(pruned.pattern("encoder"), patterns, atol=1e-5)
    assert not np.allclose(pruned.pattern("encoder")[1], trace.pattern("encoder")[1], atol=1e-4)
    assert pruned.steps[0].chosen_prob == pytest.approx(float(torch.softmax(torch.tensor(logits), -1).max()), abs=1e-5)


def test_a_hugging_face_vit_gives_transformers_own_attention(tmp_path):
    import transformers

    torch.manual_seed(1)
    config = transformers.ViTConfig(image_size=8, patch_size=2, num_channels=1, hidden_size=16, num_hidden_layers=2,
                                    num_attention_heads=4, intermediate_size=32, num_labels=10)
    transformers.ViTForImageClassification(config).save_pretrained(tmp_path)
    model = open_model(tmp_path)
    assert isinstance(model, ImageInput) and model.grid == (4, 4) and model.layers("encoder") == 2
    image = np.random.default_rng(1).random((8, 8)).astype(np.float32)
    trace = trace_image(model, image)
    reference = transformers.ViTForImageClassification.from_pretrained(tmp_path, attn_implementation="eager").eval()
    with torch.no_grad():
        expected = reference(pixel_values=torch.tensor(image)[None, None], output_attentions=True)
    np.testing.assert_allclose(trace.pattern("encoder"), torch.stack(expected.attentions)[:, 0].numpy(), atol=1e-5)
    probabilities = torch.softmax(expected.logits[0], -1)
    assert trace.steps[0].chosen_id == int(probabilities.argmax())
    assert trace.steps[0].chosen_prob == pytest.approx(float(probabilities.max()), abs=1e-5)
    # every layer's streams: resid_pre is transformers' hidden_states, and the stream after attention plus the
    # feed-forward's output is the stream after the layer (pre-norm)
    with torch.no_grad():
        hidden = reference(pixel_values=torch.tensor(image)[None, None], output_hidden_states=True).hidden_states
    _, cache = model.run_with_cache(model.image_batch(torch.tensor(image)), names="*.layers.*")
    for layer in range(2):
        torch.testing.assert_close(cache[f"encoder.layers.{layer}.resid_pre"], hidden[layer], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(cache[f"encoder.layers.{layer}.resid_post"],
                                   cache[f"encoder.layers.{layer}.resid_mid"] + cache[f"encoder.layers.{layer}.mlp_out"],
                                   atol=1e-5, rtol=1e-4)


def test_the_cli_and_the_notebook_trace_an_image_as_a_sentence(tmp_path, capsys):
    out = tmp_path / "digit.npz"
    assert cli(["trace", "--model", str(BUNDLED), "--image", "digits:10", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    saved = Trace.load(out)
    model = explorer.load(str(BUNDLED))
    direct = explorer.trace_image(model, "digits:10")
    np.testing.assert_allclose(saved.pattern("encoder"), direct.pattern("encoder"), atol=1e-6)
    np.testing.assert_array_equal(saved.image, held_out().images[10])
    assert f"class {direct.output_text}" in printed and "held-out image no. 10, a 2" in printed
    figure = explorer.image_attention_figure(direct, layer=3, head=1, query=0)
    row = direct.pattern("encoder")[3, 1, 0, 1:]
    np.testing.assert_allclose(np.asarray(figure.data[0].z)[:2, :2], row[0], atol=1e-6)   # patch r0c0 covers pixels 0-1 × 0-1


@pytest.mark.parametrize("argv, says", [
    (["trace", "--image", "digits:400"], "the held-out split has digits 0 to 359"),
    (["trace", "--image", "digits:seven"], "give a held-out digit's number"),
    (["trace", "--image", "no/such.png"], "no/such.png: no such file"),
    (["trace", "--text", "A dog runs."], "reads images; give one with --image"),
    (["heads"], "reads images: `heads` works on models of text"),
])
def test_wrong_inputs_are_named(argv, says, tmp_path, capsys):
    extra = ["--out", str(tmp_path / "t.npz")] if argv[0] == "trace" else []
    assert cli([argv[0], "--model", str(BUNDLED), *argv[1:], *extra]) == 1
    assert says in capsys.readouterr().err


def test_bad_folders_and_pictures_are_refused_with_a_reason(tiny_folder, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text((tiny_folder / "config.json").read_text())
    with pytest.raises(ModelError, match="model.safetensors: missing"):
        open_model(folder)
    (folder / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ModelError, match="not a readable safetensors file"):
        open_model(folder)
    info = json.loads((tiny_folder / "config.json").read_text())
    info["architecture"]["patch_size"] = 3
    (folder / "config.json").write_text(json.dumps(info))
    with pytest.raises(ModelError, match="do not tile"):
        open_model(folder)
    model = open_model(tiny_folder)
    with pytest.raises(InputError, match=r"shape \[7, 8\]"):
        trace_image(model, np.zeros((7, 8)))
    with pytest.raises(InputError, match="between 0"):
        trace_image(model, np.full((8, 8), 16.0))
    text = tmp_path / "digit.png"
    text.write_text("<script>alert(1)</script>")
    with pytest.raises(InputError, match="digit.png: not a picture"):
        read_image(str(text), model)
    with pytest.raises(InputError, match="reads text, not images"):
        trace_image(open_model(ROOT / "models" / "en-de-h1"), np.zeros((8, 8)))


def test_a_dark_on_light_picture_is_read_as_ink_on_paper(tmp_path):
    from PIL import Image

    model = open_model(BUNDLED)
    digit = held_out().images[10]
    picture = (255 * (1 - np.kron(digit, np.ones((4, 4))))).astype(np.uint8)     # 32 × 32, black ink on white
    Image.fromarray(picture).save(tmp_path / "two.png")
    pixels, description = read_image(str(tmp_path / "two.png"), model)
    np.testing.assert_allclose(pixels, digit, atol=1 / 255 + 1e-6)
    assert description == "the picture two.png"
    assert explorer.trace_image(model, str(tmp_path / "two.png")).output_text == "2"


def test_the_docs_image_notebook_lines_run_and_give_the_models_numbers():
    """docs/cli-and-notebook.md's image example, exactly as written (after `import explorer`)."""
    import re

    text = (ROOT / "docs" / "cli-and-notebook.md").read_text(encoding="utf-8")
    [block] = [code for code in re.findall(r"```python\n(.*?)```", text, re.S) if "trace_image" in code]
    namespace = {"explorer": explorer}
    exec(block, namespace)
    digit, vit = namespace["digit"], namespace["vit"]
    with torch.no_grad():
        probabilities = torch.softmax(vit.forward(vit.image_batch(torch.tensor(held_out().images[17])))[0, 0], -1)
    assert digit.output_text == str(int(probabilities.argmax())) and len(digit.steps[0].top_probs) == 10
    assert digit.steps[0].chosen_prob == pytest.approx(float(probabilities.max()), abs=1e-5)
    assert (held_out().labels[17], digit.output_text) == (3, "9")      # one of the 7 it gets wrong, as the docs say


def test_grid_closeness_finds_a_planted_layout_and_the_bundled_models_own():
    from explorer.analyses.sentence.positional import grid_closeness, position_similarity

    places = np.array([(row, column) for row in range(4) for column in range(4)], dtype=float)
    layout = np.concatenate([np.sin(places * 0.5), np.cos(places * 0.5)], axis=1)      # a table that is the grid
    planted = grid_closeness(position_similarity(layout, cosine=True), (4, 4))
    noise = grid_closeness(position_similarity(np.random.default_rng(0).normal(size=(16, 8)), cosine=True), (4, 4))
    assert planted["rho"] > 0.9 and planted["neighbours"] > planted["far"] and abs(noise["rho"]) < 0.2
    table = open_model(BUNDLED).model.encoder.positions.detach().numpy()[1:]
    bundled = grid_closeness(position_similarity(table, cosine=True), (4, 4))
    assert (round(bundled["rho"], 2), round(bundled["neighbours"], 2), round(bundled["far"], 2)) == (0.42, 0.27, -0.04)
