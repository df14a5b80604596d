"""The logit lens (explorer/analyses/sentence/logit_lens.py) in every family: its last layer is the model's own output
distribution; earlier layers are the model's own hidden states (transformers' output_hidden_states, or ours
recomputed) through the final norm and output projection written out here; ranks and the settling layer counted
independently; the figure labels every step and writes each layer's top token."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from explorer.analyses.sentence.logit_lens import EMBEDDINGS, LogitLens, lens_note, lens_table, logit_lens, masked_logit_lens
from explorer.capture.decoding_steps import maskable_positions
from explorer.capture.inputs import InputError
from explorer.capture.trace import trace_sentence
from explorer.figures.logit_lens import logit_lens_figure
from explorer.models.interface import ExplorerModel
from explorer.models.loader import open_model
from tests.hugging_face_models import PREDICTS_TOKENS, SENTENCE, saved_model


@pytest.fixture(scope="module", params=["ours", *PREDICTS_TOKENS])
def opened(request, tmp_path_factory, tiny_checkpoint) -> ExplorerModel:
    return tiny_checkpoint if request.param == "ours" else open_model(saved_model(request.param, tmp_path_factory))


def output_log_probs(model: ExplorerModel, trace) -> torch.Tensor:
    """[steps, vocab] from forward alone: the model's own output distribution at each step."""
    source = model.pad([trace.source_ids]) if model.has("encoder") else None
    with torch.no_grad():
        logits = model.forward(source, model.pad([trace.target_ids]))[0].float()
    return torch.log_softmax(logits[trace.first_step_position: trace.first_step_position + len(trace.steps)], -1)


@pytest.mark.slow
def test_the_last_layer_is_the_models_own_output_distribution(opened):
    model = opened
    trace = trace_sentence(model, SENTENCE)
    if not model.has("decoder"):
        position = maskable_positions(model, trace)[1]
        lens = masked_logit_lens(model, trace, position)
        ids = list(trace.source_ids)
        hidden, ids[position] = ids[position], model.mask_id
        with torch.no_grad():
            own = torch.softmax(model.forward(model.pad([ids]))[0, position].float(), -1)
        assert lens.steps == model.pieces([hidden]) and lens.what == "masked"
        np.testing.assert_allclose(lens.chosen_probs[-1, 0], own[hidden], rtol=1e-4)
        np.testing.assert_allclose(lens.top_probs[-1, 0], own.topk(5).values, rtol=1e-4)
        with pytest.raises(InputError, match="no decoder"):
            logit_lens(model, trace)
        return
    lens = logit_lens(model, trace)
    own = output_log_probs(model, trace).exp()
    chosen = [step.chosen_id for step in trace.steps]
    assert lens.layers == [EMBEDDINGS] + [f"layer {i}" for i in range(model.layers("decoder"))]
    assert lens.chosen_ids == chosen and lens.chosen_probs.shape == (model.layers("decoder") + 1, len(chosen))
    np.testing.assert_allclose(lens.chosen_probs[-1], own[range(len(chosen)), chosen], rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(lens.top_probs[-1], own.topk(5, -1).values, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(lens.chosen_probs[-1], [s.chosen_prob for s in trace.steps], rtol=1e-4, atol=1e-7)
    # greedy decoding chose the top token, so the last layer ranks every chosen token first
    assert (lens.chosen_ranks[-1] == 1).all()
    with pytest.raises(InputError):
        masked_logit_lens(model, trace, 0)


def ranks_of(probabilities: torch.Tensor, chosen: list[int]) -> np.ndarray:
    """Each step's chosen token's rank, by sorting (1 = the most probable)."""
    order = probabilities.argsort(-1, descending=True)
    return np.array([[int((order[r, s] == token).nonzero()) + 1 for s, token in enumerate(chosen)]
                     for r in range(probabilities.shape[0])])


def test_every_layer_of_ours_is_its_residual_stream_through_the_final_norm_and_the_tied_embedding(h8):
    trace = trace_sentence(h8, "A man in an orange hat starring at something.")
    lens = logit_lens(h8, trace)
    transformer = h8.model
    positions = list(range(len(trace.steps)))
    streams = []
    def keep(module, args, output):
        streams.append(output[0, positions].detach())
    # torch's own hooks, not the explorer's: the input to layer 0 and each layer's output
    handles = [transformer.decoder.layers[0].register_forward_pre_hook(lambda m, args: streams.append(args[0][0, positions]))]
    handles += [layer.register_forward_hook(keep) for layer in transformer.decoder.layers]
    try:
        with torch.no_grad():
            transformer(torch.tensor([trace.source_ids]), torch.tensor([trace.target_ids]))
    finally:
        for handle in handles:
            handle.remove()
    norm = transformer.decoder.norm
    with torch.no_grad():
        probabilities = torch.stack([torch.softmax(F.linear(F.layer_norm(stream, (stream.shape[-1],), norm.weight,
                                                                         norm.bias, norm.eps),
                                                            transformer.embedding.weight), -1) for stream in streams])
    chosen = lens.chosen_ids
    np.testing.assert_allclose(lens.chosen_probs, probabilities[:, range(len(chosen)), chosen], rtol=1e-3, atol=1e-6)
    assert (lens.chosen_ranks == ranks_of(probabilities, chosen)).all()
    top = probabilities.topk(5, -1)
    assert (lens.top_ids == top.indices.numpy()).all()
    assert lens.top_tokens[2][3] == h8.pieces(top.indices[2, 3].tolist())
    # the lens sees something: early layers are far less sure of the chosen token than the last
    assert lens.chosen_probs[0].mean() < 0.1 < 0.5 < lens.chosen_probs[-1].mean()


@pytest.mark.parametrize("family", ["gpt2", "marian"])
def test_hugging_face_layers_are_transformers_own_hidden_states_through_the_head(family, tmp_path_factory):
    model = open_model(saved_model(family, tmp_path_factory))
    with torch.no_grad():
        if hasattr(model.model, "final_logits_bias"):        # Marian's bias, zero when fresh: made to matter
            model.model.final_logits_bias.normal_(generator=torch.Generator().manual_seed(0))
    trace = trace_sentence(model, SENTENCE)
    lens = logit_lens(model, trace)
    positions = list(range(trace.first_step_position, trace.first_step_position + len(trace.steps)))
    target = torch.tensor([trace.target_ids])
    with torch.no_grad():
        if model.has("encoder"):
            output = model.model(input_ids=torch.tensor([trace.source_ids]), decoder_input_ids=target,
                                 output_hidden_states=True)
            hidden, logits = output.decoder_hidden_states, output.logits
            heads = [model.model.lm_head(h) + model.model.final_logits_bias for h in hidden[:-1]]
        else:
            output = model.model(input_ids=target, output_hidden_states=True)
            hidden, logits = output.hidden_states, output.logits
            heads = [model.model.lm_head(model.model.transformer.ln_f(h)) for h in hidden[:-1]]
    # transformers' last hidden state is already normed (GPT-2's ln_f); its logits are the last row
    probabilities = torch.softmax(torch.stack(heads + [logits])[:, 0, positions].float(), -1)
    chosen = lens.chosen_ids
    np.testing.assert_allclose(lens.chosen_probs, probabilities[:, range(len(chosen)), chosen], rtol=1e-4, atol=1e-7)
    assert (lens.chosen_ranks == ranks_of(probabilities, chosen)).all()


def test_settling_layer_and_table():
    ranks = np.array([[3, 1, 2, 1], [1, 1, 1, 2], [1, 1, 1, 4]])     # [layers, steps]
    lens = LogitLens(["embeddings", "layer 0", "layer 1"], list("abcd"), [1, 2, 3, 4], np.full((3, 4), 0.5), ranks,
                     np.zeros((3, 4, 2), dtype=int), [[["x", "y"]] * 4] * 3, np.full((3, 4, 2), 0.25), "decoder")
    assert lens.settles_at() == [1, 0, 1, None]
    # the note counts the steps settling at each row, in plain words (no fractional layer)
    assert lens_note(lens).startswith("The chosen token becomes the top prediction, and stays it up to the output, "
                                      "at the embeddings for 1 of 4 steps, at layer 0 for 2 steps; at the other 1 "
                                      "it is not the output's top token")
    table = lens_table(lens)
    assert len(table) == 12 and list(table.columns[:5]) == ["layer", "step", "chosen", "p(chosen)", "rank"]
    assert table.loc[(table.layer == "embeddings") & (table.step == 0), "rank"].item() == 3


def test_the_note_counts_steps_per_layer_and_says_why_the_first_columns_echo_the_input(h8):
    trace = trace_sentence(h8, "The animal didn't cross the street because it was too tired.")
    lens = logit_lens(h8, trace)
    steps = len(trace.steps)
    note = lens_note(lens)
    counts = {}
    for step in range(steps):          # the first row from which the chosen token is top at every later row
        ranks = lens.chosen_ranks[:, step]
        if ranks[-1] == 1:
            row = len(ranks) - 1
            while row > 0 and ranks[row - 1] == 1:
                row -= 1
            counts[lens.layers[row]] = counts.get(lens.layers[row], 0) + 1
    first = True
    for name, count in sorted(counts.items(), key=lambda item: lens.layers.index(item[0])):
        where = f"at {'the ' if name == EMBEDDINGS else ''}{name} for {count}{f' of {steps}' if first else ''} step"
        assert where in note, (where, note)
        first = False
    assert not any(character.isdigit() and following == "." and after.isdigit()
                   for character, following, after in zip(note, note[1:], note[2:]))     # no 1.48
    # the embeddings' top token is the token each step reads: the one before it in the decoder's input
    inputs = trace.target_ids[trace.first_step_position: trace.first_step_position + steps]
    echoed = int((lens.top_ids[0, :, 0] == np.array(inputs)).sum())
    assert echoed * 2 > steps and f"The embeddings ({echoed} of {steps} steps)" in note and "tied" in note


@pytest.mark.parametrize("words", [5, 20, 45])
def test_the_figure_labels_every_step_and_writes_each_layers_top_token(h8, words):
    sentence = " ".join((["A", "dog", "runs", "on", "the", "grass", "and", "a", "girl", "watches"] * 5)[:words - 1])
    lens = logit_lens(h8, trace_sentence(h8, sentence + "."))
    figure = logit_lens_figure(lens)
    heatmap = figure.data[0]
    steps = len(lens.steps)
    assert [html.unescape(label) for label in heatmap.y] == [f"{i} {token}" for i, token in enumerate(lens.steps)]
    assert figure.layout.yaxis.tickmode == "linear" and figure.layout.yaxis.dtick == 1     # every step labelled
    assert figure.layout.height >= steps * 16
    np.testing.assert_allclose(np.array(heatmap.z), lens.chosen_probs.T)
    for step, row in enumerate(heatmap.text):       # each layer's top token, cut with … where it is long
        for layer, written in enumerate(html.unescape(cell) for cell in row):
            top = lens.top_tokens[layer][step][0]
            assert written == top or (written.endswith("…") and top.startswith(written[:-1])), (written, top)
    assert heatmap.texttemplate == "%{text}"
    hover = heatmap.hovertext[2][1]
    assert all(token in hover for token in lens.top_tokens[1][2]) and f"rank {lens.chosen_ranks[1, 2]}" in hover


@pytest.mark.parametrize("scale", [1.0, 1.3])
def test_no_title_line_touches_the_layer_names_at_any_scale(h8, scale):
    """At a projector's 1.3× type the fixed 130 px top let "layer" run over the subtitle: the top is measured."""
    from explorer.figures.common import FIGURE_SCALE, label_room, text_width, title_height

    lens = logit_lens(h8, trace_sentence(h8, "A dog runs on the grass."))
    token = FIGURE_SCALE.set(scale)
    try:
        figure = logit_lens_figure(lens)
        names = label_room(lens.layers, len(lens.layers), angle=30)
    finally:
        FIGURE_SCALE.reset(token)
    title = figure.layout.title.text
    assert figure.layout.margin.t >= title_height(title) + names + round(12 * scale)
    for line in title.split("<br>"):
        small = line.startswith("<sup>")
        text = line.removeprefix("<sup>").removesuffix("</sup>")
        assert text_width(html.unescape(text), 17 * (0.7 if small else 1)) <= figure.layout.width - 20, line
    assert figure.layout.xaxis.tickangle == -30


def test_the_notebook_api_answers_every_call(h8, tmp_path_factory):
    """explorer.analyses.sentence.logit_lens stays callable after its module has been imported (which makes the
    package's attribute the module), for a sentence, a trace, and a masked language model."""
    import explorer
    import explorer.analyses.sentence.logit_lens

    first = explorer.logit_lens_of(h8, SENTENCE)
    again = explorer.logit_lens_of(h8, trace_sentence(h8, SENTENCE), top_k=3)
    np.testing.assert_allclose(first.chosen_probs, again.chosen_probs)
    assert len(again.top_tokens[0][0]) == 3
    bert = open_model(saved_model("bert", tmp_path_factory))
    lens = explorer.logit_lens_of(bert, SENTENCE, position=2)
    assert lens.what == "masked" and lens.steps == bert.pieces([bert.encode(SENTENCE).ids[2]])


def test_a_sentence_encoder_has_no_lens_and_says_why(tmp_path_factory):
    """An encoder read out by pooling predicts no token: unembed refuses, and the lens says why in words."""
    model = open_model(saved_model("sentence-bert", tmp_path_factory))
    trace = trace_sentence(model, SENTENCE)
    with pytest.raises(ValueError, match="reads out no vocabulary"):
        model.unembed("encoder", torch.zeros(1, model.d_model))
    with pytest.raises(InputError, match="predicts no token"):
        masked_logit_lens(model, trace, 1)
