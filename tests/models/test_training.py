"""The training script learns, writes a loadable checkpoint, and resumes after an interruption."""

import json
import math

import pytest

from explorer.models.checkpoint import load_checkpoint
from explorer.models.train import main
from tests.conftest import MULTI30K

TINY = ["--data", str(MULTI30K), "--heads", "2", "--d-model", "32", "--d-ff", "64", "--layers", "1",
        "--vocab-size", "300", "--limit", "200", "--val-limit", "20", "--max-tokens", "300", "--lr", "3e-3",
        "--warmup", "10", "--no-test", "--average", "2", "--no-bf16", "--threads", "1"]


@pytest.mark.slow
def test_a_tiny_model_lowers_its_loss_and_resumes(tmp_path):
    out, state_dir = tmp_path / "tiny", tmp_path / "state"
    run = TINY + ["--out", str(out), "--state-dir", str(state_dir), "--patience", "0"]
    assert main(run + ["--epochs", "2"]) == 0
    first = json.loads((state_dir / "state.json").read_text())
    assert first["epoch"] == 2 and first["step"] > 24  # a few dozen steps on 200 pairs

    # Running again with more epochs continues from the saved state instead of starting over.
    assert main(run + ["--epochs", "4"]) == 0
    state = json.loads((state_dir / "state.json").read_text())
    history = state["history"]
    assert [r["epoch"] for r in history] == [1, 2, 3, 4]
    assert history[2]["step"] > history[1]["step"]
    assert history[-1]["val_loss"] < history[0]["val_loss"]
    assert history[-1]["val_loss"] < math.log(300) - 1.0  # well below a uniform guess over the vocabulary
    assert history[-1]["train_loss"] < history[0]["train_loss"]

    checkpoint = load_checkpoint(out)
    assert checkpoint.model.config.heads == 2
    assert checkpoint.info["training"]["steps"] == state["step"]
    assert len(checkpoint.frequencies["source"]) == checkpoint.tokenizer.vocab_size
    assert sum(checkpoint.frequencies["target"]) > 200


@pytest.mark.slow
def test_when_validation_stalls_the_learning_rate_decays_to_zero_and_training_stops(tmp_path):
    """An untrained tiny model scores BLEU 0 on 5 sentences every epoch: after --patience 1 epoch without
    improvement the decay starts (2 epochs, the minimum), the learning rate falls to 0, and training stops
    long before the 10-epoch ceiling."""
    out, state_dir = tmp_path / "tiny", tmp_path / "state"
    args = [a for a in TINY if a != "--val-limit" and a != "20"]
    assert main(args + ["--val-limit", "5", "--out", str(out), "--state-dir", str(state_dir), "--epochs", "10",
                        "--patience", "1", "--limit", "60"]) == 0
    state = json.loads((state_dir / "state.json").read_text())
    history = state["history"]
    assert [r["val_bleu"] for r in history[:2]] == [0.0, 0.0]
    assert state["decay"]["start_epoch"] == 2 and state["decay"]["epochs"] == 2 and len(history) == 4
    assert history[2]["lr"] < state["decay"]["start_lr"] and history[3]["lr"] < history[2]["lr"] / 2
    info = json.loads((out / "config.json").read_text())["training"]
    assert info["decay"] == state["decay"] and info["epochs"] == 4
