"""Bars per token in HTML (explorer/figures/token_bars.py): each bar's value, height and hover read back from the
markup, the Decoding page's two figures against the steps and weights they were drawn from."""

import html
import re

import numpy as np
import pytest

from explorer.analyses.corpus.pruning import StepComparison
from explorer.capture.trace import StepDistribution
from explorer.figures.decoding import attention_row_described, steps_described
from explorer.figures.pruning import step_comparison_described
from explorer.figures.token_bars import Bars, TokenBars, html_bars

BAR = re.compile(r'class="bar" data-bar="([^"]*)" data-value="([^"]*)".*?height: ([\d.]+)%')


def bar_values(body: str) -> dict[str, list[float]]:
    """Each row of bars' values, by the row's name, in the columns' order."""
    values: dict[str, list[float]] = {}
    for name, value, _ in BAR.findall(body):
        values.setdefault(html.unescape(name), []).append(float(value))
    return values


def bar_heights(body: str) -> dict[str, list[float]]:
    """Each row's bar heights, in % of the row."""
    heights: dict[str, list[float]] = {}
    for name, _, height in BAR.findall(body):
        heights.setdefault(html.unescape(name), []).append(float(height))
    return heights


def bar_labels(body: str) -> list[str]:
    return [html.unescape(label) for label in re.findall(r'class="bar-label"[^>]*>([^<]*)</div>', body)]


def column_hovers(body: str) -> list[str]:
    return [html.unescape(hover) for hover in re.findall(r'class="token-column" data-label="[^"]*" title="([^"]*)"',
                                                         body)]


def test_a_bar_is_as_tall_as_its_share_of_the_top_and_never_past_it():
    body = html_bars(TokenBars(["a", "b", "c"], [Bars("w", [0.25, 1.5, -0.1], 1.0, 80)], "t"))
    assert bar_values(body) == {"w": [0.25, 1.5, -0.1]}
    assert bar_heights(body) == {"w": [25.0, 100.0, 0.0]}
    assert bar_labels(body) == ["0 a", "1 b", "2 c"]


def test_labels_and_titles_are_escaped():
    body = html_bars(TokenBars(["<b>x</b>"], [Bars("<i>", [0.5], 1.0, 80)], "<script>"))
    assert "<b>x</b>" not in body and "<script>" not in body and "<i>" not in body
    assert bar_labels(body) == ["0 <b>x</b>"]


def steps_of(probabilities, entropies) -> list[StepDistribution]:
    return [StepDistribution(chosen=f"▁w{i}", chosen_id=i, chosen_prob=p, entropy=e, top_tokens=[f"▁w{i}"],
                             top_ids=[i], top_probs=[p]) for i, (p, e) in enumerate(zip(probabilities, entropies))]


def test_every_steps_probability_and_entropy():
    probabilities, entropies = [0.9, 0.004, 0.5], [0.3, 3.2, 1.0]
    body = html_bars(steps_described(steps_of(probabilities, entropies)))
    assert bar_values(body) == {"p(chosen)": probabilities, "entropy (nats)": entropies}
    # entropy from 0 to a round top over the largest (3.2 → 4 nats), said on the scale
    assert bar_heights(body)["entropy (nats)"] == pytest.approx([100 * e / 4 for e in entropies], abs=0.01)
    assert "<span>4</span>" in body
    assert bar_labels(body) == ["0 ▁w0", "1 ▁w1", "2 ▁w2"]
    assert column_hovers(body)[1] == "1 ▁w1\np(chosen) 0.004\nentropy (nats) 3.20"       # never 0.000


def test_where_a_step_looked():
    weights = np.array([0.7, 0.2996, 0.0004])
    body = html_bars(attention_row_described(weights, ["▁A", "▁dog", "</s>"], "step 0: where it looked",
                                             ["cross-attention"]))
    assert bar_values(body) == {"weight": pytest.approx(list(weights))}
    assert bar_heights(body) == {"weight": pytest.approx([70.0, 29.96, 0.04], abs=0.005)}         # of 0–1
    assert bar_labels(body) == ["0 ▁A", "1 ▁dog", "2 </s>"] and "cross-attention" in body
    assert column_hovers(body) == ["0 ▁A\nweight 0.700", "1 ▁dog\nweight 0.300", "2 </s>\nweight 0.0004"]


def test_the_pruned_models_steps_and_kl():
    """Prune's bars: each step's probability under both models and the KL between them, a NaN (a value that could
    not be computed) an empty bar that says so, never a crash."""
    steps = StepComparison(["▁Ein", "▁Hund", "</s>"], [0.9, 0.5, 0.99], [0.2, 0.00031, 0.98], [1.3, 2.6, float("nan")])
    body = html_bars(step_comparison_described(steps))
    assert bar_values(body)["pruned"] == [0.2, 0.00031, 0.98]
    kl = bar_heights(body)["KL (nats)"]
    assert kl == pytest.approx([100 * 1.3 / 3, 100 * 2.6 / 3, 0.0], abs=0.01)      # 0–3 nats over the finite ones
    assert column_hovers(body)[1] == "1 ▁Hund\nunpruned 0.500\npruned 0.00031\nKL (nats) 2.600"
    assert column_hovers(body)[2].endswith("KL (nats) none")
