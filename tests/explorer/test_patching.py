"""Activation patching (Meng et al. 2022): every layer's output patched restores 1, nothing 0, on every family; one
head's z and one layer's output patched by hand with torch hooks on transformers' (and our) own modules give the
same restored share; clear errors; the CLI and the notebook call."""

import json

import numpy as np
import pytest
import torch
import transformers

import explorer
from explorer.analyses.sentence.patching import NOUN_KINDS, PatchingResult, patch, suggest_corruption, suggested_swap
from explorer.capture.inputs import InputError
from explorer.capture.trace import decoded
from explorer.cli import main
from explorer.models.checkpoint import load_checkpoint
from explorer.models.loader import open_model
from tests.hugging_face_models import FAMILIES, SENTENCE, TEXT, saved_model

WORDS = sorted({word for line in TEXT for word in line.split()})


def sensitive_model(family: str, tmp_path_factory):
    """The tiny random model of a family with its matrices drawn at std 0.2 instead of transformers' 0.02: at 0.02
    a random BART's output hardly depends on its source (log-probabilities move by 1e-4), too little to patch."""
    folder = saved_model(family, tmp_path_factory)
    architecture = json.loads((folder / "config.json").read_text())["architectures"][0]
    model = getattr(transformers, architecture).from_pretrained(folder)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.2)
    model.save_pretrained(folder)
    return folder


def corrupted(model, clean: str) -> tuple[str, PatchingResult]:
    """A copy of clean with one word replaced (as many pieces) whose output's log-probability differs."""
    words = clean.split()
    for position in range(len(words)):
        for word in WORDS:
            candidate = " ".join(words[:position] + [word] + words[position + 1:])
            if word.lower() == words[position].lower() or len(model.encode(candidate).ids) != len(model.encode(clean).ids):
                continue
            result = patch(model, clean, candidate)
            if abs(result.lp_clean - result.lp_corrupt) > 0.01:
                return candidate, result
    raise AssertionError(f"no corruption of {clean!r} changes {model.name}'s output")


@pytest.fixture(scope="module", params=sorted(FAMILIES) + ["ours"])
def patched(request, tmp_path_factory, tiny_checkpoint):
    model = (tiny_checkpoint if request.param == "ours" else
             open_model(str(sensitive_model(request.param, tmp_path_factory))))
    clean = "A dog runs in the snow." if request.param == "ours" else SENTENCE
    corrupt, result = corrupted(model, clean)
    return model, clean, corrupt, result


@pytest.mark.slow
def test_every_layer_output_restores_1_and_nothing_0(patched):
    model, _, _, result = patched
    assert result.all_layers == pytest.approx(1.0, abs=1e-4)
    assert result.nothing == pytest.approx(0.0, abs=1e-4)
    assert set(result.heads) == set(model.kinds)
    for kind, values in result.heads.items():
        assert values.shape == (model.layers(kind), model.heads) and np.all(np.isfinite(values))
    assert set(result.layer_outputs) == {stack for stack in ("encoder", "decoder") if model.has(stack)}
    # the last layer's output decides the logits alone
    last = result.layer_outputs["decoder" if model.has("decoder") else "encoder"][-1]
    assert last == pytest.approx(1.0, abs=1e-4)


def forced_log_prob(logits: torch.Tensor, labels: list[int], first: int) -> float:
    """Σ log p(label_t) over the teacher-forced positions first, first + 1, …"""
    log_probs = torch.log_softmax(logits[0].double(), -1)
    return float(sum(log_probs[first + t, token] for t, token in enumerate(labels)))


def hand_patched(module_of, forward, slices: list[tuple[str, int]], d_k: int) -> tuple[float, float, float]:
    """(lp clean, lp corrupt, lp corrupt with each listed (module path, head) input slice of W_O taken from the clean
    run), by torch forward pre-hooks on the output projections: nothing of the explorer's hooks."""
    captured = {}

    def keep(path):
        def hook(module, args):
            captured[path] = args[0].detach().clone()
        return hook

    handles = [module_of(path).register_forward_pre_hook(keep(path)) for path, _ in slices]
    lp_clean = forward("clean")
    for handle in handles:
        handle.remove()
    lp_corrupt = forward("corrupt")

    def replace(path, head):
        def hook(module, args):
            value = args[0].clone()
            value[..., head * d_k:(head + 1) * d_k] = captured[path][..., head * d_k:(head + 1) * d_k]
            return (value, *args[1:])
        return hook

    handles = [module_of(path).register_forward_pre_hook(replace(path, head)) for path, head in slices]
    lp_patched = forward("corrupt")
    for handle in handles:
        handle.remove()
    return lp_clean, lp_corrupt, lp_patched


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bart", "ours"])
def test_one_head_patched_by_hand_restores_the_same_share(family, tmp_path_factory, tiny_checkpoint):
    if family == "ours":
        model = tiny_checkpoint
        theirs = load_checkpoint(tiny_checkpoint.path).model.eval()         # a copy: its hooks stay off the shared one
        paths = {"encoder": "encoder.layers.{}.self_attn.w_o", "decoder": "decoder.layers.{}.self_attn.w_o",
                 "cross": "decoder.layers.{}.cross_attn.w_o"}
        clean = "A dog runs in the snow."
    else:
        folder = sensitive_model(family, tmp_path_factory)
        model = open_model(str(folder))
        theirs = transformers.BartForConditionalGeneration.from_pretrained(folder, attn_implementation="eager").eval()
        paths = {"encoder": "model.encoder.layers.{}.self_attn.out_proj",
                 "decoder": "model.decoder.layers.{}.self_attn.out_proj",
                 "cross": "model.decoder.layers.{}.encoder_attn.out_proj"}
        clean = SENTENCE
    corrupt, result = corrupted(model, clean)
    sources = {"clean": model.encode(clean).ids, "corrupt": model.encode(corrupt).ids}
    output, chosen = decoded(model, sources["clean"])
    target = [model.start_id] + chosen[:-1]

    @torch.no_grad()
    def forward(which: str) -> float:
        source, decoder_input = torch.tensor([sources[which]]), torch.tensor([target])
        logits = theirs(source, decoder_input) if family == "ours" else theirs(
            input_ids=source, decoder_input_ids=decoder_input).logits
        return forced_log_prob(logits, chosen, 0)

    for kind, layer, head in (("encoder", 0, 1), ("decoder", 1, 2), ("cross", 1, 3), ("cross", 0, 0)):
        lp_clean, lp_corrupt, lp_patched = hand_patched(theirs.get_submodule, forward,
                                                        [(paths[kind].format(layer), head)], model.d_k)
        assert lp_clean == pytest.approx(result.lp_clean, abs=1e-4)
        assert lp_corrupt == pytest.approx(result.lp_corrupt, abs=1e-4)
        expected = (lp_patched - lp_corrupt) / (lp_clean - lp_corrupt)
        assert result.heads[kind][layer, head] == pytest.approx(expected, abs=1e-4), (kind, layer, head)


def test_a_layer_output_patched_by_hand_restores_the_same_share(tmp_path_factory):
    """GPT-2: layer 0's output (its block's hidden states) replaced by the clean run's, with a torch forward hook."""
    folder = sensitive_model("gpt2", tmp_path_factory)
    model = open_model(str(folder))
    corrupt, result = corrupted(model, SENTENCE)
    theirs = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    prompts = {"clean": model.encode(SENTENCE).ids, "corrupt": model.encode(corrupt).ids}
    _, chosen = decoded(model, prompts["clean"])
    with torch.no_grad():
        clean_states = theirs(torch.tensor([prompts["clean"] + chosen[:-1]]), output_hidden_states=True).hidden_states

        def run(which: str) -> float:
            return forced_log_prob(theirs(torch.tensor([prompts[which] + chosen[:-1]])).logits, chosen,
                                   len(prompts[which]) - 1)

        handle = theirs.transformer.h[0].register_forward_hook(
            lambda module, args, output: (clean_states[1], *output[1:]) if isinstance(output, tuple) else clean_states[1])
        patched_lp = run("corrupt")
        handle.remove()
        lp_clean, lp_corrupt = run("clean"), run("corrupt")
    expected = (patched_lp - lp_corrupt) / (lp_clean - lp_corrupt)
    assert result.layer_outputs["decoder"][0] == pytest.approx(expected, abs=1e-4)


def test_a_masked_language_model_is_read_at_its_mask(tmp_path_factory):
    folder = sensitive_model("bert", tmp_path_factory)
    model = open_model(str(folder))
    clean = "a dog [MASK] in the snow"
    corrupt, result = corrupted(model, clean)
    ids = model.encode(clean).ids
    position = ids.index(model.mask_id)
    assert f"mask token (position {position})" in result.read_at
    theirs = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        logits = theirs(torch.tensor([ids])).logits[0, position]
    assert result.target_tokens == model.pieces([int(logits.argmax())])
    assert result.lp_clean == pytest.approx(float(torch.log_softmax(logits.double(), -1).max()), abs=1e-5)


def test_the_first_token_metric_reads_one_position(tiny_checkpoint):
    clean = "A dog runs in the snow."
    corrupt, total = corrupted(tiny_checkpoint, clean)
    first = patch(tiny_checkpoint, clean, corrupt, metric="first")
    assert "first output token" in first.read_at
    source = tiny_checkpoint.pad([tiny_checkpoint.encode(clean).ids])
    _, chosen = decoded(tiny_checkpoint, source.ids[0].tolist())
    with torch.no_grad():
        logits = tiny_checkpoint.forward(source, tiny_checkpoint.pad([[tiny_checkpoint.start_id]]))
    assert first.lp_clean == pytest.approx(float(torch.log_softmax(logits[0, 0].double(), -1)[chosen[0]]), abs=1e-5)
    assert first.all_layers == pytest.approx(1.0, abs=1e-4) and total.lp_clean <= first.lp_clean + 1e-9


def test_sentences_of_different_lengths_get_a_message_naming_both(tiny_checkpoint):
    clean, corrupt = "A dog runs in the snow.", "A dog runs in the deep fresh snow."
    with pytest.raises(InputError) as error:
        patch(tiny_checkpoint, clean, corrupt)
    message = str(error.value)
    assert clean in message and corrupt in message
    assert f"{len(tiny_checkpoint.encode(clean).ids)} pieces" in message
    assert f"{len(tiny_checkpoint.encode(corrupt).ids)} pieces" in message
    with pytest.raises(InputError, match="same pieces"):
        patch(tiny_checkpoint, clean, clean)


def test_nothing_to_restore_is_said():
    same = PatchingResult("a", "b", [], [], [], "", "", "total", "", lp_clean=-2.0, lp_corrupt=-2.0)
    assert same.nothing_to_restore and same.to_json()["nothing_to_restore"] is True


def test_the_suggested_corruption_changes_one_word_and_keeps_the_length(h8):
    for sentence in ("Two dogs play in the snow.", "A little girl is climbing the stairs of a wooden playhouse."):
        suggested = suggest_corruption(h8, sentence)
        assert len(h8.encode(suggested).ids) == len(h8.encode(sentence).ids)
        assert sum(a != b for a, b in zip(sentence.split(), suggested.split())) == 1


def test_the_suggestion_swaps_a_noun_for_one_of_its_kind(h8):
    """Never the first word because it is first ("The" → "Dog" only breaks the sentence): the sentence's first noun
    of a known kind, for another of the same kind with as many pieces, and the swap named."""
    lecture = "The animal didn't cross the street because it was too tired."
    swap = suggested_swap(h8, lecture)
    assert (swap.original, swap.replacement, swap.kind) == ("animal", "dog", "an animal for an animal")
    assert swap.text == "The dog didn't cross the street because it was too tired."
    assert swap.description() == "“animal” → “dog” (an animal for an animal)"
    caption = "A man in a blue shirt is riding a bicycle down the street."
    swap = suggested_swap(h8, caption)
    assert swap.text == "A woman in a blue shirt is riding a bicycle down the street."
    assert swap.kind == "a person for a person"
    for sentence in (lecture, caption):
        assert len(h8.encode(suggest_corruption(h8, sentence)).ids) == len(h8.encode(sentence).ids)


def test_the_suggestion_keeps_the_pieces_and_the_number(h8):
    # "cats" is two pieces ("▁cat", "s") where "dogs" is one: the next plural animal of one piece is taken.
    assert h8.pieces(h8.encode("Two cats play in the snow.").ids)[1:3] == ["▁cat", "s"]
    swap = suggested_swap(h8, "Two dogs play in the snow.")
    assert swap.original == "dogs" and swap.replacement in NOUN_KINDS["animals for animals"]
    assert swap.replacement != "cats" and swap.text == f"Two {swap.replacement} play in the snow."


def test_without_a_known_noun_a_colour_then_nothing(h8):
    assert suggested_swap(h8, "The sky is blue.").text == "The sky is red."
    assert suggested_swap(h8, "It was too tired.") is None


@pytest.mark.slow
def test_cli_patch_and_the_notebook_call(tiny_checkpoint, capsys):
    clean = "A dog runs in the snow."
    corrupt, result = corrupted(tiny_checkpoint, clean)
    arguments = ["patch", "--model", str(tiny_checkpoint.path), "--clean", clean, "--corrupt", corrupt, "--keep-casing"]
    assert main(arguments + ["--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(printed["heads"]["cross"], result.heads["cross"], atol=1e-4)
    assert printed["all_layers"] == pytest.approx(1.0, abs=1e-4) and printed["nothing"] == pytest.approx(0.0, abs=1e-4)
    assert main(arguments) == 0
    assert "nothing patched 0.000" in capsys.readouterr().out
    assert main(["patch", "--model", str(tiny_checkpoint.path), "--clean", clean, "--corrupt", "A dog."]) == 1
    assert capsys.readouterr().err.startswith("error: The clean sentence")
    notebook = explorer.patch(tiny_checkpoint, clean, corrupt)
    np.testing.assert_allclose(notebook.heads["encoder"], result.heads["encoder"], atol=1e-9)


def test_the_patching_map_is_legible_at_8_heads():
    """The h8 model's four panels (3 × 8 heads, 2 layer outputs) in a projector's column (a 1024 px window's, the
    figure's own width at every window size): in rows of panels whose cells are wide enough for their values in a
    14 px font, rows of cells at least 40 px, the colour bar as tall as the cells (at least 170 px), and each
    panel's cells the same width."""
    from explorer.figures.detectors import FIGURE_WIDTH, PANELS_WIDTH, panel_rows, patching_maps

    rng = np.random.default_rng(0)
    heads = {kind: rng.uniform(-0.2, 1, (3, 8)) for kind in ("encoder", "decoder", "cross")}
    outputs = {"encoder": rng.uniform(0, 1, 3), "decoder": rng.uniform(0, 1, 3)}
    result = PatchingResult(clean="a", corrupt="b", source_tokens=[], corrupt_tokens=[], target_tokens=[],
                            clean_output="x", corrupt_output="y", metric="total", read_at="", lp_clean=0.0,
                            lp_corrupt=-1.0, heads=heads, layer_outputs=outputs, all_layers=1.0, nothing=0.0)
    figure = patching_maps(result)
    # Two 8-head panels (16 columns of 40 px) do not fit the 410 px a 564 px column leaves them: one a row. Sized
    # for an 850 px room and squeezed into that column, the values ran into each other ("0.040.000.01").
    assert figure.layout.width == FIGURE_WIDTH <= 564
    assert panel_rows([8, 8, 8, 2]) == [[0], [1], [2], [3]] and panel_rows([4, 4, 4, 2]) == [[0, 1], [2, 3]]
    assert all(trace.textfont.size == 14 for trace in figure.data)
    for trace, z in zip(figure.data, [*heads.values()]):
        np.testing.assert_allclose(trace.z, z)
        assert trace.text[1][2] == f"{z[1, 2]:.2f}".replace("-0.00", "0.00")
    layout = figure.layout
    plot = layout.height - layout.margin.t - layout.margin.b
    assert plot >= 170
    for i in range(4):                                             # 3 layers a panel, each at least 40 px tall
        start, end = layout[f"yaxis{'' if i == 0 else i + 1}"].domain
        assert (end - start) * plot / 3 >= 40 - 1e-9
    widths = [layout[f"xaxis{'' if i == 0 else i + 1}"].domain for i in range(4)]
    per_cell = [(end - start) / count for (start, end), count in zip(widths, (8, 8, 8, 2))]
    np.testing.assert_allclose(per_cell, per_cell[0])
    assert per_cell[0] * PANELS_WIDTH >= 40 and FIGURE_WIDTH - PANELS_WIDTH >= 120
    assert layout.yaxis.title.standoff >= 10                       # "layer" clear of its tick labels
