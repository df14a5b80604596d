"""The Internals page's Positions tab on a model with rotary positions (a tiny random Llama): the angles it draws
are each position × each pair's θ, with θ computed here from config.json (rope_theta, head_dim), not read from
the model."""

import json

import numpy as np

from explorer.capture.trace import trace_sentence
from explorer.models.loader import open_model
from explorer.pages.components.session import OWN
from tests.app.conftest import open_page, open_part
from tests.app.test_pages import chart_titled
from tests.hugging_face_models import SENTENCE, saved_model


def config_angles(folder, positions: int) -> np.ndarray:
    """RoPE's angles [positions, pairs] from the config alone (Su et al. 2021): θ_i = base^(−2i / head_dim)."""
    config = json.loads((folder / "config.json").read_text())
    base = config.get("rope_theta") or config["rope_parameters"]["rope_theta"]
    head_dim = config["head_dim"]
    theta = base ** (-np.arange(0, head_dim, 2) / head_dim)
    return np.arange(positions)[:, None] * theta[None, :]


def test_positions_tab_draws_the_rotary_angles_of_the_config(tmp_path_factory):
    folder = saved_model("llama", tmp_path_factory)
    at = open_part(open_page("internals.py", SENTENCE, model=OWN, own_model=str(folder)), "Positions")
    assert not at.error
    assert any("rotary positions" in caption.value and "q·k" in caption.value for caption in at.caption)
    heatmap = chart_titled(at, "Rotary angles")[0]
    tokens = trace_sentence(open_model(folder), SENTENCE).target_tokens      # the prompt and its continuation
    assert len(heatmap["y"]) == len(tokens) and len(heatmap["x"]) == 4        # head_dim 8: four pairs
    drawn = np.array(heatmap["z"], dtype=float)
    expected = config_angles(folder, len(tokens))
    assert ((drawn >= 0) & (drawn < 2 * np.pi)).all()                         # drawn after whole turns
    # compared as points on the circle: an angle a hair under 2π and one a hair over 0 are the same rotation
    np.testing.assert_allclose(np.exp(1j * drawn), np.exp(1j * expected), atol=1e-5)
    np.testing.assert_allclose(np.array(heatmap["customdata"], dtype=float)[..., 0], expected, rtol=1e-6)
