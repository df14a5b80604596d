"""The glossary's terms and their definitions, in plain words for a student fresh from a lecture on "Attention Is
All You Need" (Vaswani et al. 2017): data only. explorer/teaching/glossary.py orders them and looks them up; a new
term is one entry here (the pages link it by name)."""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    definition: str             # 1–3 plain sentences
    see: str = ""               # where to read more: a paper, or the page and section that shows it
    related: tuple[str, ...] = ()   # other glossary terms


TERMS: dict[str, Entry] = {
    "activation patching": Entry(
        "Run the model on a clean input and on a corrupted copy (one word changed), then rerun the corrupted copy with "
        "one internal value (one head's output z, or one layer's output) copied in from the clean run. How much of "
        "the clean output comes back shows how much that one value carries the difference; also called causal "
        "tracing.",
        "Meng et al. 2022; Vig et al. 2020 · the Patching page", ("z", "residual stream", "log-probability")),
    "argmax": Entry(
        "The position of the largest value. Greedy decoding writes the argmax of each step's probabilities: the one "
        "most likely token.",
        "Decoding page, One step", ("greedy decoding", "softmax")),
    "attention flow": Entry(
        "Treats the layers' head-averaged attention (plus the residual connection) as a network of pipes and asks how "
        "much can flow from each input token to each position at the top; the narrowest layer limits it.",
        "Abnar & Zuidema 2020 · Attention page, Rollout & flow", ("rollout", "residual stream")),
    "attention sink": Entry(
        "A head that parks most of its attention on a token with no content of its own: the first token, an "
        "end-of-sentence or separator token, or punctuation. It is a way for a head to 'do nothing' when no key is "
        "useful.",
        "Clark et al. 2019; Xiao et al. 2023 · Heads page, Attention sinks", ("special token", "uniform attention")),
    "attention weight": Entry(
        "How much a query token takes from one key token, a number between 0 and 1; a query's weights over all the "
        "keys it may see sum to 1, because they come out of a softmax. In a heatmap, a row is one query's weights.",
        "Vaswani et al. 2017, §3.2 · the Attention page", ("softmax", "query, key, value", "head")),
    "class token": Entry(
        "A learned vector a Vision Transformer puts before the image's patches ([CLS]). It attends to the patches "
        "in every layer like any token, and its final state alone is read by the classifier: whatever the model "
        "knows of the whole image must reach it through attention.",
        "Dosovitskiy et al. 2021, §3.1 · the Images page", ("patch", "Vision Transformer", "rollout")),
    "patch": Entry(
        "A small square of an image's pixels (here 2 × 2 of a digit's 8 × 8) that a Vision Transformer reads as one "
        "token: its pixels in a row are projected to d_model, as a word piece's embedding is looked up.",
        "Dosovitskiy et al. 2021, §3.1 · the Images page", ("class token", "Vision Transformer", "token")),
    "Vision Transformer": Entry(
        "A Transformer encoder that reads an image: the image cut into patches, each patch a token, a class token "
        "before them and a learned position vector for every token; the class token's final state names the "
        "class (ViT, \"an image is worth 16×16 words\").",
        "Dosovitskiy et al. 2021 · the Images page", ("patch", "class token", "encoder", "positional encoding")),
    "linear layer": Entry(
        "A matrix multiplication plus a bias: each output value is a weighted sum of the input's values. W_Q, W_K, "
        "W_V and W_O are linear layers, and so is the last step that turns the decoder's vector into one score per "
        "vocabulary token (the logits).",
        "Vaswani et al. 2017, §3.2.2 and §3.4", ("W_O", "query, key, value", "logits")),
    "inductive bias": Entry(
        "What a model assumes before it sees any data, built into its design. A convolution assumes that nearby "
        "pixels belong together; a Transformer assumes little (every token may attend to every other), so a Vision "
        "Transformer must learn from data what a convolution is given.",
        "Dosovitskiy et al. 2021, §3.1 · the Images page", ("Vision Transformer", "patch")),
    "Bahdanau attention": Entry(
        "The first attention for translation: a recurrent decoder scores every encoder state with a small "
        "feed-forward network (additive attention) and reads their weighted sum at each step. The Transformer keeps "
        "the idea and replaces the recurrence and the additive score with scaled dot products.",
        "Bahdanau, Cho & Bengio 2015; Vaswani et al. 2017, §3.2.1", ("cross-attention", "scaled dot-product attention")),
    "beam search": Entry(
        "Decoding that keeps the k best partial outputs (the beam) at every step instead of only the single best "
        "token, and returns the best finished one; it often finds a more probable output than greedy decoding.",
        "Decoding page, Greedy versus beam search", ("greedy decoding", "length penalty", "log-probability")),
    "bertviz": Entry(
        "A tool (Vig 2019) that draws attention as lines from each token on the left to the tokens it attends to on "
        "the right; the thicker the line, the larger the weight.",
        "Attention page, bertviz head view and model view", ("attention weight",)),
    "BLEU": Entry(
        "A translation score from 0 to 100: how many of the output's word sequences (1 to 4 words long) also occur in "
        "a human reference translation, with a penalty for outputs that are too short. Higher is better; on one "
        "sentence it is noisy, so it is reported over a corpus.",
        "Papineni et al. 2002; sacreBLEU", ("chrF",)),
    "chrF": Entry(
        "A translation score like BLEU but counted on character sequences rather than words, so a nearly right word "
        "(another ending) still earns credit; 0 to 100, higher is better.",
        "Popović 2015", ("BLEU",)),
    "confidence": Entry(
        "Of a head: the average of its largest attention weight per query, over many sentences. A confident head puts "
        "most of its weight on one key; a diffuse one spreads it.",
        "Voita et al. 2019 · Heads page", ("attention weight", "head")),
    "cosine similarity": Entry(
        "How alike two vectors' directions are: their dot product divided by both lengths, from −1 (opposite) through "
        "0 (unrelated) to 1 (the same direction). Sentence embeddings are compared by it.",
        "Reimers & Gurevych 2019 · Translation page for a sentence encoder", ("sentence embedding",)),
    "cosine to the whole model": Entry(
        "How a sentence encoder is scored with heads pruned: the mean, over a corpus's lines, of the cosine between "
        "each line's embedding by the pruned model and by the whole model. 1: pruning changed nothing.",
        "Prune page, Heads page", ("cosine similarity", "sentence embedding", "pruning")),
    "cross-attention": Entry(
        "Encoder–decoder attention: the decoder's queries look at the encoder's output (the source sentence). It is "
        "where a translation model connects each output word to source words.",
        "Vaswani et al. 2017, §3.2.3", ("encoder", "decoder", "self-attention")),
    "cross-entropy": Entry(
        "How a prediction is scored against the right answer: −log of the probability the model gave the right "
        "token (its one-hot target). 0 when it gave it probability 1; the less it gave, the larger.",
        "Lesson, training step · Decoding page, Teacher forcing", ("one-hot", "loss", "log-probability")),
    "d_k": Entry(
        "The length of one head's query, key and value vectors, usually d_model divided by the number of heads "
        "(512 / 8 = 64 in the original Transformer). Scores are divided by √d_k.",
        "Vaswani et al. 2017, §3.2.2", ("d_model", "scaled dot-product attention")),
    "d_model": Entry(
        "The length of the vector that stands for each token inside the model (its embedding and everything passed "
        "between layers): 512 in the original Transformer.",
        "Vaswani et al. 2017, §3", ("embedding", "residual stream", "d_k")),
    "decoder": Entry(
        "The stack that writes the output one token at a time. Its self-attention sees only earlier output tokens "
        "(look-ahead mask); in a translation model its cross-attention reads the encoder's output.",
        "Vaswani et al. 2017, §3.1", ("encoder", "cross-attention", "look-ahead mask")),
    "dependency relation": Entry(
        "A grammatical link between two words of a sentence in a treebank, e.g. 'nmod dependent→head': a noun "
        "modifier points to the noun it modifies. A syntactic head's top weight lands on the other end of such "
        "links more often than position alone would predict.",
        "Universal Dependencies · Voita et al. 2019 · Heads page, One head", ("syntactic head", "treebank")),
    "duplicate-token head": Entry(
        "A head whose query attends to earlier copies of its own token.",
        "Olsson et al. 2022 · Heads page, Head detectors", ("induction head", "previous-token head")),
    "embedding": Entry(
        "The learned vector (of length d_model) that stands for a token, looked up in a table at the model's input; "
        "the positional encoding is added to it before the first layer.",
        "Vaswani et al. 2017, §3.4 · Internals page, Positions", ("d_model", "positional encoding", "token")),
    "encoder": Entry(
        "The stack that reads the whole input at once: every token attends to every other token (self-attention, no "
        "look-ahead mask). Its output is what the decoder's cross-attention reads.",
        "Vaswani et al. 2017, §3.1", ("decoder", "self-attention")),
    "entropy": Entry(
        "How spread out a probability distribution is, in nats: 0 when one token has all the probability, larger "
        "when many tokens share it (ln of the vocabulary size when all are equal). High entropy: the model is "
        "unsure.",
        "Decoding page", ("nats", "softmax")),
    "epoch": Entry("One pass of training over every sentence of the training data."),
    "faithfulness": Entry(
        "Whether an explanation reflects what the model actually computes. Attention is faithful if tokens with high "
        "attention are the ones the output depends on, measured by leave-one-out or gradient × input.",
        "Jain & Wallace 2019; Abnar & Zuidema 2020 · the Faithfulness page",
        ("leave-one-out", "gradient × input", "Spearman ρ")),
    "feed-forward layer": Entry(
        "The part of each layer after attention (the feed-forward network, FFN): the same small two-layer network "
        "applied to every position on its own. Attention moves information between tokens; the feed-forward layer "
        "transforms it at each token.",
        "Vaswani et al. 2017, §3.3", ("layer", "residual stream")),
    "gradient × input": Entry(
        "A token's importance as the size of (gradient of the output's log-probability with respect to the token's "
        "input vector) × (that vector): roughly, how much the output would change if the token's vector were "
        "scaled down.",
        "Faithfulness page", ("leave-one-out", "faithfulness")),
    "greedy decoding": Entry(
        "Writing the output by taking the single most probable token at every step; fast, but it can miss a better "
        "whole sentence.",
        "Decoding page", ("beam search", "sampling")),
    "head": Entry(
        "One of the parallel attention computations in a layer (8 in the original Transformer). Each head has its own "
        "query, key and value projections, so it can attend to different things; written kind.layer.head, counted "
        "from 0: enc.0.3 is encoder layer 0, head 3 (dec: decoder self-attention, cross: cross-attention).",
        "Vaswani et al. 2017, §3.2.2 · the Heads page", ("multi-head attention", "layer", "query, key, value")),
    "head average": Entry(
        "The attention weights of all the heads of one layer averaged: a summary of the layer that hides what the "
        "individual heads do.",
        "Attention page", ("head", "attention weight")),
    "head importance": Entry(
        "How much the output's loss changes when a head is turned down: the gradient of the loss with respect to a "
        "gate on the head's output, averaged over a corpus (optionally normalised per layer). Low importance: the "
        "head can be pruned cheaply.",
        "Michel et al. 2019 · Heads page, Prune page", ("pruning", "head mask")),
    "head mask": Entry(
        "A gate multiplying each head's output z before W_O: 1 keeps the head, 0 switches it off. Pruning, "
        "importance and patching all use it.",
        "Michel et al. 2019", ("z", "W_O", "pruning")),
    "induction head": Entry(
        "A head that finds an earlier copy of the current token and attends to the token that followed it, so the "
        "model can continue a repeated pattern ([A][B] … [A] → [B]); it usually relies on a previous-token head in "
        "an earlier layer.",
        "Olsson et al. 2022 · Heads page, Head detectors; Papers page", ("previous-token head",
                                                                        "duplicate-token head")),
    "KL divergence": Entry(
        "How different one probability distribution is from another, in nats; 0 when they are the same. The Prune "
        "page uses it to measure how much pruning changed each step's distribution.",
        "Prune page", ("nats", "entropy")),
    "layer": Entry(
        "One block of the stack: attention followed by a feed-forward layer, each with a residual connection and a "
        "layer norm. The original Transformer has 6 encoder and 6 decoder layers; numbered from 0 here.",
        "Vaswani et al. 2017, §3.1", ("head", "feed-forward layer", "residual stream", "layer norm")),
    "layer norm": Entry(
        "Rescales each token's vector to mean 0 and variance 1 (then a learned scale and shift); also LayerNorm. "
        "Post-norm (the original paper's \"Add & Norm\") normalises after adding a sublayer's output; pre-norm (the "
        "bundled models, GPT-2) normalises each sublayer's input and adds a final norm at the top of the stack.",
        "Ba et al. 2016; Xiong et al. 2020", ("residual stream", "layer")),
    "leave-one-out": Entry(
        "A token's importance as how much the output's log-probability drops when that token is replaced by the "
        "unknown token; the most direct test of what the output depends on.",
        "Faithfulness page", ("gradient × input", "faithfulness", "log-probability")),
    "length penalty": Entry(
        "In beam search, dividing a hypothesis's log-probability by a function of its length, so that longer outputs "
        "(which add more negative log-probabilities) are not always beaten by short ones.",
        "Wu et al. 2016 (GNMT) · Decoding page", ("beam search",)),
    "loss": Entry(
        "The number training makes smaller: for a translation, the cross-entropy of every reference token, averaged "
        "(in nats). Gradients of the loss tell each weight which way to move.",
        "Lesson, training step · Decoding page, Teacher forcing", ("cross-entropy", "teacher forcing", "perplexity")),
    "log-probability": Entry(
        "The natural logarithm of a probability: 0 for certain, more negative for less likely. An output's "
        "log-probability is the sum of its tokens' log-probabilities.",
        "", ("nats", "logits")),
    "logit lens": Entry(
        "Reading the residual stream after each layer through the model's final norm and output projection, as if "
        "the model stopped there: it shows at which layer the final prediction appears.",
        "nostalgebraist 2020 · Decoding page, Logit lens", ("residual stream", "logits", "layer norm")),
    "logits": Entry(
        "The raw scores the model gives every token of its vocabulary at an output step; a softmax turns them into "
        "probabilities.",
        "", ("softmax", "temperature")),
    "look-ahead mask": Entry(
        "Also called the causal mask: in decoder self-attention, position i may attend to positions ≤ i only, so "
        "the model cannot peek at the words it has yet to write. As a matrix it is lower-triangular.",
        "Vaswani et al. 2017, §3.2.3 · Internals page, Masks", ("mask", "decoder")),
    "mask": Entry(
        "A table of which keys each query may attend to; a forbidden key's score is set to −∞ before the softmax, so "
        "its weight is exactly 0. Two kinds: the padding mask and the look-ahead mask.",
        "Internals page, Masks", ("padding mask", "look-ahead mask", "softmax")),
    "masked language model": Entry(
        "A model like BERT that is trained to fill in hidden ([MASK]) tokens from the words on both sides; it has an "
        "encoder only and generates no text.",
        "Devlin et al. 2019 · Decoding page", ("encoder",)),
    "multi-head attention": Entry(
        "Several heads attending in parallel, each in its own smaller space (d_k); their outputs z are concatenated "
        "and multiplied by W_O to give the layer's attention output.",
        "Vaswani et al. 2017, §3.2.2", ("head", "z", "W_O")),
    "Multi30k": Entry(
        "A dataset of about 30,000 image captions in English with German translations; the bundled models were "
        "trained on it, so they know short descriptions of pictures and little else.",
        "Elliott et al. 2016", ()),
    "nats": Entry(
        "The unit of information when natural logarithms are used (bits use log base 2): 1 nat ≈ 1.44 bits. Loss, "
        "entropy and KL divergence are in nats here.",
        "", ("entropy", "log-probability")),
    "norm-based attention": Entry(
        "‖α·f(x)‖: instead of the weight α alone, the length of what a key actually adds to the query, its weight "
        "times its transformed value f(x) = v·W_O. A high weight on a key with a short f(x) moves the query little.",
        "Kobayashi et al. 2020 · the Show choice on Attention and Compare", ("attention weight", "W_O")),
    "one-hot": Entry(
        "A vector as long as the vocabulary with 1 at the right token and 0 everywhere else: the target a training "
        "step compares the model's predicted probabilities with.",
        "Lesson, training step", ("cross-entropy", "softmax")),
    "padding mask": Entry(
        "When sentences of different lengths share a batch, the shorter ones are filled up with padding tokens; the "
        "padding mask stops every query from attending to them.",
        "Internals page, Masks", ("mask",)),
    "perplexity": Entry(
        "e to the power of the average loss per token: roughly, how many tokens the model is choosing between at "
        "each step. Lower is better.",
        "", ("nats", "log-probability")),
    "piece": Entry(
        "A subword: the unit the model reads and writes. Rare words are split into several pieces; SentencePiece "
        "marks a piece that starts a word with ▁.",
        "Kudo & Richardson 2018 · Translation page, Tokens", ("token",)),
    "positional encoding": Entry(
        "Attention by itself ignores word order, so a vector saying where each token is gets added to its "
        "embedding: sines and cosines of different frequencies in the original Transformer, a learned table in "
        "BERT and GPT-2, a bias on the scores by relative offset in T5, or a rotation of q and k in Llama.",
        "Vaswani et al. 2017, §3.5 · Internals page, Positions",
        ("embedding", "relative position bias", "rotary positions")),
    "positional head": Entry(
        "A head whose largest weight usually sits at a fixed offset from the query (the previous or the next token, "
        "for example).",
        "Voita et al. 2019 · Heads page", ("syntactic head", "rare-token head", "previous-token head")),
    "prefix matching": Entry(
        "Olsson et al.'s own induction score: on a repeated random sequence, the share of attention from the second "
        "repeat to the token after the earlier copy; a perfect induction head scores 1.",
        "Olsson et al. 2022 · Heads page, Head detectors", ("induction head",)),
    "previous-token head": Entry(
        "A head that attends mostly to the token just before the query.",
        "Olsson et al. 2022; Voita et al. 2019 · Heads page", ("induction head", "positional head")),
    "pruning": Entry(
        "Switching attention heads off (their output set to 0) to see what the model loses. Michel et al. found most "
        "heads can be pruned with little loss; a few matter a lot.",
        "Michel et al. 2019; Voita et al. 2019 · the Prune page", ("head importance", "head mask")),
    "query, key, value": Entry(
        "Q, K, V: three vectors each token gets from its own vector by three learned projections. A query's score "
        "for a key is their dot product q·k; the weights from those scores average the values v.",
        "Vaswani et al. 2017, §3.2 · Internals page, Q, K, V walkthrough",
        ("scaled dot-product attention", "attention weight", "d_k")),
    "rare-token head": Entry(
        "A head that attends most to the least frequent token of the sentence (by its frequency in the training "
        "data), more often than chance.",
        "Voita et al. 2019 · Heads page", ("positional head", "syntactic head")),
    "Ray": Entry(
        "A library that runs a computation on several processes or machines; here it splits a long corpus analysis "
        "into shards.",
        "ray.io", ()),
    "relative position bias": Entry(
        "T5's alternative to positional encoding: every attention score gets a learned number added that depends on "
        "how far the key is from the query.",
        "Raffel et al. 2020 · Internals page, Positions", ("positional encoding",)),
    "residual stream": Entry(
        "The running vector of each token that every layer reads from and adds its output to (x + attention(x), then "
        "+ feed-forward): the model's working memory, passed from layer to layer.",
        "Elhage et al. 2021", ("layer", "logit lens", "d_model")),
    "rollout": Entry(
        "Attention rollout: multiplies the head-averaged attention matrices of the layers (each with the residual "
        "connection added as 0.5·A + 0.5·I) to estimate how much each input token feeds each position at the top.",
        "Abnar & Zuidema 2020 · Attention page, Rollout & flow", ("attention flow", "residual stream")),
    "rotary positions": Entry(
        "RoPE, Llama's way of giving attention word order: nothing is added to the input; instead every layer turns "
        "each pair of q's and k's numbers by an angle proportional to the token's position (a different speed per "
        "pair), so q·k depends on how far apart the query and key are, not on where they are.",
        "Su et al. 2021 · Internals page, Positions", ("positional encoding", "relative position bias")),
    "sampling": Entry(
        "Drawing each output token at random from the model's distribution instead of taking the most probable; "
        "temperature, top-k and top-p reshape that distribution first.",
        "Holtzman et al. 2020 · Decoding page, Sampling", ("temperature", "top-k", "top-p", "greedy decoding")),
    "scaled dot-product attention": Entry(
        "The attention formula softmax(Q·Kᵀ / √d_k)·V: each query's scores are dot products with the keys, divided by "
        "√d_k so they do not grow with the vector length, masked, turned into weights by a softmax, and used to "
        "average the values.",
        "Vaswani et al. 2017, §3.2.1 · Internals page", ("query, key, value", "softmax", "d_k", "mask")),
    "sentence embedding": Entry(
        "One vector for a whole sentence. A sentence encoder such as all-MiniLM-L6-v2 averages its last layer's "
        "token vectors (mean pooling) and scales the mean to length 1; it was trained so that sentences that mean "
        "alike get vectors with a high cosine similarity.",
        "Reimers & Gurevych 2019 · Translation page for all-MiniLM-L6-v2", ("cosine similarity", "embedding")),
    "self-attention": Entry(
        "Attention in which the queries, keys and values all come from the same sequence: the encoder's tokens "
        "attend to each other, the decoder's output tokens to the earlier output tokens.",
        "Vaswani et al. 2017, §3.2.3", ("cross-attention", "encoder", "decoder")),
    "softmax": Entry(
        "Turns a row of scores into probabilities: exponentiate each, divide by their sum. The results are between 0 "
        "and 1 and add up to 1; a key with score −∞ gets exactly 0.",
        "Internals page, Scores → softmax", ("attention weight", "logits")),
    "special token": Entry(
        "A token that is not text: the start and end of a sentence (<s>, </s>), BERT's [CLS] and [SEP], padding "
        "(<pad>), the unknown token (<unk>) or the mask ([MASK]).",
        "", ("attention sink", "piece")),
    "Spearman ρ": Entry(
        "A rank correlation from −1 to 1: whether two scorings put the tokens in the same order (1), an unrelated "
        "order (0) or the reverse order (−1), whatever their scales.",
        "Faithfulness page", ("faithfulness",)),
    "syntactic head": Entry(
        "A head whose top weight lands on a word's syntactic partner (for one dependency relation) more often than a "
        "head that only looked at a fixed offset would.",
        "Voita et al. 2019 · Heads page", ("dependency relation", "positional head", "rare-token head")),
    "teacher forcing": Entry(
        "Feeding the decoder a given output (a reference translation) instead of its own predictions, and reading at "
        "each step the probability it gives the next reference token; how models are trained, and how a known "
        "output is scored.",
        "Decoding page, Teacher forcing", ("decoder", "nats")),
    "temperature": Entry(
        "The logits are divided by T before the softmax: T below 1 sharpens the distribution (towards greedy), above "
        "1 flattens it (more random).",
        "Decoding page, Sampling", ("sampling", "logits")),
    "token": Entry(
        "One unit of the model's input or output: a piece of a word, a whole word, punctuation or a special token. "
        "Every row and column of an attention heatmap is a token.",
        "Translation page, Tokens", ("piece", "special token")),
    "top-k": Entry(
        "Sampling only from the k most probable tokens of each step.",
        "Fan et al. 2018 · Decoding page, Sampling", ("sampling", "top-p")),
    "top-p": Entry(
        "Nucleus sampling: sampling only from the smallest set of most probable tokens whose probabilities add up "
        "to at least p.",
        "Holtzman et al. 2020 · Decoding page, Sampling", ("sampling", "top-k")),
    "treebank": Entry(
        "A corpus of sentences annotated by hand with their syntax: each word's dependency relation and the word it "
        "depends on (CoNLL-U is its file format).",
        "Universal Dependencies", ("dependency relation",)),
    "uniform attention": Entry(
        "The weights a head would give if it spread its attention equally over every key it may see: the chance "
        "level to compare a head's share with.",
        "", ("attention weight", "attention sink")),
    "W_O": Entry(
        "The output projection of multi-head attention: the heads' outputs z are concatenated and multiplied by W_O "
        "to give the layer's attention output, which is added to the residual stream.",
        "Vaswani et al. 2017, §3.2.2", ("z", "multi-head attention", "residual stream")),
    "WMT": Entry(
        "The yearly Conference on Machine Translation's shared tasks, whose large news-translation datasets most "
        "translation papers train and test on.",
        "statmt.org", ("BLEU",)),
    "z": Entry(
        "A head's output at one position: the weighted sum of the value vectors, Σ weight × v, a vector of length "
        "d_k, before W_O mixes the heads.",
        "Internals page, Q, K, V walkthrough", ("query, key, value", "W_O", "head mask")),
    "head atlas": Entry(
        "Every head of a model on one map: two heads sit close when they attend alike over many sentences (the "
        "Jensen–Shannon divergence between their attention), laid out by multidimensional scaling.",
        "Clark et al. 2019, §6 · the Atlas page", ("Jensen–Shannon divergence", "multidimensional scaling (MDS)",
                                                   "head")),
    "Jensen–Shannon divergence": Entry(
        "How different two probability distributions are (JS divergence): the average of each one's Kullback–Leibler "
        "divergence from their mean. In bits it runs from 0 (the same) to 1 (no overlap) and, unlike KL, is "
        "symmetric; the atlas compares two heads' attention rows with it.",
        "Lin 1991 · the Atlas page", ("head atlas", "softmax")),
    "multidimensional scaling (MDS)": Entry(
        "Places points on a plane so that their distances there come as close as possible to the distances given "
        "(between heads, say): near means alike, but the axes themselves mean nothing.",
        "scikit-learn's MDS · the Atlas page", ("head atlas", "PCA", "t-SNE")),
    "PCA": Entry(
        "Principal component analysis: the plane (or line) through a cloud of vectors along which they spread most; "
        "drawing the vectors there keeps as much of their spread as two axes can.",
        "scikit-learn's PCA · the Atlas page, Queries and keys", ("t-SNE", "query–key space")),
    "t-SNE": Entry(
        "A drawing of many vectors on a plane that keeps each one's nearest neighbours near, at the cost of the "
        "distances between far groups (t-distributed stochastic neighbour embedding); seeded here, so it is the same "
        "each time.",
        "van der Maaten & Hinton 2008 · the Atlas page, Queries and keys", ("PCA", "query–key space")),
    "query–key space": Entry(
        "One head's queries and keys drawn on one plane, keys moved and both rescaled so that a query lands near the "
        "keys it attends to (neither change alters the attention), as AttentionViz draws them.",
        "Yeh et al. 2023 (AttentionViz) · the Atlas page", ("query, key, value", "PCA", "t-SNE")),
}
