"""Head detectors (Olsson et al. 2022; TransformerLens's definitions): patterns checked by hand, heads planted by
setting their scores (a previous-token head scores ≈ 1, a uniform head chance, an induction head prefix-matching ≈ 1),
scores recomputed from transformers' own attention weights, every family, the CLI and the notebook call."""

import json

import numpy as np
import pytest
import torch
import transformers

import explorer
from explorer.analyses.sentence.detectors import (
    DETECTORS,
    detect_heads,
    detection_patterns,
    detection_table,
    longest_length,
    reference_table,
    repeated_random_tokens,
)
from explorer.cli import main
from explorer.models.hooks import model_run
from explorer.models.loader import open_model
from explorer.models.vocabulary import attention_hook
from tests.hugging_face_models import FAMILIES, saved_model

PLANTED = 50.0          # a score this far above the others takes all of softmax's weight (e^-50)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family_model(request, tmp_path_factory):
    return open_model(str(saved_model(request.param, tmp_path_factory)))


def planted(kind: str, layer: int, heads: dict):
    """Hooks that set some heads' scores of one block: heads maps a head to a function n → [n, n] scores. The mask
    is applied after the scores hook, so a decoder's future stays hidden. Only the probe's square patterns are set
    (not those of the one-token pass that measures the vocabulary)."""
    def hook(scores: torch.Tensor, _: str) -> torch.Tensor:
        if scores.shape[-1] < 4:
            return scores
        scores = scores.clone()
        for head, make in heads.items():
            scores[:, head] = torch.as_tensor(make(scores.shape[-1]), dtype=scores.dtype)
        return scores
    return {attention_hook(kind, layer, "scores"): hook}


def previous_token_scores(n: int) -> np.ndarray:
    matrix = np.zeros((n, n))
    matrix[0, 0] = PLANTED                                    # the first token has no previous one: itself
    matrix[np.arange(1, n), np.arange(n - 1)] = PLANTED
    return matrix


def test_detection_patterns_by_hand():
    found = detection_patterns([9, 5, 6, 7, 5, 6, 7])
    assert {tuple(p) for p in np.argwhere(found["previous_token"])} == {(i, i - 1) for i in range(1, 7)}
    assert {tuple(p) for p in np.argwhere(found["duplicate_token"])} == {(4, 1), (5, 2), (6, 3)}
    # the key after the earlier copy: token 5 (query 4) → key 2 (after the 5 at 1), …
    assert {tuple(p) for p in np.argwhere(found["induction"])} == {(4, 2), (5, 3), (6, 4)}


def test_random_sequences_are_distinct_ordinary_tokens_repeated(tiny_checkpoint):
    sequences = repeated_random_tokens(tiny_checkpoint, 3, 10)
    assert len(sequences) == 3 and len({tuple(s) for s in sequences}) == 3
    for sequence in sequences:
        first, second = sequence[:10], sequence[10:]
        assert first == second and len(set(first)) == 10
        assert not set(first) & (tiny_checkpoint.special_ids | {tiny_checkpoint.pad_id})


def test_a_planted_previous_token_head_scores_about_1_and_a_uniform_one_chance(tiny_checkpoint):
    heads = {1: previous_token_scores, 2: lambda n: np.zeros((n, n))}
    hooks = {**planted("encoder", 0, heads), **planted("decoder", 1, heads)}
    with model_run(hooks, hook_names=tiny_checkpoint.hook_names):
        result = detect_heads(tiny_checkpoint, seeds=2, length=12)
    for kind, layer in (("encoder", 0), ("decoder", 1)):
        scores = {name: result.scores[kind][name][layer] for name in DETECTORS}
        n = result.positions[kind]
        assert result.ceiling[kind]["previous_token"] == pytest.approx((n - 1) / n)
        assert scores["previous_token"][1] == pytest.approx((n - 1) / n, abs=1e-6)    # every query but the first
        assert scores["previous_token"][1] > 0.95
        for name in DETECTORS:
            assert scores[name][2] == pytest.approx(result.chance[kind][name], abs=1e-6), (kind, name)
        assert scores["duplicate_token"][1] < 1e-6 and scores["induction"][1] < 1e-6
    # chance by hand: a uniform encoder head gives each query 1/n of its attention on the previous token
    n = result.positions["encoder"]
    assert result.chance["encoder"]["previous_token"] == pytest.approx((n - 1) / n ** 2)


def test_a_planted_induction_head_scores_prefix_matching_about_1(tiny_checkpoint):
    length = longest_length(tiny_checkpoint, 12)
    start = len(tiny_checkpoint.decoder_prefix())            # the decoder reads the sequence after its start token

    def induction(n: int) -> np.ndarray:
        matrix = np.zeros((n, n))
        for query in range(start + length, start + 2 * length):
            matrix[query, query - length + 1] = PLANTED       # the token after the earlier copy of the query's token
        return matrix

    with model_run(planted("decoder", 0, {3: induction}), hook_names=tiny_checkpoint.hook_names):
        result = detect_heads(tiny_checkpoint, seeds=2, length=12)
    assert result.scores["decoder"]["prefix_matching"][0, 3] == pytest.approx(1.0, abs=1e-6)
    assert result.scores["decoder"]["induction"][0, 3] == pytest.approx(result.ceiling["decoder"]["induction"], abs=0.01)
    assert result.ceiling["decoder"]["prefix_matching"] == 1.0
    # chance by hand: a uniform decoder query i sees i + 1 keys, one of them the planted one
    assert result.chance["decoder"]["prefix_matching"] == pytest.approx(
        np.mean([1 / (query + 1) for query in range(start + length, start + 2 * length)]))


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_scores_equal_those_from_transformers_own_attention(family, tmp_path_factory):
    """Recomputed by index arithmetic from transformers' eager attention weights, never from the detector's patterns."""
    folder = saved_model(family, tmp_path_factory)
    model = open_model(str(folder))
    seeds, length = 3, 10
    result = detect_heads(model, seeds=seeds, length=length)
    sequences = repeated_random_tokens(model, seeds, length)
    kind = model.kinds[0]
    if family == "bert":
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        rows, start = [[tokenizer.cls_token_id] + s + [tokenizer.sep_token_id] for s in sequences], 1
        theirs = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    else:
        rows, start = sequences, 0
        theirs = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        attentions = theirs(torch.tensor(rows), output_attentions=True).attentions
    n = len(rows[0])
    second = range(start + length, start + 2 * length)
    for layer, weights in enumerate(attentions):                 # [seeds, heads, n, n], rows summing to 1
        weights = weights.double().numpy()
        previous = np.mean([sum(w[:, i, i - 1] for i in range(1, n)) / n for w in weights], axis=0)
        duplicate = np.mean([sum(w[:, i, i - length] for i in second) / n for w in weights], axis=0)
        induction = np.mean([sum(w[:, i, i - length + 1] for i in second) / n for w in weights], axis=0)
        prefix = np.mean([sum(w[:, i, i - length + 1] for i in second) / length for w in weights], axis=0)
        for name, expected in (("previous_token", previous), ("duplicate_token", duplicate),
                               ("induction", induction), ("prefix_matching", prefix)):
            np.testing.assert_allclose(result.scores[kind][name][layer], expected, rtol=1e-4, atol=1e-6,
                                       err_msg=f"{family} {name} layer {layer}")
    # chance of a decoder's previous-token detector: query i sees i + 1 keys, one of them the previous token
    if kind == "decoder":
        assert result.chance[kind]["previous_token"] == pytest.approx(sum(1 / (i + 1) for i in range(1, n)) / n)


@pytest.mark.slow
def test_every_family_is_scored_on_its_self_attention_only(family_model):
    result = detect_heads(family_model, seeds=2, length=8)
    assert set(result.scores) == {kind for kind in ("encoder", "decoder") if family_model.has(kind)}
    for kind, by_name in result.scores.items():
        assert set(by_name) == set(DETECTORS)
        for name, values in by_name.items():
            assert values.shape == (family_model.layers(kind), family_model.heads)
            assert np.all((values >= 0) & (values <= result.ceiling[kind][name] + 1e-9))
            assert 0 < result.chance[kind][name] < result.ceiling[kind][name] <= 1
    assert ("cross" in result.not_scored) == family_model.has("cross")
    table = detection_table(result)
    assert len(table) == sum(family_model.layers(k) * family_model.heads for k in result.scores)
    assert len(reference_table(result)) == 2 * len(result.scores)


def test_the_json_round_trip_and_the_notebook_call(tiny_checkpoint):
    from explorer.analyses.sentence.detectors import HeadDetection

    result = explorer.detect_heads(tiny_checkpoint, seeds=2, length=6)
    again = HeadDetection.from_json(json.loads(json.dumps(result.to_json())))
    np.testing.assert_allclose(again.scores["decoder"]["previous_token"], result.scores["decoder"]["previous_token"],
                               atol=1e-4)
    assert again.chance == result.chance and again.ceiling == result.ceiling
    top = result.top("encoder", "previous_token", 2)
    values = result.scores["encoder"]["previous_token"]
    assert top[0][1] == pytest.approx(values.max()) and top[0][1] >= top[1][1]
    layer, head = np.unravel_index(values.argmax(), values.shape)
    assert top[0][0] == f"enc.{layer}.{head}"


def test_cli_detect(tiny_checkpoint, capsys):
    assert main(["detect", "--model", str(tiny_checkpoint.path), "--seeds", "2", "--length", "6", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = detect_heads(tiny_checkpoint, seeds=2, length=6)
    np.testing.assert_allclose(printed["scores"]["encoder"]["induction"], expected.scores["encoder"]["induction"],
                               atol=1e-4)
    assert printed["chance"] == expected.chance and "cross" in printed["not_scored"]
    assert main(["detect", "--model", str(tiny_checkpoint.path), "--seeds", "2", "--length", "6"]) == 0
    text = capsys.readouterr().out
    assert "previous token" in text and "chance" in text and "not scored" in text
    assert main(["detect", "--model", "no/such/folder"]) == 1
    assert capsys.readouterr().err.startswith("error:")


def test_the_detector_maps_colour_by_distance_above_chance_with_readable_subtitles(tiny_checkpoint):
    """Each cell's colour: log(score / chance) / log(best / chance), 0 at or below chance, 1 for a perfect head
    (recomputed here); the score written in it; each panel's chance and best in a subtitle of 12 px."""
    from explorer.figures.detectors import detector_maps

    detection = detect_heads(tiny_checkpoint)
    for kind in detection.scores:
        figure = detector_maps(detection, kind)
        for trace, name in zip(figure.data, detection.scores[kind]):
            scores = detection.scores[kind][name]
            chance, best = detection.chance[kind][name], detection.ceiling[kind][name]
            expected = [[min(1.0, max(0.0, np.log(max(v, chance) / chance) / np.log(best / chance))) for v in row]
                        for row in scores]
            np.testing.assert_allclose(np.array(trace.z, dtype=float), expected, atol=1e-9)
            assert np.array(trace.text).tolist() == [[f"{v:.2f}".replace("-0.00", "0.00") for v in row]
                                                     for row in scores]
            subtitle = f"chance {chance:.3f} · best {best:.3f}"
            notes = [a for a in figure.layout.annotations if a.text == subtitle]
            assert notes and all(note.font.size >= 12 for note in notes)
        assert "chance" in figure.layout.coloraxis.colorbar.ticktext[0]
