"""The Images page draws the Vision Transformer's own numbers: the class probabilities, one head's weights over the
image, rollout, the position similarity and the walkthrough, every tab; pruned heads change every view and the
accuracy; with the image model in the sidebar, the pages about sentences say so instead of breaking."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.analyses.sentence.image_heads import held_out_score
from explorer.analyses.sentence.positional import position_similarity
from explorer.analyses.sentence.rollout import attention_rollout
from explorer.capture.head_sets import parse_heads
from explorer.capture.image_trace import trace_image
from explorer.models.digits import held_out
from explorer.models.loader import open_model
from tests.app.test_pages import chart_titled
from tests.conftest import ROOT

VIT = ROOT / "models" / "digits-vit"
TABS = ["One head", "Every head", "Rollout", "Positions", "Q, K, V", "Accuracy"]


@pytest.fixture(scope="module")
def vit():
    return open_model(VIT)


def open_tab(at, tab: str):
    at.session_state["image_tab"] = tab
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_every_tab_draws_the_models_numbers(page, vit):
    at = page("images.py", image_digit=10)
    trace = trace_image(vit, held_out().images[10])
    classes = chart_titled(at, "Class probabilities")[0]
    assert list(classes["x"]) == list("0123456789")
    np.testing.assert_allclose(classes["y"][int(trace.output_text)], trace.steps[0].chosen_prob, atol=1e-6)
    at.session_state["image_one_layer"], at.session_state["image_one_head"] = 3, 1
    at.run()
    over = chart_titled(at, "Layer 3, head 1")[0]["z"]
    row = trace.pattern("encoder")[3, 1, 0, 1:].reshape(4, 4)
    np.testing.assert_allclose(np.asarray(over, dtype=float), np.kron(row, np.ones((2, 2))), atol=1e-6)
    drawn = [chart_titled(open_tab(at, tab), title) for tab, title in [
        ("Every head", "every layer and head"), ("Rollout", "Rollout"),
        ("Positions", "Position embedding similarity"), ("Q, K, V", "q"),
        ("Accuracy", "Head importance")]]
    rollout = attention_rollout(trace.pattern("encoder"))[-1, 0, 1:].reshape(4, 4)
    np.testing.assert_allclose(np.asarray(drawn[1][0]["z"], dtype=float), np.kron(rollout, np.ones((2, 2))), atol=1e-6)
    similarity = position_similarity(trace.positional["source"][1:], cosine=True)
    np.testing.assert_allclose(np.asarray(drawn[2][5]["z"], dtype=float).ravel(), similarity[5], atol=1e-5)
    assert len(drawn[0]) == 2 * 16            # every layer × head: weights and the digit's outline
    score = held_out_score(vit)
    assert f"{score.accuracy:.1%}" in " ".join(m.value for m in at.markdown)


@pytest.mark.slow
def test_pruned_heads_change_the_views_and_the_accuracy(page, vit):
    at = page("images.py", image_digit=10, image_pruned_heads=["enc.0.0", "enc.0.1", "enc.0.2"])
    pruned = parse_heads("enc.0.0,enc.0.1,enc.0.2", vit)
    trace = trace_image(vit, held_out().images[10], pruned)
    assert any("3 heads pruned" in info.value for info in at.info)
    at.session_state["image_one_layer"] = 2
    at.run()
    over = np.asarray(chart_titled(at, "Layer 2, head 0")[0]["z"], dtype=float)
    np.testing.assert_allclose(over[::2, ::2].ravel(), trace.pattern("encoder")[2, 0, 0, 1:], atol=1e-6)
    open_tab(at, "Accuracy")
    after = held_out_score(vit, pruned)
    assert f"**{after.accuracy:.1%}** without" in " ".join(m.value for m in at.markdown)


def test_a_drawn_digit_is_what_the_model_reads(page, vit):
    from explorer.pages.components.image_input_section import painted

    at = page("images.py", image_digit=3, image_source="draw one")
    canvas = chart_titled(at, "Drag a box over squares")[0]
    np.testing.assert_allclose(np.asarray(canvas["marker"]["color"], dtype=float), held_out().images[3].ravel())
    assert chart_titled(at, "held-out image no. 3")      # unchanged, it is still that digit
    at.button(key="image_clear").click().run()
    assert not at.exception and chart_titled(at, "your drawing")
    blank = trace_image(vit, np.zeros((8, 8), dtype=np.float32))
    classes = chart_titled(at, "Class probabilities")[0]
    assert classes["x"][int(np.argmax(np.asarray(classes["y"], dtype=float)))] == blank.output_text
    inked = painted(np.zeros((8, 8)), [0, 9, 63], "ink")
    assert inked.sum() == 3 and inked[0, 0] == inked[1, 1] == inked[7, 7] == 1
    assert painted(inked, [9], "eraser").sum() == 2


def test_with_the_image_model_in_the_sidebar_the_sentence_pages_say_so(page):
    at = page("attention.py", model="Digits ViT (digits-vit)")
    assert any("reads images, not sentences" in info.value for info in at.info)
    assert not [area for area in at.text_area if area.label == "English sentence"]
    at.switch_page("images.py")
    at.run()
    assert not at.exception and not any("bundled image model" in c.value for c in at.caption)
    assert chart_titled(at, "Class probabilities")


@pytest.mark.slow
def test_compare_leaves_the_image_model_out_and_says_so(page):
    at = page("compare.py", compare_models=["8 heads (en-de-h8)", "Digits ViT (digits-vit)",
                                            "2 heads (en-de-h2)"])
    assert any("reads images: Compare sets models of text side by side" in info.value for info in at.info)
    assert [header.value for header in at.subheader][:2] == ["8 heads (en-de-h8)", "2 heads (en-de-h2)"]


def test_the_lesson_walks_a_digit_through_the_vision_transformer(page, vit):
    from explorer.teaching.image_lesson import ImageLesson

    at = page("lesson.py", model="Digits ViT (digits-vit)", image_digit=10)
    assert "digit through a Vision Transformer" in at.title[0].value
    trace = trace_image(vit, held_out().images[10])
    lesson = ImageLesson(vit, trace)
    assert lesson.slugs[0] == "image" and lesson.slugs[-1] == "classify" and len(lesson.slugs) == 11
    focus = lesson.default_focus()                  # the lower right quarter's inkiest patch, in the last layer
    assert trace.source_tokens[focus.word][1] in "23" and trace.source_tokens[focus.word][3] in "23"
    qkv = lesson.step("qkv", focus)
    walk = lesson.walk(focus)
    assert qkv.title == "Q, K and V of one token"
    np.testing.assert_allclose([n.value for n in qkv.numbers if n.name == "q"][0], walk.q[:4], atol=1e-6)
    classify = lesson.step("classify", focus)
    assert [n.value for n in classify.numbers if n.name == "probability"][0] == f"{trace.steps[0].chosen_prob:.1%}"
    assert classify.link.page == "images.py" and qkv.link.parameters == {"section": "Q, K, V", "patch": str(focus.word)}
    at.button(key="lesson_next").click().run()
    assert not at.exception and "Step 2 of 11" in at.subheader[0].value
    assert "patch" in " ".join(m.value for m in at.markdown)


def test_a_hugging_face_vit_folder_opens_on_the_images_page(page, tmp_path):
    import torch
    import transformers

    from explorer.pages.components.session import OWN

    torch.manual_seed(2)
    config = transformers.ViTConfig(image_size=8, patch_size=2, num_channels=1, hidden_size=16, num_hidden_layers=2,
                                    num_attention_heads=4, intermediate_size=32, num_labels=10)
    transformers.ViTForImageClassification(config).save_pretrained(tmp_path)
    at = page("images.py", model=OWN, own_model=str(tmp_path), image_digit=4)
    model = open_model(tmp_path)
    trace = trace_image(model, held_out().images[4])
    classes = chart_titled(at, "Class probabilities")[0]
    np.testing.assert_allclose(np.asarray(classes["y"], dtype=float),
                               [trace.steps[0].top_probs[trace.steps[0].top_tokens.index(name)] for name in classes["x"]],
                               atol=1e-6)
    assert not any("bundled image model" in c.value for c in at.caption)
    open_tab(at, "Positions")
    assert any("cannot read them apart" in info.value for info in at.info)        # its positions: a parameter
    lesson = page("lesson.py", model=OWN, own_model=str(tmp_path), image_digit=4)     # the Lesson, without that step
    assert "Step 1 of 10" in lesson.subheader[0].value
