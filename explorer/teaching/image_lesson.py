"""The Lesson for an image: a digit walked through a Vision Transformer in the lecture's order. The image is cut into
patches (the tokens), each patch's pixels are embedded and its place added, and then the attention steps are the
sentence lesson's own, with the model's real numbers: q, k and v of one patch, q·k, ÷ √d_k, softmax, z, every
head, W_O, the layers. At the top the class token, which has read every patch, names the digit.

It opens on a patch in the lower right with ink in it, the lecture's example: that patch "can see everything you
can see", and layer by layer it gathers what part of which digit it is. Its "paper" is ViT-Base (Dosovitskiy et
al. 2021), and every deep link goes to the Images page.
"""

from __future__ import annotations

from explorer.figures.image import (attention_over_image, class_probabilities, digit_figure, grid_of, mark_patch,
                                    token_name)
from explorer.teaching.lesson import Lesson
from explorer.teaching.lesson_steps import VIT_BASE, DeepLink, Focus, Number, Step, vector
from explorer.figures import lesson as figures

IMAGES = "images.py"
# Each shared step's deep view on the Images page (its tab).
SECTIONS = {"embedding": "Positions", "qkv": "Q, K, V", "scores": "Q, K, V", "scale": "Q, K, V",
            "softmax": "One head", "values": "Q, K, V", "heads": "Every head", "output": "Q, K, V",
            "layers": "Every head", "classify": "Rollout", "image": "One head"}
IMAGE_TITLES = {"embedding": "Patch embedding + learned position", "qkv": "Q, K and V of one patch"}


class ImageLesson(Lesson):
    """The steps for an image model and one traced image."""

    paper = VIT_BASE
    word = piece = "token"
    top_reader = "class token's vector is all the classifier reads."
    heatmaps = "what the Images page draws over the digit"

    @property
    def slugs(self) -> list[str]:
        return ["image", "embedding", "qkv", "scores", "scale", "softmax", "values", "heads", "output", "layers",
                "classify"]

    def default_focus(self) -> Focus:
        """A patch of the lower right quarter with the most ink (the lecture's example), in the last layer."""
        rows, columns = grid_of(self.trace)
        size = self.trace.image.shape[0] // rows
        ink = {1 + row * columns + column: float(self.trace.image[row * size:(row + 1) * size,
                                                                   column * size:(column + 1) * size].sum())
               for row in range(rows // 2, rows) for column in range(columns // 2, columns)}
        return Focus(max(ink, key=ink.get), -1, self.layers() - 1, 0, 0)

    def step(self, slug: str, focus: Focus) -> Step:
        shown = super().step(slug, focus)
        shown.title = IMAGE_TITLES.get(slug, shown.title)
        shown.link = DeepLink(IMAGES, f"Images → {SECTIONS[slug]}",
                              {"section": SECTIONS[slug], "patch": str(self.clamped(focus).word)})
        return shown

    def _image(self, focus: Focus) -> Step:
        trace = self.trace
        rows, columns = grid_of(trace)
        height, width = trace.image.shape
        size = height // rows
        text = (f"A Vision Transformer never sees the whole picture at once as a grid of pixels: it cuts the "
                f"{height} × {width} image into **{rows * columns} patches** of {size} × {size} pixels, row by row, "
                f"and each patch becomes one token, as a piece of a sentence does. Before them it puts a learned "
                f"**class token** ([CLS]): at the top, it alone names the digit. Every step below follows "
                f"{token_name(trace, focus.word)} (framed; choose another above).")
        figure = digit_figure(trace.image, f"{trace.text}: {rows * columns} patches of {size} × {size}")
        edge = dict(color="#1f77b4", width=1)
        for line in range(1, rows):          # the patches' borders, within the image
            figure.add_shape(type="line", x0=-0.5, x1=width - 0.5, y0=line * size - 0.5, y1=line * size - 0.5, line=edge)
        for line in range(1, columns):
            figure.add_shape(type="line", y0=-0.5, y1=height - 0.5, x0=line * size - 0.5, x1=line * size - 0.5, line=edge)
        figure.add_shape(type="rect", x0=-0.5, x1=width - 0.5, y0=-0.5, y1=height - 0.5, line=edge)    # the paper's edge
        mark_patch(figure, trace, focus.word, colour="#d62728")
        figure.update_traces(colorscale=[[0, "white"], [1, "black"]], selector=dict(type="heatmap"))
        numbers = [Number("pixels", "pixels", height * width), Number("patches", "patches", rows * columns),
                   Number("tokens", "tokens (with the class token)", len(trace.source_tokens))]
        differs = (f"The ViT paper cuts a {self.paper['image']} × {self.paper['image']} photograph into "
                   f"{(self.paper['image'] // self.paper['patch']) ** 2} patches of {self.paper['patch']} × "
                   f"{self.paper['patch']}; this model reads {height} × {width} digits in {size} × {size} patches.")
        return Step("", "", text, numbers, figure, differs=differs)

    def _embedding(self, focus: Focus) -> Step:
        trace, model, token = self.trace, self.model, focus.word
        embedded, summed = trace.embeddings["source"][token], trace.inputs["source"][token]
        positional = trace.positional["source"][token]
        what = ("The class token is itself a learned vector" if token == 0 else
                f"The patch's {model.patch_size ** 2} pixels, "
                f"in a row, are multiplied by a learned matrix")
        text = (f"{what}: d_model = {model.d_model} numbers. Attention itself ignores where a token is, so the "
                "model adds a learned position vector, one for each place on the grid (and one for the class "
                f"token); the sum is what layer 0 reads. Shown: the first values for {token_name(trace, token)}.")
        rows = {"patch embedding": embedded, "+ learned position": positional, "= input to layer 0": summed}
        numbers = [Number("embedding", "embedding", vector(embedded)),
                   Number("positional", "learned position", vector(positional)),
                   Number("input", "input to layer 0", vector(summed))]
        differs = (f"ViT-Base's vectors have {self.paper['d_model']} numbers; this model's {model.d_model}."
                   if model.d_model != self.paper["d_model"] else "")
        return Step("", "", text, numbers, figures.vector_rows(
            rows, f"{trace.source_tokens[token]}: the first 32 of {model.d_model} values"), differs=differs)

    def _softmax(self, focus: Focus) -> Step:
        """The sentence lesson's softmax step, its weights drawn over the digit: the image is the key axis."""
        shown = super()._softmax(focus)
        shown.figure = attention_over_image(self.trace, focus.layer, focus.head, focus.word)
        return shown

    def _classify(self, focus: Focus) -> Step:
        step = self.trace.steps[0]
        runner_up = max((p, name) for name, p in zip(step.top_tokens, step.top_probs) if name != step.chosen)
        text = ("After the last layer, the class token's vector (layer-normed) is multiplied by one more learned "
                "matrix: one score (logit) per class. Softmax makes them probabilities, and the most probable class "
                f"is the model's answer: **{step.chosen}**, with **{step.chosen_prob:.1%}**. Only the class token is "
                "read; what it knows of the patches came to it through attention, layer by layer.")
        numbers = [Number("chosen", "class", step.chosen), Number("probability", "its probability",
                                                                  float(step.chosen_prob)),
                   Number("runner_up", "next best", f"{runner_up[1]} ({runner_up[0]:.1%})")]
        return Step("", "", text, numbers, class_probabilities(self.trace))

    def norm_difference(self) -> str:
        return ("" if self.model.architecture.norm_placement == "pre" else
                "The ViT paper normalises each sublayer's input (pre-norm); this model does not say where its layer "
                "norm sits.")


def lesson_for(model, trace) -> Lesson:
    """The Lesson that fits the trace: an image's, or a sentence's."""
    return ImageLesson(model, trace) if trace.image is not None else Lesson(model, trace)
