"""The one model interface, held to its contract by every family the explorer opens: our tiny Transformer and tiny
random Hugging Face Marian, BART, BERT, GPT-2, T5, M2M100 and Llama (tests/hugging_face_models.py). Every member
answers for its model; patterns are transformers' own eager attention; greedy decoding is the step-by-step argmax;
gates of ones change nothing; every page runs; every CLI command works or says in one line why not."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

import explorer.models.interface as interface
from explorer.capture.input_kinds import TEXT as TEXT_INPUT
from explorer.cli import main as cli
from explorer.models.hooks import model_run
from explorer.models.interface import CONTINUE, EMBED, FILL_MASK, TRANSLATE, Batch, Encoded, ExplorerModel
from explorer.models.loader import open_model
from explorer.models.vocabulary import ATTENTION_KINDS, attention_hook, layer_hook
from explorer.pages.registry import pages_reading
from tests.hugging_face_models import FAMILIES, SENTENCE, TEXT, eager_attentions, saved_model

OTHER = "two men play football on a field"


@pytest.fixture(scope="module", params=["ours", *FAMILIES])
def opened(request, tmp_path_factory, tiny_checkpoint) -> tuple[str, ExplorerModel]:
    """(folder, model) of each family."""
    folder = tiny_checkpoint.path if request.param == "ours" else saved_model(request.param, tmp_path_factory)
    return str(folder), open_model(folder)


def batches(model: ExplorerModel) -> tuple[Batch | None, Batch | None]:
    """Two sentences (the second shorter, so padded) as the model reads them, and an output fed back."""
    sources = [model.encode(SENTENCE).ids, model.encode("a dog runs").ids]
    outputs = [model.encode_reference(OTHER)[:5], model.encode_reference("a cat")[:3]]
    source = model.pad(sources) if model.has("encoder") else None
    target = model.pad([model.decoder_input(s, o)[0] for s, o in zip(sources, outputs)]) if model.has("decoder") else None
    return source, target


def members(capability: type) -> set[str]:
    """The public names a class of the interface declares itself: attributes, methods and properties."""
    return {name for name in {*vars(capability), *vars(capability).get("__annotations__", {})}
            if not name.startswith("_")}


def test_the_core_is_small_and_every_capability_adds_its_own_members():
    core = members(interface.AttentionModel)
    assert len(core) <= 20, sorted(core)
    capabilities = [interface.TextInput, interface.ImageInput, interface.Generates, interface.Translates,
                    interface.Continues, interface.FillsMask, interface.Embeds, interface.Multilingual,
                    interface.TrainingSnapshots, interface.CachedBeamSearch]
    for capability in capabilities:
        assert members(capability) and not members(capability) & core, capability.__name__
    assert members(interface.ExplorerModel) == set()          # a model of text: the core and TextInput
    # What the core needs of a model of text is on the core: nothing text- or generation-shaped.
    assert not core & {"encode", "pieces", "detokenize", "generate", "decoder_prefix", "target_languages", "pad_id"}


def test_each_family_has_the_capabilities_it_uses(opened):
    folder, model = opened
    assert isinstance(model, interface.AttentionModel) and isinstance(model, interface.TextInput)
    # It claims exactly one kind of output, and only what it can do: a model that writes no sequence has no generate.
    outputs = [capability for capability in (interface.Translates, interface.Continues, interface.FillsMask,
                                             interface.Embeds) if isinstance(model, capability)]
    assert len(outputs) == 1, outputs
    assert isinstance(model, interface.Generates) == hasattr(model, "generate") == hasattr(model, "step_limit")
    assert isinstance(model, interface.Multilingual) == (model.name.startswith("m2m100") or "m2m100" in folder)
    assert isinstance(model, interface.TrainingSnapshots) == isinstance(model, interface.CachedBeamSearch)
    if isinstance(model, interface.Multilingual):
        other = next(code for code in model.target_languages if code != model.target_language)
        assert model.for_target_language(other).target_language == other and model.target_language != other


def test_every_member_answers_for_its_model(opened):
    folder, model = opened
    assert model.kinds and set(model.kinds) <= set(ATTENTION_KINDS)
    assert all(model.layers(kind) > 0 for kind in model.kinds)
    assert all(model.layers(kind) == 0 for kind in ATTENTION_KINDS if kind not in model.kinds)
    assert model.heads > 0 and model.d_k > 0 and model.d_model > 0 and model.max_positions > 0
    assert model.task in (TRANSLATE, CONTINUE, FILL_MASK, EMBED) and model.output_title and model.name
    assert model.architecture.positional in ("sinusoidal", "sinusoidal-halves", "learned", "relative", "rotary")
    frequencies = np.array(model.architecture.rotary_frequencies)
    if model.architecture.positional == "rotary":     # θ per pair of q/k dimensions, fastest first, at most d_k / 2
        assert 0 < len(frequencies) <= model.d_k // 2 and (frequencies > 0).all() and (np.diff(frequencies) < 0).all()
    else:
        assert len(frequencies) == 0
    assert len(model.architecture.embedding_steps) == 3
    encoded = model.encode(SENTENCE)
    assert isinstance(encoded, Encoded) and len(encoded.ids) == len(encoded.pieces) and not encoded.truncated
    assert model.pieces(encoded.ids) == encoded.pieces
    assert "dog" in model.detokenize([i for i in encoded.ids if i not in model.special_ids]).replace(" ", "")
    assert model.pad_id in model.special_ids or model.task == CONTINUE        # GPT-2 pads with its end token
    if isinstance(model, interface.Generates):
        assert model.encode_reference(OTHER)[-1] == model.end_id
    aligned = model.align_words(SENTENCE.split())
    assert aligned is not None and len(aligned.word_pieces) == len(SENTENCE.split())
    assert sorted(p for pieces in aligned.word_pieces for p in pieces) == list(range(
        aligned.word_pieces[0][0], aligned.word_pieces[-1][-1] + 1))
    source, target = batches(model)
    logits = model.forward(source, target)
    rows = (target if target is not None else source).ids
    assert logits.shape[:2] == rows.shape
    names = set(model.hook_names)
    for kind in model.kinds:
        layer = model.layers(kind) - 1
        assert {attention_hook(kind, layer, value) for value in ("q", "k", "v", "scores", "pattern", "z", "out")} <= names
        w_o, bias = model.attention_output_weights(kind, layer)
        assert w_o.shape == (model.d_model, model.heads * model.d_k) and bias.shape == (model.d_model,)
        assert model.attention_scaling(kind, layer) > 0
    if model.architecture.positional == "relative":
        assert model.position_bias("encoder", 3, 5).shape == (model.heads, 3, 5)
        assert model.position_bias("cross", 3, 5) is None
    else:
        assert model.position_bias(model.kinds[0], 3, 5) is None
    if isinstance(model, interface.FillsMask):
        assert model.mask_id is not None and not isinstance(model, interface.Generates)
    elif isinstance(model, interface.Embeds):       # no head to fill a mask with; one unit vector per sentence
        assert model.mask_id is None and not isinstance(model, interface.Generates)
        embeddings = model.embed(source)
        assert embeddings.shape == (len(source.ids), model.d_model)
        torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(len(source.ids)))
    else:
        assert model.step_limit(len(encoded.ids)) > 0
        target_ids, first = model.decoder_input(encoded.ids, [7, 8])
        assert target_ids[-2:] == [7, 8] and target_ids[first + 1:] == [7, 8]


def test_block_output_is_every_heads_z_through_w_o(opened):
    """attention_output_weights and the per-head z hook are the model's own: z concatenated · W_Oᵀ + b = out."""
    _, model = opened
    source, target = batches(model)
    for kind in model.kinds:
        _, cache = model.run_with_cache(source, target, [attention_hook(kind, 0, "z"), attention_hook(kind, 0, "out")])
        z = cache.attention(kind, 0, "z")                                  # [batch, heads, positions, d_k]
        merged = z.transpose(1, 2).reshape(z.shape[0], z.shape[2], -1)
        w_o, bias = model.attention_output_weights(kind, 0)
        torch.testing.assert_close(merged @ w_o.T + bias, cache.attention(kind, 0, "out"), atol=1e-5, rtol=1e-4)


def test_layer_outputs_are_the_models_own_hidden_states(opened):
    """{stack}.layers.L.resid_post is the residual stream after layer L: for a Hugging Face model, transformers'
    own hidden_states[L + 1] (before any final norm, so the last layer is left out where a family norms it);
    for ours, the input to layer L + 1 as its pre-norm block reads it."""
    folder, model = opened
    source, target = batches(model)
    stacks = [stack for stack in ("encoder", "decoder") if model.has(stack)]
    _, cache = model.run_with_cache(source, target, [layer_hook(stack, "*") for stack in stacks])
    for stack in stacks:
        layers = model.layers(stack)
        assert all(layer_hook(stack, layer) in model.hook_names for layer in range(layers))
        if not hasattr(model.model, "from_pretrained"):
            continue
        rows = source if stack == "encoder" else target
        with torch.no_grad():
            if stack == "encoder" and model.has("decoder"):
                theirs = model.model.get_encoder()(input_ids=rows.ids, attention_mask=rows.present.long(),
                                                   output_hidden_states=True).hidden_states
            elif stack == "encoder":
                theirs = model.model(input_ids=rows.ids, attention_mask=rows.present.long(),
                                     output_hidden_states=True).hidden_states
            elif model.has("encoder"):
                theirs = model.model(input_ids=source.ids, attention_mask=source.present.long(),
                                     decoder_input_ids=rows.ids, decoder_attention_mask=rows.present.long(),
                                     output_hidden_states=True).decoder_hidden_states
            else:
                theirs = model.model(input_ids=rows.ids, attention_mask=rows.present.long(),
                                     output_hidden_states=True).hidden_states
        for layer in range(layers - 1):
            torch.testing.assert_close(cache[layer_hook(stack, layer)], theirs[layer + 1], atol=1e-5, rtol=1e-4)


def norm_modules(model: ExplorerModel, stack: str, layer: int) -> tuple[list, torch.nn.Module]:
    """The layer's own norm modules in forward order and its feed-forward module, found by hand for each family
    (not through the layout's layer_parts): the independent side of the check below."""
    if not hasattr(model.model, "from_pretrained"):                            # ours
        block = getattr(model.model, stack).layers[layer]
        norms = [block.norm_attn, block.norm_ff] if stack == "encoder" else [block.norm_self, block.norm_cross,
                                                                             block.norm_ff]
        return norms, block.feed_forward
    modules = dict(model.model.named_modules())
    two_stacks = model.has("encoder") and model.has("decoder")
    layer_path = min((path for path in modules if re.search(rf"(?:^|\.)(?:layers|layer|h|block)\.{layer}$", path)
                      and (not two_stacks or (stack == "encoder") == ("decoder" not in path))), key=len)
    own = sorted((path, module) for path, module in modules.items() if path.startswith(f"{layer_path}."))
    norms = [module for path, module in own if "norm" in type(module).__name__.lower()]
    feed_forward = [module for path, module in own
                    if type(module).__name__ in ("GPT2MLP", "LlamaMLP", "T5DenseActDense") or path.endswith(
                        ("fc2", "output.dense")) and "attention" not in path]
    # sorted paths put "attention.output.LayerNorm" before "output.LayerNorm" and T5's layer.0 before layer.1; the
    # names of Marian's norms sort in forward order too (encoder_attn_, final_, self_attn_ need reordering)
    by_order = {"input_layernorm": 0, "post_attention_layernorm": 1, "self_attn_layer_norm": 0,
                "encoder_attn_layer_norm": 1, "final_layer_norm": 2}
    named = {id(module): path.rsplit(".", 1)[-1] for path, module in own}
    norms.sort(key=lambda module: by_order.get(named[id(module)], 0))
    return norms, feed_forward[0]


def read_by_hand(norms: list, feed_forward: torch.nn.Module, run) -> tuple[dict, dict]:
    """What plain torch hooks on the modules saw during run(): each norm's output (ln1 …), the last norm's input
    and the feed-forward's output; and run()'s own answer."""
    seen: dict[str, torch.Tensor] = {}
    handles = [norm.register_forward_hook(
        lambda module, args, output, number=number: seen.__setitem__(f"ln{number}", output))
        for number, norm in enumerate(norms, 1)]
    handles.append(norms[-1].register_forward_pre_hook(lambda module, args: seen.__setitem__("last_in", args[0])))
    handles.append(feed_forward.register_forward_hook(lambda module, args, output: seen.__setitem__("mlp", output)))
    try:
        answer = run()
    finally:
        for handle in handles:
            handle.remove()
    return seen, answer


def test_every_layer_has_its_streams_norms_and_feed_forward(opened):
    """resid_pre, resid_mid, resid_post, mlp_out and each layer norm's output, at every layer of every stack: read
    against hand-written torch hooks on the family's own modules (norm outputs, the feed-forward's output), the
    stream before layer L + 1 is the stream after L, and the residual sums hold (pre-norm: after = middle +
    feed-forward; post-norm: the last norm's input is middle + feed-forward). A replaced resid_mid is what the
    layer goes on from."""
    _, model = opened
    source, target = batches(model)
    pre_norm = model.architecture.norm_placement == "pre"
    for stack in [stack for stack in ("encoder", "decoder") if model.has(stack)]:
        for layer in range(model.layers(stack)):
            names = {value: layer_hook(stack, layer, value) for value in ("resid_pre", "resid_mid", "resid_post",
                                                                          "mlp_out", "ln1", "ln2")}
            assert set(names.values()) <= set(model.hook_names)
            norms, feed_forward = norm_modules(model, stack, layer)
            wanted = list(names.values()) + [layer_hook(stack, layer, f"ln{n}") for n in range(3, len(norms) + 1)]
            by_hand, cache = read_by_hand(norms, feed_forward,
                                          lambda wanted=wanted: model.run_with_cache(source, target, wanted)[1])
            for number in range(1, len(norms) + 1):
                torch.testing.assert_close(cache[layer_hook(stack, layer, f"ln{number}")], by_hand[f"ln{number}"])
            torch.testing.assert_close(cache[names["mlp_out"]], by_hand["mlp"])
            middle, mlp = cache[names["resid_mid"]], cache[names["mlp_out"]]
            if pre_norm:
                torch.testing.assert_close(cache[names["resid_post"]], middle + mlp, atol=1e-5, rtol=1e-4)
            else:
                torch.testing.assert_close(by_hand["last_in"], middle + mlp, atol=1e-5, rtol=1e-4)
            if layer + 1 < model.layers(stack):
                _, after = model.run_with_cache(source, target, layer_hook(stack, layer + 1, "resid_pre"))
                torch.testing.assert_close(after[layer_hook(stack, layer + 1, "resid_pre")], cache[names["resid_post"]])
    # Replacing the stream after attention: the layer goes on from the replacement on both paths (the norm before
    # the feed-forward reads it, and the residual sum adds it).
    stack = "decoder" if model.has("decoder") else "encoder"
    middle, after, mlp = (layer_hook(stack, 0, value) for value in ("resid_mid", "resid_post", "mlp_out"))
    with model_run({middle: lambda value, name: value * 0.5}, hook_names=model.hook_names):
        _, cache = model.run_with_cache(source, target, [middle, after, mlp])
    if pre_norm:
        torch.testing.assert_close(cache[after], cache[middle] + cache[mlp], atol=1e-5, rtol=1e-4)
    _, plain = model.run_with_cache(source, target, [middle])
    torch.testing.assert_close(cache[middle], plain[middle] * 0.5)


def test_patterns_are_the_models_own_attention(opened):
    folder, model = opened
    source, target = batches(model)
    _, cache = model.run_with_cache(source, target, ["*.pattern", "*.q", "*.k", "*.mask"])
    for kind in model.kinds:
        rows = cache.layers(kind, "pattern").sum(-1)
        torch.testing.assert_close(rows, torch.ones_like(rows))
    if not hasattr(model.model, "from_pretrained"):    # ours: softmax of the scaled, masked q·k, recomputed
        for kind in model.kinds:
            q, k = cache.attention(kind, 1, "q"), cache.attention(kind, 1, "k")
            scores = (q @ k.transpose(-1, -2)) * model.attention_scaling(kind, 1)
            scores = scores.masked_fill(~cache.attention(kind, 1, "mask"), float("-inf"))
            torch.testing.assert_close(cache.attention(kind, 1, "pattern"), scores.softmax(-1), atol=1e-5, rtol=0)
        return
    theirs = eager_attentions(model, folder, source, target)
    assert set(theirs) == set(model.kinds)
    for kind, layers in theirs.items():
        assert len(layers) == model.layers(kind)
        for layer, pattern in enumerate(layers):
            torch.testing.assert_close(cache.attention(kind, layer, "pattern"), pattern, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_greedy_decoding_is_the_step_by_step_argmax(opened):
    """generate (transformers' own, or our cached decoder) against a plain loop over forward: the most probable
    next token, again and again, until the end token or the step limit."""
    _, model = opened
    if not isinstance(model, interface.Generates):
        pytest.skip("a masked language model or a sentence encoder does not decode")
    for text in (SENTENCE, OTHER):
        source_ids = model.encode(text).ids
        source = model.pad([source_ids]) if model.has("encoder") else None
        output: list[int] = []
        with torch.no_grad():
            for _ in range(model.step_limit(len(source_ids))):
                target, _ = model.decoder_input(source_ids, output)
                token = int(model.forward(source, model.pad([target]))[0, -1].argmax())
                if token == model.end_id:
                    break
                output.append(token)
        assert model.generate([source_ids]) == [output]


def test_gates_of_ones_change_nothing_and_a_zero_gate_changes_the_output(opened):
    _, model = opened
    source, target = batches(model)
    plain = model.forward(source, target)
    ones = {kind: torch.ones(model.layers(kind), model.heads) for kind in model.kinds}
    with model_run(head_mask=ones):
        assert torch.equal(model.forward(source, target), plain)
    kind = model.kinds[-1]
    silenced = dict(ones, **{kind: torch.zeros(model.layers(kind), model.heads)})
    with model_run(head_mask=silenced):
        assert not torch.allclose(model.forward(source, target), plain)


PAGES = [page.file for page in pages_reading(TEXT_INPUT.name)]      # every page a model of text is shown on


@pytest.mark.slow
def test_every_page_runs(opened):
    from streamlit.testing.v1 import AppTest

    from explorer.pages.components.session import OWN
    from tests.conftest import ROOT

    folder, model = opened
    app = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=120)
    app.session_state["sentence"], app.session_state["model"], app.session_state["own_model"] = SENTENCE, OWN, folder
    app.run()                            # the landing page: the Lesson
    assert app.title[0].value.startswith("Lesson") and not app.exception, [e.value for e in app.exception]
    for page in PAGES[1:]:
        app.switch_page(page)
        app.run()
        assert not app.exception, (page, [e.value for e in app.exception])
        assert not app.error, (page, [e.value for e in app.error])
        if page == "translation.py":     # the output is named by the task
            assert [h.value for h in app.subheader][:1] == [model.output_title]


@pytest.mark.slow
def test_every_cli_command_works_or_says_in_one_line_why_not(opened, tmp_path, capsys):
    folder, model = opened
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    src.write_text("\n".join(TEXT[:4]))
    ref.write_text("\n".join(TEXT[4:8]))
    corpus = ["--src", str(src), "--limit", "4"] + (["--ref", str(ref)] if model.task == TRANSLATE else [])
    commands = {
        "translate": ["translate", "--model", folder, SENTENCE],
        "generate": ["generate", "--model", folder, SENTENCE],
        "evaluate": ["evaluate", "--model", folder, *corpus, "--json"],
        "trace": ["trace", "--model", folder, "--text", SENTENCE, "--out", str(tmp_path / "trace.npz")],
        "roles": ["roles", "--model", folder, "--text", str(src), "--json"],
        "importance": ["importance", "--model", folder, *corpus, "--gradient-only", "--json"],
        "prune-curve": ["prune-curve", "--model", folder, *corpus, "--steps", "2", "--seeds", "0", "--json"],
        "heads": ["heads", "--model", folder, "--json"],
        "evolution": ["evolution", "--model", folder, "--snapshots", str(tmp_path), "--text", str(src)],
    }
    expected_to_refuse = {"heads", "evolution"} | (set() if isinstance(model, interface.Generates)
                                                   else {"translate", "generate"})
    for name, argv in commands.items():
        capsys.readouterr()
        code = cli(argv)
        out, err = capsys.readouterr()
        if name in expected_to_refuse:
            assert code == 1 and err.startswith("error:") and len(err.strip().splitlines()) == 1, (name, err)
        else:
            assert code == 0, (name, err)
            if argv[-1] == "--json":
                json.loads(out)
    with np.load(tmp_path / "trace.npz", allow_pickle=False) as data:
        assert {name.split(".")[0] for name in data.files if name.endswith(".pattern")} == set(model.kinds)
