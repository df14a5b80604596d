"""The lecture's steps beyond one query's arithmetic, with the model's own numbers: the whole head as matrices,
softmax(QKᵀ/√d_k)·V, and training, the one-hot target against the predicted distribution and its cross-entropy.
Each is a function of the Lesson (explorer/teaching/lesson.py) and a focus, so that the lesson module stays one
walk through the model.

The lecture's own worked example (Alammar, "The Illustrated Transformer", d_k = 64): two scores 112 and 96, ÷ √64 =
8 → 14 and 12, softmax → 0.88 and 0.12. The score, scale and softmax steps set it beside the model's numbers."""

from __future__ import annotations

import math

import numpy as np
import torch

from explorer.figures import lesson as figures
from explorer.models.vocabulary import Side, layer_hook
from explorer.teaching.lesson_steps import DeepLink, Focus, Number, Step, quoted

LECTURE_SCORES = (112.0, 96.0)
LECTURE_D_K = 64


def lecture_example() -> str:
    """The lecture's two scores through ÷ √d_k and softmax, computed (not copied): 0.88 and 0.12."""
    root = math.sqrt(LECTURE_D_K)
    scaled = [score / root for score in LECTURE_SCORES]
    exponentials = [math.exp(value - max(scaled)) for value in scaled]
    weights = [value / sum(exponentials) for value in exponentials]
    return (f"The lecture's example: scores {LECTURE_SCORES[0]:g} and {LECTURE_SCORES[1]:g}, ÷ √{LECTURE_D_K} = "
            f"{root:g} → {scaled[0]:g} and {scaled[1]:g}, softmax → {weights[0]:.2f} and {weights[1]:.2f}.")


def matrix_step(lesson, focus: Focus) -> Step:
    """Every query at once: Z = softmax(QKᵀ/√d_k)·V, the same numbers as the steps before, as matrices."""
    values = lesson.trace.attention[lesson.reader]
    q, k, v = (values.value(name)[focus.layer, focus.head] for name in ("q", "k", "v"))
    weights = values.pattern[focus.layer, focus.head]
    z = weights @ v
    queries, keys = lesson.words, lesson.trace.key_tokens(lesson.reader)
    word = queries[focus.word]
    text = (f"The steps so far followed one row. A head does every {lesson.word} at once, with matrices: Q holds every "
            f"query as a row ({q.shape[0]} × {q.shape[1]}), Kᵀ every key as a column; QKᵀ/√d_k is every score; "
            f"softmax, row by row, gives the weights ({weights.shape[0]} × {weights.shape[1]}); times V, every z. "
            f"**Z = softmax(QKᵀ/√d_k)·V.** Row {focus.word} ({quoted(word)}) of each matrix is what the steps "
            "before computed for it.")
    walk = lesson.walk(focus)
    numbers = [Number("shape_q", "Q", f"{q.shape[0]} × {q.shape[1]}"),
               Number("shape_weights", "softmax(QKᵀ/√d_k)", f"{weights.shape[0]} × {weights.shape[1]}"),
               Number("shape_z", "Z", f"{z.shape[0]} × {z.shape[1]}"),
               Number("same_z", f"row {focus.word} of Z = the z step's", "yes" if np.allclose(z[focus.word], walk.z,
                                                                                   atol=1e-5) else "no")]
    figure = figures.matrix_form(q, k.T, weights, v, z, queries, keys, focus.word,
                                 f"{lesson.head_title(focus)}: Q, Kᵀ, the weights, V and Z for every {lesson.piece}")
    return Step("", "", text, numbers, figure, link=lesson.walkthrough_link(focus))


def training_step(lesson, focus: Focus) -> Step:
    """Training: the target is a one-hot vector, and the loss is −ln of the probability the model gives it."""
    trace = lesson.trace
    step = trace.steps[focus.step]
    losses = [-math.log(max(s.chosen_prob, 1e-12)) for s in trace.steps]
    loss = losses[focus.step]
    text = (f"How the model learned all this: in training, the decoder reads the reference translation (teacher "
            f"forcing) and at every step its predicted probabilities are compared with the right next {lesson.piece} "
            f"as a **one-hot** vector: 1 at that piece, 0 for the rest of the vocabulary. The **cross-entropy** is "
            f"−ln of the probability given to the right piece. Here the model's own translation stands in for a "
            f"reference: at step {focus.step} it gave {quoted(step.chosen)} {step.chosen_prob:.1%}, a loss of "
            f"−ln {step.chosen_prob:.3f} = **{loss:.3f} nats**. Training moves every weight a little so as to lower "
            f"the mean over the sentence, here {np.mean(losses):.3f} nats.")
    numbers = [Number("target", "one-hot target", step.chosen),
               Number("probability", f"predicted probability of {step.chosen}", float(step.chosen_prob)),
               Number("loss", "cross-entropy at this step (nats)", float(loss)),
               Number("mean_loss", f"mean over the {len(losses)} steps (nats)", float(np.mean(losses)))]
    figure = figures.one_hot_bars(step.top_tokens, step.top_probs, step.chosen,
                                  f"step {focus.step}: predicted probabilities and the one-hot target")
    return Step("", "", text, numbers, figure,
                link=DeepLink("decoding.py", "Decoding → teacher forcing",
                              {"step": str(focus.step), "decoding_part": "Teacher forcing"}))


def how_typical(lesson, focus: Focus, key: int) -> str:
    """How many of the stack's heads give this key the most weight from the followed word: one head's step is
    read as the model's only when most heads agree ("1 of 24 heads does this")."""
    rows = lesson.trace.pattern(lesson.reader)[:, :, focus.word]            # [layers, heads, keys]
    agreeing = int((rows.argmax(-1) == key).sum())
    total = rows.shape[0] * rows.shape[1]
    keys = lesson.trace.key_tokens(lesson.reader)
    return (f"{agreeing} of {total} heads of the {lesson.reader} {'gives' if agreeing == 1 else 'give'} "
            f"{quoted(keys[key])} the most weight from "
            f"{quoted(lesson.words[focus.word])}{': this head is typical' if agreeing > total / 2 else ''}. ")


def block_step(lesson, focus: Focus) -> Step:
    """The rest of a layer, with the model's own vectors for the followed word: what enters the layer (the residual
    stream), what attention adds to it, what the feed-forward network adds, and what leaves it. Pre-norm, the rows
    add up exactly (the stream is never normalised, only what each branch reads); post-norm, each sum is normalised,
    and the normalised vectors are drawn after the sums."""
    model, trace, stack = lesson.model, lesson.trace, lesson.reader
    ids = trace.ids(stack.query_side)
    names = {value: layer_hook(stack, focus.layer, value) for value in ("resid_pre", "resid_mid", "mlp_out",
                                                                           "resid_post")}
    batch = {stack.query_side: model.pad([ids])}          # what the stack reads: the source, or the target
    with torch.no_grad():
        _, cache = model.run_with_cache(batch.get(Side.SOURCE), batch.get(Side.TARGET), list(names.values()))
    entering, middle, feed_forward, leaving = (cache[name][0, focus.word].float().cpu().numpy()
                                               for name in names.values())
    attention = lesson.walk(focus).output               # the attention block's output, W_O's (the step before)
    word = lesson.words[focus.word]
    length = {name: float(np.linalg.norm(vector)) for name, vector in
              (("entering", entering), ("attention", attention), ("feed_forward", feed_forward), ("leaving", leaving))}
    cosine = float(entering @ leaving / max(length["entering"] * length["leaving"], 1e-12))
    post = model.architecture.norm_placement == "post"
    if post:
        order = ("each sublayer is added, then the sum normalised: LayerNorm(x + Attention(x)), then "
                 "LayerNorm(x + FFN(x)); layer norm keeps the stream's length near the same size layer after layer")
        rows = {"entering the layer": entering, "+ attention's output": attention,
                "= after attention, normalised": middle, "+ feed-forward's output": feed_forward,
                "= leaving the layer, normalised": leaving}
    else:
        order = ("layer norm comes first inside each branch, x + Attention(LayerNorm(x)), then x + FFN(LayerNorm(x)): "
                 "it rescales what attention and the feed-forward network read, not the stream itself, so the "
                 "stream's length can grow layer after layer")
        rows = {"entering the layer": entering, "+ attention's output": attention,
                "+ feed-forward's output": feed_forward, "= leaving the layer": leaving}
    text = (f"Attention's output is not the word's new vector: it is **added** to the vector that entered the layer "
            f"(the residual connection), so what a layer adds is a change, and the word's own information flows on. "
            f"Then a **feed-forward network** (two linear maps with a non-linearity between) works on each "
            f"{lesson.piece} alone and is added the same way; **layer norm** rescales a vector to mean 0 and "
            f"variance 1 (with learned gains). This model: {order}. For {quoted(word)} in layer {focus.layer}, the "
            f"vector's length goes from {length['entering']:.2f} to {length['leaving']:.2f}; the cosine between what "
            f"entered and what left is {cosine:.2f}.")
    numbers = [Number("entering", "length entering the layer", length["entering"]),
               Number("attention", "length of attention's output", length["attention"]),
               Number("feed_forward", "length of the feed-forward's output", length["feed_forward"]),
               Number("leaving", "length leaving the layer", length["leaving"]),
               Number("cosine", "cosine, entering vs leaving", cosine)]
    if not post:
        summed = entering + attention + feed_forward
        numbers.insert(3, Number("sum", "length of entering + attention + feed-forward", float(np.linalg.norm(summed))))
    figure = figures.vector_rows(rows, f"{word}: through layer {focus.layer}")
    return Step("", "", text, numbers, figure, link=lesson.walkthrough_link(focus))
