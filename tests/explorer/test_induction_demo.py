"""The live induction-head demonstration (explorer/analyses/lecture/induction_demo.py): scores checked on hand-built patterns (a
perfect induction head scores 1, a uniform one chance computed by hand), the loss recomputed independently, a short
run well shaped and deterministic, the phase change found on a curve built by hand, the figure and the shipped run."""

import math

import numpy as np
import pytest
import torch

from explorer.analyses.lecture.induction_demo import (
    DemoSettings,
    demo_model,
    head_scores,
    phase_change,
    repeated_sequences,
    run_demo,
    second_repeat_loss,
    shipped_demo,
    summary,
)
from explorer.figures.induction_demo import induction_demo_figure

SHORT = DemoSettings(steps=20, record_every=10, batch=16, eval_sequences=8, seed=3)


def test_sequences_are_filler_then_a_pattern_of_distinct_tokens_twice():
    settings = DemoSettings()
    ids, lengths, starts = repeated_sequences(settings, 20, torch.Generator().manual_seed(0))
    assert ids.shape == (20, settings.context) and len(set(lengths)) > 1          # the offset varies
    for row, length, start in zip(ids.tolist(), lengths, starts):
        assert settings.min_repeat <= length <= settings.max_repeat and start == settings.context - 2 * length
        first, second = row[start:start + length], row[start + length:]
        assert first == second and len(set(first)) == length
        assert not set(row[:start]) & set(first)          # each second-repeat token has one earlier copy only


def hand_built_patterns(ids, lengths, starts):
    """One layer, three heads [batch, heads, n, n]: a perfect induction head on the second repeat (itself
    elsewhere), a uniform causal head, a previous-token head (the first query on itself)."""
    batch, n = ids.shape
    patterns = torch.zeros(batch, 3, n, n)
    for row, (length, start) in enumerate(zip(lengths, starts)):
        patterns[row, 0] = torch.eye(n)
        for query in range(start + length, start + 2 * length):
            patterns[row, 0, query] = 0
            patterns[row, 0, query, query - length + 1] = 1        # the token after the earlier copy
    patterns[:, 1] = torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]
    patterns[:, 2, 0, 0] = 1
    patterns[:, 2, torch.arange(1, n), torch.arange(n - 1)] = 1
    return [patterns]


def test_a_hand_built_induction_head_scores_1_and_a_uniform_head_chance():
    ids, lengths, starts = repeated_sequences(DemoSettings(), 6, torch.Generator().manual_seed(1))
    scores = head_scores(hand_built_patterns(ids, lengths, starts), ids, lengths, starts)
    # chance by hand: second-repeat query i sees i + 1 keys, exactly one of them the token after the earlier copy
    chance = np.mean([np.mean([1 / (q + 1) for q in range(s + length, s + 2 * length)])
                      for length, s in zip(lengths, starts)])
    assert scores["prefix_matching_chance"] == pytest.approx(chance)
    np.testing.assert_allclose(scores["prefix_matching"][0, :2], [1.0, chance], atol=1e-9)
    n = ids.shape[1]
    assert scores["previous_token"][0, 2] == pytest.approx((n - 1) / n)      # every query but the first
    assert scores["prefix_matching"][0, 2] < 0.01


def test_the_second_repeat_loss_equals_a_direct_computation():
    settings = DemoSettings()
    ids, lengths, starts = repeated_sequences(settings, 4, torch.Generator().manual_seed(2))
    torch.manual_seed(0)
    logits = torch.randn(4, settings.context, settings.vocab)
    expected = []
    for row, (length, start) in enumerate(zip(lengths, starts)):
        for query in range(start + length, start + 2 * length - 1):
            expected.append(-torch.log_softmax(logits[row, query], -1)[ids[row, query + 1]].item())
    assert second_repeat_loss(logits, ids, lengths, starts).item() == pytest.approx(np.mean(expected), rel=1e-5)


@pytest.mark.slow
def test_a_short_run_is_well_shaped_deterministic_and_starts_from_the_untrained_model():
    calls = []
    first = run_demo(progress=calls.append, settings=SHORT)
    again = run_demo(settings=SHORT)
    assert first["steps"] == [0, 10, 20] and calls[-1] == pytest.approx(1.0)
    for name in ("loss", "induction_score", "previous_token_score"):
        assert len(first[name]) == 3 and all(math.isfinite(v) for v in first[name])
        assert first[name] == again[name], name
    assert all(0 <= v <= 1 for v in first["induction_score"] + first["previous_token_score"])
    assert first["settings"]["steps"] == 20 and first["seconds"] < 15
    # step 0: the freshly initialised model with this seed, measured independently
    torch.manual_seed(SHORT.seed)
    model = demo_model(SHORT)
    ids, lengths, starts = repeated_sequences(SHORT, SHORT.eval_sequences, torch.Generator().manual_seed(10_000 + SHORT.seed))
    with torch.no_grad():
        logits, patterns = model(ids)
    assert first["loss"][0] == pytest.approx(second_repeat_loss(logits, ids, lengths, starts).item(), abs=1e-4)
    assert first["induction_score"][0] == pytest.approx(
        head_scores(patterns, ids, lengths, starts)["prefix_matching"][1].max(), abs=1e-4)
    assert abs(first["loss"][0] - math.log(SHORT.vocab)) < 1.0        # untrained: near uniform guessing
    assert run_demo(steps=10, settings=SHORT)["steps"] == [0, 10]


def test_the_phase_change_is_the_scores_rise_from_10_to_90_percent():
    steps = list(range(0, 1000, 50))
    score = [0.05 + 0.85 / (1 + math.exp(-(s - 500) / 40)) for s in steps]
    loss = [3.0 - 2.8 * (v - 0.05) / 0.85 for v in score]
    change = phase_change(steps, loss, score, chance=0.02)
    top = max(score)
    onset = next(s for s, v in zip(steps, score) if v >= score[0] + 0.1 * (top - score[0]))
    end = next(s for s, v in zip(steps, score) if v >= score[0] + 0.9 * (top - score[0]))
    assert (change["onset_step"], change["step"], change["end_step"]) == (onset, 500, end)
    assert change["loss_before"] == loss[steps.index(onset) - 1] and change["score_after"] == score[steps.index(end)]
    assert phase_change(steps, loss, score, chance=0.1) is None          # 0.9 < 10 × 0.1


def test_the_figure_draws_both_curves_and_marks_the_phase_change():
    steps = list(range(0, 500, 50))
    score = [0.05] * 4 + [0.3, 0.7, 0.9, 0.92, 0.93, 0.93]
    result = {"steps": steps, "loss": [3 - 2.5 * v for v in score], "induction_score": score,
              "previous_token_score": [0.5] * 10, "chance": {"loss": math.log(64), "induction_score": 0.02},
              "phase_change": phase_change(steps, [3 - 2.5 * v for v in score], score, 0.02)}
    figure = induction_demo_figure(result)
    by_name = {trace.name: trace for trace in figure.data}
    assert list(by_name["second-repeat loss"].y) == result["loss"]
    assert list(by_name["induction score (layer 2, best head)"].y) == score
    shapes = figure.layout.shapes
    assert any(s.type == "rect" and s.x0 == result["phase_change"]["onset_step"] for s in shapes)
    assert any(s.type == "line" and s.x0 == result["phase_change"]["step"] for s in shapes)
    assert induction_demo_figure({**result, "phase_change": None}).layout.shapes[-1].type == "line"   # chance only
    # The phase change's label ends where its shading starts, halfway down the loss panel; the uniform guess's
    # sits at the panel's top right: on the Papers page the two once ran into each other.
    (label,) = [a for a in figure.layout.annotations if a.text.startswith("phase change")]
    (uniform,) = [a for a in figure.layout.annotations if a.text.startswith("uniform guess")]
    assert (label.xanchor, label.x, label.yref, label.y) == ("right", result["phase_change"]["onset_step"],
                                                             "y domain", 0.45)
    assert uniform.xanchor == "right" and uniform.x == 1 and uniform.y == result["chance"]["loss"]


def test_the_shipped_run_is_complete_and_its_summary_reads_its_numbers():
    shipped = shipped_demo()
    assert shipped is not None, "models/induction_demo.json: run python -m explorer.analyses.lecture.induction_demo"
    count = len(shipped["steps"])
    assert all(len(shipped[name]) == count for name in ("loss", "induction_score", "previous_token_score"))
    assert shipped["steps"][-1] == shipped["settings"]["steps"]
    change = shipped["phase_change"]
    text = summary(shipped)
    if change:
        assert f"step {change['step']}" in text and f"{change['loss_before']:.2f}" in text
    else:
        assert "No induction head" in text
