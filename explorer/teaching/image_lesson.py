"""The Lesson for an image: a digit walked through a Vision Transformer in the lecture's order. The image is cut into
patches (the tokens), each patch's pixels are embedded and its place added, and then the attention steps are the
sentence lesson's own, with the model's real numbers: q, k and v of one patch, q·k, ÷ √d_k, softmax, z, every
head, W_O, the layers. At the top the class token, which has read every patch, names the digit.

It opens on a patch in the lower right with ink in it, the lecture's example: that patch "can see everything you
can see", and layer by layer it gathers what part of which digit it is. Its "paper" is ViT-Base (Dosovitskiy et
al. 2021), and every deep link goes to the Images page.
"""

from __future__ import annotations

from explorer.capture.input_kinds import IMAGE, input_kind
from explorer.figures import lesson as figures
from explorer.figures.image import (
    attention_over_image,
    class_probabilities,
    digit_figure,
    grid_of,
    mark_patch,
    token_name,
)
from explorer.teaching.lesson import Lesson
from explorer.teaching.lesson_steps import VIT_BASE, DeepLink, Focus, Number, Step, vector

IMAGES = "images.py"
# Each shared step's deep view on the Images page (its tab).
SECTIONS = {"embedding": "Positions", "qkv": "Q, K, V", "scores": "Q, K, V", "scale": "Q, K, V",
            "softmax": "One head", "values": "Q, K, V", "heads": "Every head", "output": "Q, K, V",
            "layers": "Every head", "classify": "Rollout", "image": None}
IMAGE_TITLES = {"embedding": "Patch embedding + learned position", "qkv": "Q, K and V of one token"}


class ImageLesson(Lesson):
    """The steps for an image model and one traced image."""

    paper = VIT_BASE
    word = piece = "token"
    top_reader = "class token's vector is all the classifier reads."
    heatmaps = "what the Images page's One head tab draws over the digit"

    def __init__(self, model, trace, label: str | None = None) -> None:
        super().__init__(model, trace)
        self.label = label              # the digit's own label, when it is a held-out one

    @property
    def slugs(self) -> list[str]:
        # a Hugging Face ViT adds its positions inside one module: no embedding rows to show apart
        embedded = "source" in self.trace.embeddings and "source" in self.trace.positional
        return ["image", *(["embedding"] if embedded else []), "qkv", "scores", "scale", "softmax", "values", "heads",
                "output", "layers", "classify"]

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
        section = SECTIONS[slug]
        shown.link = section and DeepLink(IMAGES, f"Images → {section}",
                                          {"section": section, "patch": str(self.clamped(focus).word)})
        return shown

    def _image(self, focus: Focus) -> Step:
        trace = self.trace
        rows, columns = grid_of(trace)
        height, width = trace.image.shape
        size = height // rows
        text = (f"A Vision Transformer does not read the picture pixel by pixel: it cuts the {height} × {width} image "
                f"into **{rows * columns} patches** of {size} × {size} pixels, row by row, and each patch becomes one "
                "token, as a word does in a sentence (the paper's title: \"an image is worth 16 × 16 words\"). All "
                "tokens are read at once: from the first layer any patch may attend to any other. Before them it puts "
                "a learned **class token** ([CLS]): at the top, it alone names the digit. Every step below follows "
                f"{token_name(trace, focus.word)}" + (f" (row {(focus.word - 1) // columns}, column "
                                                      f"{(focus.word - 1) % columns}, counted from 0 at the top left; "
                                                      "framed in red)" if focus.word else "")
                + "; the “Token to follow” box chooses another.")
        figure = digit_figure(trace.image, f"{trace.text}: {rows * columns} patches of {size} × {size}")
        edge = dict(color="#1f77b4", width=1)
        for line in range(1, rows):          # the patches' borders, within the image
            figure.add_shape(type="line", x0=-0.5, x1=width - 0.5, y0=line * size - 0.5, y1=line * size - 0.5, line=edge)
        for line in range(1, columns):
            figure.add_shape(type="line", y0=-0.5, y1=height - 0.5, x0=line * size - 0.5, x1=line * size - 0.5, line=edge)
        figure.add_shape(type="rect", x0=-0.5, x1=width - 0.5, y0=-0.5, y1=height - 0.5, line=edge)    # the paper's edge
        mark_patch(figure, trace, focus.word, colour="#d62728")
        numbers = [Number("pixels", "pixels", height * width), Number("patches", "patches", rows * columns),
                   Number("tokens", "tokens (with the class token)", len(trace.source_tokens))]
        paper_patch = self.paper["patch"]
        differs = (f"The ViT paper cuts a {self.paper['image']} × {self.paper['image']} photograph into "
                   f"{(self.paper['image'] // paper_patch) ** 2} patches of {paper_patch} × {paper_patch} × 3 colours "
                   f"= {paper_patch ** 2 * 3} numbers each, projected to {self.paper['d_model']}; this model reads "
                   f"{height} × {width} grey digits in {size} × {size} patches of {size * size} numbers, projected to "
                   f"{self.model.d_model}. The paper pre-trains on 14 to 300 million images, because a ViT has few of "
                   "a convolutional network's built-in assumptions about images; this model learned from 1,437 "
                   "small digits.")
        return Step("", "", text, numbers, figure, differs=differs)

    def _embedding(self, focus: Focus) -> Step:
        trace, model, token = self.trace, self.model, focus.word
        embedded, summed = trace.embeddings["source"][token], trace.inputs["source"][token]
        positional = trace.positional["source"][token]
        what = ("The class token is itself a learned vector" if token == 0 else
                f"The patch's {model.patch_size ** 2} pixels, "
                f"in a row, are multiplied by a learned matrix")
        text = (f"{what}: d_model = {model.d_model} numbers. Attention itself ignores where a token is, so the "
                "model adds a learned position vector, one per token number (0 for the class token, then 1 to "
                f"{len(trace.source_tokens) - 1} for the patches row by row); the sum is what layer 0 reads. Shown: "
                f"the first values for {token_name(trace, token)}.")
        rows = {"patch embedding": embedded, "+ learned position": positional, "= input to layer 0": summed}
        numbers = [Number("embedding", "embedding", vector(embedded)),
                   Number("positional", "learned position", vector(positional)),
                   Number("input", "input to layer 0", vector(summed))]
        differs = ("As in the paper, the position table is one-dimensional: one learned vector per token number. "
                   "The model is never told a patch's row and column; it must learn the layout (Images → "
                   "Positions shows how much it did). " + (f"ViT-Base's vectors have {self.paper['d_model']} numbers; "
                                                           f"this model's {model.d_model}."
                                                           if model.d_model != self.paper["d_model"] else ""))
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
        if self.label is not None and self.label != step.chosen:
            given = dict(zip(step.top_tokens, step.top_probs)).get(self.label, 0.0)
            errors = (self.model.info.get("scores") or {}).get("held_out_errors")
            text += (f" This digit is labelled **{self.label}**: the model is wrong here, giving {self.label} "
                     f"{given:.1%}." + (f" It gets {errors} of the held-out digits wrong; looking at one is a good "
                                        "lesson." if errors else ""))
        numbers = [Number("chosen", "class", step.chosen), Number("probability", "its probability",
                                                                  f"{step.chosen_prob:.1%}"),
                   Number("runner_up", "next best", f"{runner_up[1]} ({runner_up[0]:.1%})")]
        differs = ("The paper's classifier is a small network with one hidden layer while pre-training and a single "
                   "linear layer when fine-tuned; this model uses one linear layer.")
        return Step("", "", text, numbers, class_probabilities(self.trace, self.label), differs=differs)

    def norm_difference(self) -> str:
        placement = self.model.architecture.norm_placement
        if placement == "pre":
            return ""           # pre-norm, as in the ViT paper
        where = "after the residual sum (post-norm)" if placement == "post" else "where its family does not say"
        return f"This model normalises {where}; the ViT paper normalises each sublayer's input (pre-norm)."


def lesson_for(model, trace, label: str | None = None) -> Lesson:
    """The Lesson that fits the trace: an image's (with its label, when known), or a sentence's."""
    return ImageLesson(model, trace, label) if input_kind(model) is IMAGE else Lesson(model, trace)
