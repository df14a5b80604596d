"""The Lesson: the person's own sentence walked through the Transformer in a lecture's order, one step at a time.

sentence → pieces → embedding + position → Q, K, V of one word → q·k → ÷ √d_k → softmax → z = Σ weight × v → every
head, concatenated → W_O → the encoder's layers → the decoder's masked self-attention → encoder–decoder attention →
linear + softmax → the next word, and the loop. Each step has a short paragraph, the model's real numbers (taken
from the same trace and the same walkthrough the deep views draw, so they agree to the last digit), one small
figure, a link to the page that shows it in full, and what this model does differently from the paper.

Which steps a model gets follows from what it can do: the Q, K, V steps run on the stack that reads the input
(the encoder; a decoder-only model's decoder), the decoder's steps need a decoder, cross-attention needs
cross-attention, the output steps need decoding steps. No streamlit here: pages/lesson.py draws it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from explorer.analyses.sentence.internals import Walkthrough, default_query, qkv_walkthrough
from explorer.analyses.sentence.word_focus import PRONOUNS  # the lecture's question is where a pronoun looks: open on it
from explorer.capture.trace import Trace
from explorer.figures import lesson as figures
from explorer.models.interface import Embeds, ExplorerModel
from explorer.models.vocabulary import Kind
from explorer.teaching.lesson_lecture import block_step, how_typical, lecture_example, matrix_step, training_step
from explorer.teaching.lesson_steps import (
    PAPER,
    TITLES,
    DeepLink,
    Focus,
    Number,
    Step,
    followed,
    quoted,
    vector,
    word_mark,
)


class Lesson:
    """The steps for one model and one traced sentence."""

    paper = PAPER               # what "the paper" is: Vaswani et al.'s base model (an image lesson: ViT-Base)
    word, piece = "word", "piece"       # what the shared steps call a token (an image lesson: "token" both)
    heatmaps = "the heatmaps on the Attention page"

    def __init__(self, model: ExplorerModel, trace: Trace) -> None:
        self.model, self.trace = model, trace
        # The stack that reads the input: the encoder, or a decoder-only model's decoder.
        self.reader = Kind.ENCODER if Kind.ENCODER in trace.attention else Kind.DECODER
        self.side = self.reader.query_side
        self.words = trace.query_tokens(self.reader)

    @property
    def top_reader(self) -> str:
        """What reads the encoder's last layer, ending the Layers step's sentence."""
        if Kind.DECODER in self.trace.attention:
            return "vectors are what the decoder reads."
        if isinstance(self.model, Embeds):
            return "vectors are averaged into one vector for the whole sentence, its embedding: the model's output."
        return "vectors are what the masked-token head reads to fill in a [MASK]."

    # -- what there is to choose --------------------------------------------------------------------------------
    @property
    def slugs(self) -> list[str]:
        has = self.trace.attention
        embedded = self.side in self.trace.embeddings and self.side in self.trace.inputs
        slugs = ["sentence"] + (["embedding"] if embedded else [])
        slugs += ["qkv", "scores", "scale", "softmax", "values", "matrix", "heads", "output", "block", "layers"]
        if self.reader is Kind.ENCODER and Kind.DECODER in has and self.trace.steps:
            slugs.append("masked")
        if Kind.CROSS in has and self.trace.steps:
            slugs.append("cross")
        if self.trace.steps:
            slugs += ["probabilities", "next", "training"]
        return slugs

    def layers(self, kind: str | None = None) -> int:
        return self.model.layers(kind or self.reader)

    def default_focus(self) -> Focus:
        pronouns = [i for i, token in enumerate(self.words) if token.lstrip("▁").lower() in PRONOUNS]
        word = pronouns[0] if pronouns else default_query(self.words)
        last = self.layers() - 1
        return Focus(word, -1, last, 0, default_query(self.trace.output_tokens) if self.trace.steps else 0)

    def clamped(self, focus: Focus) -> Focus:
        """The focus made valid for this sentence and model (a link may carry one of another)."""
        def within(value: int, count: int) -> int:
            return min(max(value, 0), max(count - 1, 0))
        key = -1 if focus.key < 0 else within(focus.key, len(self.trace.key_tokens(self.reader)))
        return Focus(within(focus.word, len(self.words)), key, within(focus.layer, self.layers()),
                     within(focus.head, self.model.heads), within(focus.step, len(self.trace.steps)))

    # -- the numbers every step reads ------------------------------------------------------------------------------
    def walk(self, focus: Focus) -> Walkthrough:
        return qkv_walkthrough(self.model, self.trace, self.reader, focus.layer, focus.head, focus.word)

    def key_of(self, focus: Focus, walk: Walkthrough) -> int:
        """The key the scores are read at: the chosen one, else the one the word gives the most weight."""
        return focus.key if focus.key >= 0 else int(np.argmax(walk.weights))

    def position(self, focus: Focus) -> int:
        """The decoder position whose output chose step focus.step."""
        return self.trace.first_step_position + focus.step

    def head_name(self, focus: Focus, kind: str | None = None) -> str:
        kind = kind or self.reader
        return f"{kind}.{min(focus.layer, self.layers(kind) - 1)}.{focus.head}"

    def head_title(self, focus: Focus, kind: str | None = None) -> str:
        """The head in words, for a figure's title: "encoder layer 1, head 5" (head_name's "encoder.1.5" is the
        link's)."""
        kind, layer, head = self.head_name(focus, kind).split(".")
        return f"{kind} layer {layer}, head {head}"

    def walkthrough_link(self, focus: Focus, part: str = "Q, K, V walkthrough") -> DeepLink:
        return DeepLink("internals.py", f"Internals → {part}",
                        {"part": part, "head": self.head_name(focus), "query": str(focus.word)})

    # -- the steps --------------------------------------------------------------------------------------------------
    def step(self, slug: str, focus: Focus) -> Step:
        focus = self.clamped(focus)
        step = getattr(self, f"_{slug}")(focus)
        step.slug, step.title = slug, TITLES[slug]
        if step.link is not None:       # the deep view opens on what the lesson follows, whatever page it is
            step.link = replace(step.link, parameters={**followed(self.words, focus, self.head_name(focus)),
                                                        **step.link.parameters})
        return step

    def _sentence(self, focus: Focus) -> Step:
        trace, tokens = self.trace, self.words
        ids = trace.ids(self.side)
        text = (f"The model never sees letters or whole words: its tokenizer cuts {quoted(trace.text)} into "
                f"**{len(tokens)} pieces** from a vocabulary it learned, and each piece becomes a number (its id). "
                f"Frequent words are one piece; rare ones are split, and punctuation is a piece of its own. "
                f"{word_mark(self.words)} Every step below follows the word {quoted(tokens[focus.word])} "
                "(the “Word to follow” box chooses another).")
        if ids and ids[-1] == self.model.end_id:
            text += f" The last piece, {quoted(tokens[-1])}, marks the end of the sentence."
        numbers = [Number("words", "words typed", len(trace.text.split())), Number("pieces", "pieces", len(tokens)),
                   Number("word_id", f"id of {tokens[focus.word]}", int(ids[focus.word]))]
        return Step("", "", text, numbers, tokens=tokens, marked=focus.word,
                    link=DeepLink("translation.py", "Translation → its tokens"))

    def _embedding(self, focus: Focus) -> Step:
        trace, model, word = self.trace, self.model, focus.word
        embedded, summed = trace.embeddings[self.side][word], trace.inputs[self.side][word]
        positional = trace.positional.get(self.side)
        first, added, total = model.architecture.embedding_steps
        scaled = (f" The table's values are small, so they are multiplied by √d_model = {np.sqrt(model.d_model):.0f}, "
                  "as in the paper." if "√d_model" in first else "")
        text = (f"Each piece's id picks a row of a learned table: a vector of d_model = {model.d_model} numbers "
                f"({first}).{scaled} Attention itself ignores order, so the model adds where the piece stands ({added}); "
                f"the sum is what layer 0 reads ({total}). Shown: the first values for {quoted(self.words[word])}, "
                f"position {word}.")
        numbers = [Number("embedding", first, vector(embedded))]
        if positional is not None:
            numbers.append(Number("positional", added.lstrip("+ "), vector(positional[word])))
        numbers.append(Number("input", total.lstrip("= "), vector(summed)))
        rows = {first: embedded, added: positional[word] if positional is not None else None, total: summed}
        differs = (f"The paper's vectors have {self.paper['d_model']} numbers; this model's {model.d_model}."
                   if model.d_model != self.paper["d_model"] else "")
        return Step("", "", text, numbers, figures.vector_rows({k: v for k, v in rows.items() if v is not None},
                                                              f"{self.words[word]}: the first 32 of {model.d_model} values"),
                    link=DeepLink("internals.py", "Internals → Positions", {"part": "Positions"}), differs=differs)

    def _qkv(self, focus: Focus) -> Step:
        walk, model = self.walk(focus), self.model
        word = self.words[focus.word]
        norm = {"pre": "normalised first (this model puts layer norm before each sublayer) and ",
                "post": ""}.get(model.architecture.norm_placement, "")
        earlier = {1: "layer 0", 2: "layers 0 and 1"}.get(focus.layer, f"layers 0 to {focus.layer - 1}")
        before = ("" if focus.layer == 0 else
                  f"The steps look into {self.reader} layer {focus.layer} (the Layer box picks another): the vector "
                  f"that reaches it is the one the embedding step made, after {earlier} added what attention and the "
                  f"feed-forward network found in the sentence (the Layers step shows them all). ")
        text = (f"{before}In {self.reader} layer {focus.layer}, head {focus.head}, the {self.word}'s vector is {norm}"
                f"multiplied by three learned matrices: its **query** q (what it looks for), its **key** k (what it offers to "
                f"others' queries) and its **value** v (what it passes on). Each has d_k = {model.d_k} numbers. "
                f"Every {self.piece} gets its own q, k and v the same way.")
        own = focus.word if focus.word < len(walk.keys) else 0
        numbers = [Number("q", f"q of {word}", vector(walk.q)), Number("k", f"k of {word}", vector(walk.keys[own])),
                   Number("v", f"v of {word}", vector(walk.values[own])), Number("d_k", "d_k", model.d_k)]
        rows = {"q": walk.q, "k": walk.keys[own], "v": walk.values[own]}
        return Step("", "", text, numbers, figures.vector_rows(rows, f"{word}: q, k, v in {self.reader} layer "
                                                                     f"{focus.layer}, head {focus.head}"),
                    link=self.walkthrough_link(focus), differs=self.d_k_difference())

    def _scores(self, focus: Focus) -> Step:
        walk = self.walk(focus)
        key = self.key_of(focus, walk)
        keys, word = self.trace.key_tokens(self.reader), self.words[focus.word]
        text = (f"How well does each {self.piece}'s key match {quoted(word)}'s query? Multiply them number by number and "
                f"add up: the dot product **q · k**, one score per key. A large score means a good match. "
                f"q({quoted(word)}) · k({quoted(keys[key])}) = {walk.dots[key]:.4f}.")
        numbers = [Number("key", "key", keys[key]),
                   Number("score", f"q({word}) · k({keys[key]})", float(walk.dots[key]))]
        return Step("", "", text, numbers, figures.key_bars(walk.dots, keys, key, f"{word}: q · k for every key",
                                                            ranked_by=walk.weights),
                    link=self.walkthrough_link(focus))

    def _scale(self, focus: Focus) -> Step:
        walk, model = self.walk(focus), self.model
        key = self.key_of(focus, walk)
        keys = self.trace.key_tokens(self.reader)
        root = np.sqrt(model.d_k)
        scaled_by_root = np.isclose(walk.scaling, 1 / root)
        how = (f"divides every score by √d_k = √{model.d_k} = {root:.2f}" if scaled_by_root
               else f"multiplies every score by {walk.scaling:.4g}")
        bias = " and adds a learned bias for the key's distance from the query" if walk.biased else ""
        text = (f"The model {how}{bias}. Why: a dot product of d_k numbers grows with d_k, and large scores would "
                f"make softmax give almost all weight to one key, where learning stalls. "
                f"{walk.dots[key]:.4f} → **{walk.scaled[key]:.4f}**. {lecture_example()}")
        numbers = [Number("key", "key", keys[key]), Number("score", "q · k", float(walk.dots[key])),
                   Number("scaling", "factor (× 1/√d_k)" if scaled_by_root else "factor", float(walk.scaling)),
                   Number("scaled", "scaled score", float(walk.scaled[key]))]
        return Step("", "", text, numbers,
                    figures.key_bars(walk.scaled, keys, key, f"{self.words[focus.word]}: scaled scores",
                                     ranked_by=walk.weights),
                    link=self.walkthrough_link(focus, "Scores → softmax"), differs=self.scaling_difference(walk))

    def _softmax(self, focus: Focus) -> Step:
        walk = self.walk(focus)
        key = self.key_of(focus, walk)
        keys, word = self.trace.key_tokens(self.reader), self.words[focus.word]
        hidden = int((~np.isfinite(walk.masked)).sum())
        masked = (f" {hidden} masked keys got −∞ first, so their weight is exactly 0." if hidden else
                  f" No key is masked here: the encoder lets every {self.piece} see every other.")
        text = (f"Softmax turns the scores into weights: e^score, divided by their sum, so every weight is between 0 "
                f"and 1 and the row adds up to 1.{masked} {quoted(word)} gives **{walk.weights[key]:.1%}** of its "
                f"attention to {quoted(keys[key])}. {how_typical(self, focus, key)}This row is one row of "
                f"{self.heatmaps}.")
        numbers = [Number("key", "key", keys[key]), Number("scaled", "scaled score", float(walk.scaled[key])),
                   Number("weight", f"weight on {keys[key]}", float(walk.weights[key])),
                   Number("sum", "sum of the row", float(walk.weights.sum()))]
        return Step("", "", text, numbers, figures.key_bars(walk.weights, keys, key, f"{word}: attention weights",
                                                            percent=True),
                    link=self.walkthrough_link(focus, "Scores → softmax"))

    def _values(self, focus: Focus) -> Step:
        walk = self.walk(focus)
        keys, word = self.trace.key_tokens(self.reader), self.words[focus.word]
        top = np.argsort(walk.weights)[::-1][:3]
        mix = " + ".join(f"{walk.weights[i]:.0%} of the v of {quoted(keys[i])}" for i in top)
        text = (f"The head's output for {quoted(word)} is the values mixed by those weights: **z = Σ weight × v**. "
                f"z has d_k = {self.model.d_k} numbers: {mix}, and so on. Keys with high weight shape z; the rest "
                "barely count.")
        numbers = [Number("z", "z (first values)", vector(walk.z)), Number("size", "numbers in z", len(walk.z))]
        rows = {f"{walk.weights[i]:.0%} × v of {keys[i]}": walk.weighted_values[i] for i in top}
        rows["z = the sum over every key"] = walk.z
        return Step("", "", text, numbers, figures.vector_rows(rows, f"{word}: weight × v, summed"),
                    link=self.walkthrough_link(focus))

    def _matrix(self, focus: Focus) -> Step:
        return matrix_step(self, focus)

    def _training(self, focus: Focus) -> Step:
        return training_step(self, focus)

    def _block(self, focus: Focus) -> Step:
        return block_step(self, focus)

    def _heads(self, focus: Focus) -> Step:
        walk, model = self.walk(focus), self.model
        keys, word = self.trace.key_tokens(self.reader), self.words[focus.word]
        rows = self.trace.pattern(self.reader)[focus.layer, :, focus.word]
        favourites = [int(np.argmax(row)) for row in rows]
        text = (f"A layer has {model.heads} heads, each with its own W_Q, W_K and W_V, so each looks for something "
                f"else (the boxes say where each looks most). Their z's are put side by side: {model.heads} × "
                f"{model.d_k} = **{len(walk.concatenated)} numbers** for {quoted(word)}, the concatenation that W_O "
                f"reads in the next step. In the figure, each row is one head's z, in the order they are concatenated.")
        numbers = [Number(f"head_{h}", f"head {h} looks most at",
                          f"{keys[favourites[h]]} ({rows[h, favourites[h]]:.1%})") for h in range(model.heads)]
        numbers.append(Number("concatenated", "numbers concatenated", len(walk.concatenated)))
        differs = (f"The paper has {self.paper['heads']} heads of d_k {self.paper['d_k']}; this model has {model.heads} of "
                   f"d_k {model.d_k}." if (model.heads, model.d_k) != (self.paper["heads"], self.paper["d_k"]) else "")
        z = np.asarray(walk.concatenated).reshape(model.heads, -1)
        figure = figures.vector_rows({f"head {h}'s z{' (followed)' if h == focus.head else ''}": z[h]
                                      for h in range(model.heads)},
                                     f"{word}: every head's z in {self.reader} layer {focus.layer}, concatenated")
        return Step("", "", text, numbers, figure,
                    link=DeepLink("attention.py", "Attention → every head",
                                  {"view": "Every head", "head": self.head_name(focus)}), differs=differs)

    def _output(self, focus: Focus) -> Step:
        walk, model = self.walk(focus), self.model
        word = self.words[focus.word]
        added = f"It is added to the {self.word}'s vector (the residual connection)"
        residual = {"pre": f"{added}; layer norm comes before the next sublayer.",
                    "post": f"{added} and the sum is normalised."}.get(model.architecture.norm_placement, f"{added}.")
        text = (f"One more learned matrix, **W_O**, turns the {len(walk.concatenated)} concatenated numbers back into "
                f"d_model = {len(walk.output)} (+ a bias): the attention block's output for {quoted(word)}. "
                f"{residual} Then a feed-forward network works on each {self.piece} alone.")
        numbers = [Number("output", "concat × W_O + bias (first values)", vector(walk.output)),
                   Number("size", "numbers out", len(walk.output))]
        rows = {f"concatenated z ({len(walk.concatenated)} numbers)": walk.concatenated,
                f"× W_O + bias = the block's output ({len(walk.output)})": walk.output}
        return Step("", "", text, numbers, figures.vector_rows(rows, f"{word}: the concatenation through W_O"),
                    link=self.walkthrough_link(focus), differs=self.norm_difference())

    def _layers(self, focus: Focus) -> Step:
        layers = self.layers()
        keys, word = self.trace.key_tokens(self.reader), self.words[focus.word]
        averaged = self.trace.pattern(self.reader)[:, :, focus.word].mean(axis=1)       # [layers, keys]
        favourites = [int(np.argmax(row)) for row in averaged]
        text = (f"Attention + feed-forward make one layer; the {self.reader} stacks {layers} of them, each reading "
                f"the one before (counted from 0: layers 0 to {layers - 1}). Each layer's heads look at different {self.word}s: "
                f"in the figure, {quoted(word)}'s attention averaged over the heads, one column per layer. The last layer's "
                f"{self.top_reader}"
                if self.reader is Kind.ENCODER else
                f"Attention + feed-forward make one layer; the model stacks {layers} of them.")
        numbers = [Number(f"layer_{layer}", f"layer {layer} looks most at",
                          f"{keys[favourites[layer]]} ({averaged[layer, favourites[layer]]:.1%})")
                   for layer in range(layers)]
        differs = (f"The paper stacks {self.paper['layers']} layers; this model has {layers}."
                   if layers != self.paper["layers"] else "")
        return Step("", "", text, numbers, figures.layers_by_key(averaged, keys, f"{word}: the heads' average, "
                                                                                  "layer by layer"),
                    link=DeepLink("attention.py", "Attention → every head",
                                  {"view": "Every head", "head": self.head_name(focus)}), differs=differs)

    def _masked(self, focus: Focus) -> Step:
        trace = self.trace
        layer = min(focus.layer, self.layers("decoder") - 1)
        position = self.position(focus)
        tokens = trace.target_tokens
        pattern = trace.pattern("decoder")[layer, focus.head]
        visible = int(trace.masks["decoder"][position].sum())
        future = float(pattern[position, position + 1:].sum())
        chosen = trace.steps[focus.step].chosen
        text = (f"The decoder writes the {trace.output_title} one piece at a time, reading what it wrote so far. "
                f"Its self-attention is **masked**: position i may look at positions ≤ i only, never at a word not "
                f"yet written (in training, where the whole target is fed at once, the mask keeps it from reading "
                f"the answer). The decoder's input is <s> and the pieces written so far, so output step "
                f"{focus.step} ({quoted(chosen)}) is predicted at input position {position}, which holds the piece "
                f"before it, {quoted(tokens[position])}: it sees {visible} of {len(tokens)} positions, and its weight "
                f"on later positions is {future:.0f}.")
        numbers = [Number("position", "decoder position", position), Number("visible", "keys it may see", visible),
                   Number("future", "weight on later positions", future)]
        return Step("", "", text, numbers, figures.masked_window(pattern, trace.masks["decoder"], tokens, position,
                                                                 f"decoder layer {layer}, head {focus.head}: "
                                                                 "masked self-attention"),
                    link=DeepLink("internals.py", "Internals → Masks",
                                  {"part": "Masks", "head": f"decoder.{layer}.{focus.head}"}))

    def _cross(self, focus: Focus) -> Step:
        trace = self.trace
        layer = min(focus.layer, self.layers("cross") - 1)
        position = self.position(focus)
        row = trace.pattern("cross")[layer, focus.head, position]
        keys = trace.key_tokens("cross")
        top = int(np.argmax(row))
        chosen = trace.steps[focus.step].chosen
        text = (f"Now the decoder asks the encoder. In encoder–decoder (cross) attention the queries come from the "
                f"decoder and the keys and values from the encoder's last layer: the same q · k, ÷ √d_k, softmax, "
                f"Σ weight × v as before, over the English pieces. At step {focus.step}, before choosing "
                f"{quoted(chosen)}, layer {layer}'s head {focus.head} gives **{row[top]:.1%}** to "
                f"{quoted(keys[top])}.")
        numbers = [Number("position", "decoder position", position), Number("source", "looks most at", keys[top]),
                   Number("weight", "its weight", float(row[top]))]
        return Step("", "", text, numbers, figures.key_bars(row, keys, top, f"step {focus.step}: cross-attention "
                                                                             "over the source pieces",
                                                            percent=True),
                    link=DeepLink("attention.py", "Attention → this cross-attention head",
                                  {"head": f"cross.{layer}.{focus.head}"}))

    def _probabilities(self, focus: Focus) -> Step:
        step = self.trace.steps[focus.step]
        text = (f"After its last layer the decoder's vector at position {self.position(focus)} is multiplied by the "
                f"output matrix: one score (logit) per piece of the vocabulary. Softmax makes them probabilities. "
                f"At step {focus.step} the model gives {quoted(step.chosen)} **{step.chosen_prob:.1%}**.")
        numbers = [Number("chosen", "chosen piece", step.chosen),
                   Number("probability", f"probability of {step.chosen}", float(step.chosen_prob)),
                   Number("runner_up", "next best", f"{step.top_tokens[1]} ({step.top_probs[1]:.1%})"
                          if len(step.top_tokens) > 1 and step.top_tokens[0] == step.chosen else
                          f"{step.top_tokens[0]} ({step.top_probs[0]:.1%})")]
        return Step("", "", text, numbers, figures.probability_bars(step.top_tokens, step.top_probs, step.chosen,
                                                                    f"step {focus.step}: the top "
                                                                    f"{len(step.top_tokens)} of the vocabulary"),
                    link=DeepLink("decoding.py", "Decoding → this step", {"step": str(focus.step)}))

    def _next(self, focus: Focus) -> Step:
        trace = self.trace
        step = trace.steps[focus.step]
        how = ("Greedy decoding takes the most probable piece" if trace.decoding == "greedy" else
               f"Beam search ({trace.decoding}) keeps the best few partial outputs and takes the best whole one")
        last = focus.step == len(trace.steps) - 1
        ends = (f" {quoted(step.chosen)} ends the output." if last and step.chosen_id == self.model.end_id else
                " The loop goes on until the model chooses the end piece or reaches its step limit.")
        best = step.top_tokens[0] if step.top_tokens else step.chosen
        why = ""
        if best != step.chosen:     # beam search took a less probable piece here: say why
            why = (f" Not {quoted(best)}, though it had more probability at this step ({step.top_probs[0]:.1%} against "
                   f"{step.chosen_prob:.1%}): the whole output through {quoted(step.chosen)} has the best total "
                   "log-probability (length-normalised) of the partial outputs beam search kept.")
        text = (f"{how}: {quoted(step.chosen)}.{why} It is appended to the decoder's input, and the decoder runs "
                f"again, with it as its newest input, for output step {focus.step + 1}; the encoder's output is reused, "
                f"unchanged.{ends}")
        numbers = [Number("step", "step", focus.step), Number("chosen", "chosen piece", step.chosen),
                   Number("steps", "steps in all", len(trace.steps)), Number("output", trace.output_title,
                                                                             trace.output_text)]
        return Step("", "", text, numbers, tokens=trace.output_tokens, marked=focus.step,
                    link=DeepLink("decoding.py", "Decoding → step by step", {"step": str(focus.step)}))

    # -- where this model differs from the paper ---------------------------------------------------------------
    def d_k_difference(self) -> str:
        d_k = self.model.d_k
        return (f"The paper's d_k is {self.paper['d_k']} ({self.paper['d_model']} ÷ {self.paper['heads']} heads); "
                f"this model's is {d_k} ({self.model.d_model} ÷ {self.model.heads}).") if d_k != self.paper["d_k"] else ""

    def scaling_difference(self, walk: Walkthrough) -> str:
        d_k = self.model.d_k
        if not np.isclose(walk.scaling, d_k ** -0.5):
            return ("This model does not divide by √d_k (its training folded the scale into its weights); the "
                    "paper does.")
        if d_k == self.paper["d_k"]:
            return ""
        return (f"This model's d_k is {d_k}, so ÷ {np.sqrt(d_k):.2f}; the paper's d_k {self.paper['d_k']} gives "
                f"÷ {np.sqrt(self.paper['d_k']):.0f}.")

    def norm_difference(self) -> str:
        if self.model.architecture.norm_placement == "pre":
            return ("Pre-norm: this model normalises each sublayer's input (x + Sublayer(LayerNorm(x))); the paper "
                    "normalises after the residual sum (LayerNorm(x + Sublayer(x))). Pre-norm trains more stably.")
        return ""
