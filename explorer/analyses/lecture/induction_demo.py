"""A live induction-head demonstration (Olsson et al. 2022, "In-context Learning and Induction Heads"): train a
2-layer attention-only Transformer on repeated random tokens on this CPU and watch the phase change — the loss on
the second repeat falls suddenly while a layer-2 head's prefix-matching score rises.

No bundled model is a language model, so the Papers page shows this instead of a pretrained one's heads. The model
is small and lives with the others (models/attention_only.py: token embedding + learned positions, 2 causal attention
layers with residuals, pre-layer norm, unembedding; no MLP); this module trains it and measures it as it learns. Each
training sequence: random filler, then `L` distinct random tokens, then the same `L` again, in a fixed context; `L`
varies per sequence, so the repeat's offset does, and no positional head can copy it (only an induction head, reading
"what came after the earlier copy of my token", can). The filler comes from the tokens not in the pattern, so each
second-repeat token has exactly one earlier copy.

Scores reuse explorer/analyses/sentence/detectors.py's definitions: prefix matching = the share of a second-repeat
query's attention on the token after its earlier copy (mul_score with the induction detection pattern over those
queries; 1 for a perfect induction head), previous token likewise over all queries. Deterministic for a seed on one
torch thread.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

import explorer.settings as settings
from explorer.analyses.sentence.detectors import detection_patterns, mul_score
from explorer.models.attention_only import AttentionOnly, AttentionOnlyConfig

DEMO_FILE = settings.CHECKPOINTS / "induction_demo.json"


@dataclass(frozen=True)
class DemoSettings:
    vocab: int = 64             # token ids 0 … vocab−1, none special
    context: int = 64           # positions per sequence: filler, pattern, pattern
    min_repeat: int = 16        # pattern length L, drawn per sequence from [min_repeat, max_repeat]
    max_repeat: int = 32
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    batch: int = 32
    lr: float = 3e-3
    steps: int = 2000
    second_repeat_only: bool = True     # train on the second repeat's predictions only: the rest is unpredictable
                                        # noise whose gradient only slows the phase change
    record_every: int = 25      # steps between measurements on the fixed evaluation batch
    eval_sequences: int = 64
    seed: int = 0


def demo_model(settings: DemoSettings) -> AttentionOnly:
    """The demonstration's model at these settings, untrained (models/attention_only.py)."""
    return AttentionOnly(AttentionOnlyConfig(vocab=settings.vocab, context=settings.context, d_model=settings.d_model,
                                             heads=settings.heads, layers=settings.layers))


def repeated_sequences(settings: DemoSettings, count: int, generator: torch.Generator):
    """(ids [count, context], pattern lengths L, where each first repeat starts): filler, L tokens, the same L."""
    rows, lengths, starts = [], [], []
    for _ in range(count):
        length = int(torch.randint(settings.min_repeat, settings.max_repeat + 1, (1,), generator=generator))
        order = torch.randperm(settings.vocab, generator=generator)
        pattern, others = order[:length], order[length:]
        filler = others[torch.randint(len(others), (settings.context - 2 * length,), generator=generator)]
        rows.append(torch.cat([filler, pattern, pattern]))
        lengths.append(length)
        starts.append(settings.context - 2 * length)
    return torch.stack(rows), lengths, starts


def second_repeat_loss(logits: torch.Tensor, ids: torch.Tensor, lengths: list[int], starts: list[int]) -> torch.Tensor:
    """Mean cross-entropy of the predictions a copy makes possible: from each second-repeat token but the last,
    the next one (the first token of the second repeat itself cannot be foreseen)."""
    losses = []
    for row, (length, start) in enumerate(zip(lengths, starts)):
        queries = torch.arange(start + length, start + 2 * length - 1)
        losses.append(nn.functional.cross_entropy(logits[row, queries], ids[row, queries + 1], reduction="none"))
    return torch.cat(losses).mean()


def head_scores(patterns: list[torch.Tensor], ids: torch.Tensor, lengths: list[int], starts: list[int]) -> dict:
    """Per layer and head [layers, heads], averaged over the sequences: prefix matching over the second repeat's
    queries, previous token over every query (explorer/analyses/sentence/detectors.py's mul_score), and their chance (uniform
    causal attention: query i sees i + 1 keys, one of them the detected one)."""
    stacked = torch.stack(patterns, 1).double().cpu().numpy()                # [batch, layers, heads, query, key]
    prefix, previous, chance = [], [], []
    for row, (length, start) in enumerate(zip(lengths, starts)):
        found = detection_patterns(ids[row].tolist())
        second = np.arange(start + length, start + 2 * length)
        prefix.append(mul_score(stacked[row], found["induction"], second))
        previous.append(mul_score(stacked[row], found["previous_token"]))
        chance.append(np.mean(1.0 / (second + 1)))
    return {"prefix_matching": np.mean(prefix, 0), "previous_token": np.mean(previous, 0),
            "prefix_matching_chance": float(np.mean(chance))}


def phase_change(steps: list[int], loss: list[float], score: list[float], chance: float,
                 times_chance: float = 10.0) -> dict | None:
    """The rise of the induction score from 10% to 90% of the way between its first and its highest value (the
    phase change's onset and end), with the loss and score there; None when the score never reaches
    `times_chance` × chance (far above chance, the card's rule)."""
    first, top = score[0], max(score)
    if top < times_chance * chance:
        return None
    reached = lambda share: next(i for i, value in enumerate(score) if value >= first + share * (top - first))  # noqa: E731
    onset, middle, end = reached(0.1), reached(0.5), reached(0.9)
    before = max(0, onset - 1)
    return {"onset_step": steps[onset], "step": steps[middle], "end_step": steps[end],
            "loss_before": loss[before], "loss_after": loss[end],
            "score_before": score[before], "score_after": score[end]}


def run_demo(steps: int | None = None, progress: Callable[[float], None] | None = None,
             settings: DemoSettings | None = None) -> dict:
    """Train the demonstration model; every settings.record_every steps measure, on a fixed evaluation batch, the
    second-repeat loss, the best layer-2 head's prefix-matching score and the best layer-1 head's previous-token
    score. A JSON-ready dict: the curves, the phase change (or None), seconds, settings."""
    settings = settings or DemoSettings()
    if steps is not None:
        settings = DemoSettings(**{**asdict(settings), "steps": steps})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)            # one thread, as the app runs: the timing is this CPU's, and deterministic
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(settings.seed)
            return _train(settings, progress)
    finally:
        torch.set_num_threads(threads)


def _train(settings: DemoSettings, progress: Callable[[float], None] | None) -> dict:
    model = demo_model(settings)
    optimiser = torch.optim.Adam(model.parameters(), lr=settings.lr)
    data = torch.Generator().manual_seed(settings.seed)
    evaluation = repeated_sequences(settings, settings.eval_sequences, torch.Generator().manual_seed(10_000 + settings.seed))
    curves = {"steps": [], "loss": [], "induction_score": [], "previous_token_score": [], "train_loss": []}
    chance, started, train_losses = None, time.perf_counter(), []

    def record(step: int) -> None:
        nonlocal chance
        with torch.no_grad():
            logits, patterns = model(evaluation[0])
            scores = head_scores(patterns, *evaluation)
        curves["steps"].append(step)
        curves["loss"].append(round(float(second_repeat_loss(logits, *evaluation)), 4))
        curves["induction_score"].append(round(float(scores["prefix_matching"][-1].max()), 4))     # last layer
        curves["previous_token_score"].append(round(float(scores["previous_token"][0].max()), 4))  # first layer
        curves["train_loss"].append(round(float(np.mean(train_losses)), 4) if train_losses else None)
        train_losses.clear()
        chance = scores["prefix_matching_chance"]
        if progress:
            progress(step / settings.steps)

    record(0)
    for step in range(1, settings.steps + 1):
        ids, lengths, starts = repeated_sequences(settings, settings.batch, data)
        logits, _ = model(ids)
        loss = (second_repeat_loss(logits, ids, lengths, starts) if settings.second_repeat_only else
                nn.functional.cross_entropy(logits[:, :-1].reshape(-1, settings.vocab), ids[:, 1:].reshape(-1)))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        train_losses.append(loss.item())
        if step % settings.record_every == 0 or step == settings.steps:
            record(step)
    seconds = time.perf_counter() - started
    return {**curves, "chance": {"induction_score": round(chance, 4),
                                 "loss": round(math.log(settings.vocab), 4)},     # uniform over the vocabulary
            "phase_change": phase_change(curves["steps"], curves["loss"], curves["induction_score"], chance),
            "seconds": round(seconds, 1), "torch_threads": 1, "settings": asdict(settings),
            "definition": ("loss: cross-entropy of predicting each second-repeat token after its first; induction "
                           "score: the best last-layer head's prefix matching over the second repeat (Olsson et al. "
                           "2022; 1 = a perfect induction head); previous-token score: the best first-layer head's; "
                           "phase change: the induction score's rise from 10% to 90% of the way to its highest")}


def shipped_demo(path: Path = DEMO_FILE) -> dict | None:
    """The result of one run shipped with the project (models/induction_demo.json), or None."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def summary(result: dict) -> str:
    """One sentence on what the run found."""
    change, last = result["phase_change"], len(result["steps"]) - 1
    if change is None:
        return (f"No induction head formed in {result['steps'][-1]} steps ({result['seconds']:.0f} s): best "
                f"last-layer prefix matching {max(result['induction_score']):.2f} (chance "
                f"{result['chance']['induction_score']:.3f}); second-repeat loss {result['loss'][0]:.2f} → "
                f"{result['loss'][last]:.2f}.")
    return (f"Phase change at step {change['step']} (from {change['onset_step']} to {change['end_step']} of "
            f"{result['steps'][-1]}, {result['seconds']:.0f} s on one CPU thread): second-repeat loss "
            f"{change['loss_before']:.2f} → {change['loss_after']:.2f} ({result['loss'][last]:.2f} at the end), "
            f"induction score {change['score_before']:.2f} → {change['score_after']:.2f} (chance "
            f"{result['chance']['induction_score']:.3f}).")


# python -m explorer.analyses.lecture.induction_demo: one run, written to models/induction_demo.json
if __name__ == "__main__":
    outcome = run_demo(progress=lambda share: print(f"\r{share:.0%}", end="", flush=True))
    DEMO_FILE.write_text(json.dumps(outcome) + "\n", encoding="utf-8")
    print("\n" + summary(outcome))
