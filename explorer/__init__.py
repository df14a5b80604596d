"""Attention Explorer as a library, for notebooks (the web app and the CLI are built on the same calls):

    import explorer
    model = explorer.load("en-de-h8")
    trace = explorer.trace_sentence(model, "A dog catches a ball in the park.")
    explorer.attention_figure(trace, "cross", layer=2, head=0)     # a plotly figure, drawn by the notebook
    explorer.head_view(trace)                                      # bertviz's head view, offline

Everything runs offline: bertviz's views carry their scripts inline (from the installed packages, nothing
from a CDN) inside a sandboxed iframe, and token text is escaped. Imports are lazy, so `import explorer`
(and `python -m explorer --help`) stays fast.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:                      # for readers and type checkers only; nothing heavy is imported at run time
    import numpy as np
    import plotly.graph_objects as go

    from explorer.capture.trace import Trace
    from explorer.models.interface import ExplorerModel

__all__ = ["load", "trace_sentence", "translate", "attention_figure", "heads_figure", "head_view", "model_view",
           "HtmlView",
           # what attention does and does not explain (docs/analyses.md): each function named apart from its module, since
           # importing explorer/analyses/sentence/logit_lens.py would otherwise replace a function
           # explorer.analyses.sentence.logit_lens
           "word_trace", "attention_sinks", "attention_flow", "faithfulness_of", "logit_lens_of", "patch",
           "detect_heads", "sample", "word_focus_table",
           # interventions, as TransformerLens's run_with_hooks (explorer/analyses/sentence/interventions.py)
           "run_with_hooks", "hook_names", "head_value", "ablate_head", "patch_head", "patch_positions",
           # an image model (a Vision Transformer): its attention over the image's patches
           "trace_image", "image_attention_figure",
           # every registered analysis (explorer/analyses/sentence/) by its name
           "analyse", "analysis_names", "analysis_figure",
           # batches, token ids, gradients, every hook point, as TransformerLens's run_with_cache
           "run_with_cache",
           # the corpus studies of heads, with the command line's arguments (explorer/studies.py)
           "roles", "importance", "prune_curve", "replicate", "atlas", "search_heads", "query_key_space"]


def load(path: str, device: str = "auto", download: bool = True) -> ExplorerModel:
    """A bundled model by name ("en-de-h8", "en-de-h2", "en-de-h1", "digits-vit"), a checkpoint folder of ours, a
    Hugging Face folder, a hub id ("gpt2": downloaded into the Hugging Face cache on first use unless download=False
    or HF_HUB_OFFLINE=1), or an installed model's name ("all-MiniLM-L6-v2"). device: "cpu", "cuda" (or "cuda:N"),
    or "auto", a GPU when torch sees one; `model.device` says where it is, and every trace runs there."""
    from explorer.models.loader import open_model

    return open_model(path, download=download, device=device)


def trace_sentence(model: ExplorerModel, sentence: str, beam_size: int = 1, pruned: str = "",
                   recase: bool = False) -> Trace:
    """Translate (or continue, or read) one sentence and capture every attention, mask, positional encoding and
    decoding step. pruned: heads to mask, e.g. "enc.0.3,cross.2.*". The text is read exactly as typed; recase=True
    feeds an all-caps or all-lower-case sentence in sentence case (trace.recased_from then keeps it as typed)."""
    from explorer.capture.head_sets import parse_heads
    from explorer.capture.trace import trace_sentence as trace

    return trace(model, sentence, beam_size=beam_size, pruned=parse_heads(pruned, model), fix_casing=recase)


def analysis_names(model: ExplorerModel | None = None) -> list[str]:
    """The registered analyses' names (`analyse`'s first argument), those that apply to `model` when given."""
    from explorer.analyses.registry import registered

    return [name for name, analysis in registered().items() if model is None or analysis.applies(model)]


def analyse(name: str, model: ExplorerModel, sentence: str | Trace | list[str], **options):
    """A registered analysis (analysis_names()) of a sentence, of its trace, or the mean over a list of sentences;
    options as its command's flags (e.g. normalised=True). Returns its record: `.table()` a DataFrame, `.to_json()`,
    and for heads `.scores` {kind: [layers, heads]}."""
    from explorer.analyses.registry import analysis_named

    analysis = analysis_named(name)
    options = analysis.checked(options)
    if isinstance(sentence, list):
        from explorer.analyses.jobs.jobs import run_job

        return run_job("registered", model, {"sentences": sentence}, {"analysis": name, **options},
                       cache_folder=None).result
    trace = trace_sentence(model, sentence) if isinstance(sentence, str) else sentence
    return analysis.run(model, trace, **options)


def analysis_figure(record, title: str = "") -> go.Figure:
    """The figure of a record `analyse` returned."""
    from explorer.figures.registered import figure_of

    return figure_of(record, title)


def trace_image(model, image, pruned: str = "") -> Trace:
    """Classify one image with an image model (e.g. "models/digits-vit") and capture every attention over its
    class token and patches. image: an array of the model's size (0 … 1), "digits:N" (the held-out split's digit
    N), or the path of a .npy array or a picture. trace.image keeps the pixels, trace.steps[0] the classes."""
    from explorer.capture.head_sets import parse_heads
    from explorer.capture.image_inputs import read_image
    from explorer.capture.image_trace import trace_image as trace

    description = "an image"
    if isinstance(image, str):
        image, description = read_image(image, model)
    return trace(model, image, parse_heads(pruned, model), description=description)


def image_attention_figure(trace: Trace, layer: int = 0, head: int = 0, query: int = 0) -> go.Figure:
    """Where one token (0: the class token; 1 + row × columns + column: a patch) looks, drawn over the image."""
    from explorer.figures.image import attention_over_image

    return attention_over_image(trace, layer, head, query)


def translate(model: ExplorerModel, sentences: list[str], beam_size: int = 1, pruned: str = "",
              recase: bool = False) -> list[str]:
    """One output per sentence: a translation, or a decoder-only model's continuation (each read as typed unless
    recase=True)."""
    from explorer.capture.head_sets import parse_heads
    from explorer.capture.translation import translate as translate_all

    return translate_all(model, sentences, beam_size, parse_heads(pruned, model), fix_casing=recase)


def attention_figure(trace: Trace, kind: str = "encoder", layer: int = 0, head: int = 0) -> go.Figure:
    """One head's attention as a heatmap: kind is "encoder", "decoder" or "cross"."""
    from explorer.figures.matrix import Matrix, plotly_heatmap
    from explorer.models.vocabulary import check_kind

    pattern = trace.pattern(check_kind(kind))[layer, head]
    return plotly_heatmap(Matrix(pattern, trace.query_tokens(kind), trace.key_tokens(kind),
                                 f"{kind}, layer {layer}, head {head}"))


def heads_figure(trace: Trace, kind: str = "encoder") -> go.Figure:
    """Every head of one kind at once, layers × heads."""
    from explorer.figures.attention import heads_grid
    from explorer.models.vocabulary import KIND_TITLES, check_kind

    return heads_grid(trace.pattern(check_kind(kind)), trace.query_tokens(kind), trace.key_tokens(kind),
                      KIND_TITLES[kind])


class HtmlView:
    """A self-contained HTML page shown by a notebook in a sandboxed iframe; .html is the page, .save(path)
    writes it as a standalone file that opens offline."""

    def __init__(self, page: str, height: int) -> None:
        self.html, self.height = page, height

    def _repr_html_(self) -> str:
        return (f'<iframe sandbox="allow-scripts" style="width:100%;height:{self.height}px;border:0" '
                f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>')

    def save(self, path: str) -> str:
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.html)
        return path


def head_view(trace: Trace, layer: int = 0) -> HtmlView:
    """bertviz's head view of every attention kind: lines from each token to the tokens it attends to."""
    from explorer.figures.bertviz_views import head_view_html

    return HtmlView(head_view_html(trace, layer=layer), height=120 + 22 * max(len(trace.source_tokens),
                                                                               len(trace.target_tokens)))


def model_view(trace: Trace) -> HtmlView:
    """bertviz's model view: a thumbnail for every layer and head."""
    from explorer.figures.bertviz_views import model_view_html

    layers = trace.pattern(next(iter(trace.attention))).shape[0]
    return HtmlView(model_view_html(trace), height=160 + 120 * layers)


def detect_heads(model: ExplorerModel, seeds: int = 8, length: int = 20):
    """Previous-token, duplicate-token, induction and prefix-matching scores of every self-attention head on
    repeated random tokens (Olsson et al. 2022; TransformerLens's definitions), with chance: a HeadDetection.

    .scores[kind][detector] is [layers, heads]; kind is "encoder" or "decoder" (the self-attentions the model
    has), detector one of "previous_token", "duplicate_token", "induction", "prefix_matching"
    (explorer.analyses.sentence.detectors.DETECTORS). .chance and .ceiling are keyed the same way; .top(kind, detector)
    lists the best heads."""
    from explorer.analyses.sentence.detectors import detect_heads as detect

    return detect(model, seeds=seeds, length=length)


def patch(model: ExplorerModel, clean: str, corrupt: str, metric: str = "total"):
    """Activation patching (Meng et al. 2022): the share of the clean output's log-probability that each head's z
    and each layer's output, patched from the clean run into the corrupted one, restores. A PatchingResult
    (.heads[kind] [layers, heads], .layer_outputs[stack] [layers], .all_layers ≈ 1, .nothing = 0)."""
    from explorer.analyses.sentence.patching import patch as patch_heads

    return patch_heads(model, clean, corrupt, metric)


def logit_lens_of(model: ExplorerModel, sentence: str | Trace, top_k: int = 5, position: int | None = None):
    """The logit lens (nostalgebraist 2020) over a sentence's output (or a trace's), teacher-forced: per decoding
    step and decoder layer, the top-k tokens and the chosen token's probability and rank (.chosen_probs,
    .chosen_ranks [layers, steps], .settles_at()). A masked language model: over its encoder layers at the masked
    `position` (default: a token near the middle). Draw it with
    explorer.figures.logit_lens.logit_lens_figure(lens)."""
    from explorer.analyses.sentence.logit_lens import lens_of

    return lens_of(model, sentence, top_k, position)


def sample(model: ExplorerModel, sentence: str, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
           seed: int = 0, pruned: str = "", recase: bool = False) -> str:
    """A sampled output (translation or continuation): each token drawn at this temperature from the top-k / top-p
    (nucleus) of its step's distribution; the same arguments (seed included) give the same text. Temperature 0 is
    greedy decoding."""
    from explorer.capture.head_sets import parse_heads
    from explorer.capture.sampling import sample as sample_output
    from explorer.capture.sampling import settings_from

    settings = settings_from(temperature, top_k, top_p, seed)
    return sample_output(model, sentence, settings, parse_heads(pruned, model), fix_casing=recase).text


def faithfulness_of(model: ExplorerModel, sentence: str, recase: bool = False):
    """Does attention point where the output depends? Per source token: leave-one-out (the output's log-probability
    lost when the token is blanked to the unknown token), gradient × input, and the last layer's attention, rollout,
    flow and norms, with Spearman's ρ of each against leave-one-out (.spearman) and gradient × input
    (.spearman_gradient). .scores() gives every measure as a column: a dict from its name ("leave_one_out",
    "gradient_x_input", then the attention measures) to one value per source token (pandas.DataFrame(result.scores())
    is a table with a row per token). Abnar & Zuidema 2020; the choices are in explorer/analyses/sentence/faithfulness.py."""
    from explorer.analyses.sentence.faithfulness import faithfulness as scored

    return scored(model, sentence, recase)


def attention_flow(trace: Trace | np.ndarray, kind: str = "encoder"):
    """Attention flow (Abnar & Zuidema 2020) [query, key] of a trace's encoder or decoder self-attention, or of a
    pattern array [layers, heads, q, q]; at most explorer.analyses.sentence.flow.MAX_FLOW_TOKENS tokens."""
    from explorer.analyses.sentence.flow import attention_flow as flow
    from explorer.capture.inputs import InputError
    from explorer.models.vocabulary import check_kind

    if hasattr(trace, "pattern"):
        if not check_kind(kind).is_self:
            raise InputError("attention flow follows one stack's self-attention: kind is \"encoder\" or \"decoder\"")
        return flow(trace.pattern(kind))
    return flow(trace)


def model_first(model, trace, function: str) -> tuple:
    """(model, trace) as every function here takes them; the order before 2026-11-28, (trace, model), still works
    for a while, with a DeprecationWarning (the two cannot be mistaken: one is a Trace)."""
    from explorer.capture.trace import Trace

    if isinstance(model, Trace):
        import warnings

        warnings.warn(f"explorer.{function}(trace, model) is deprecated: give the model first, "
                      f"explorer.{function}(model, trace)", DeprecationWarning, stacklevel=3)
        return trace, model
    return model, trace


def word_trace(model: ExplorerModel, trace: Trace) -> Trace:
    """The trace over words (Clark et al. 2019): attention to a word sums its pieces, from a word averages them, so
    rows still sum to 1; every figure above draws it (explorer.attention_figure(explorer.word_trace(model, trace)))."""
    from explorer.capture.words import word_trace as over_words

    return over_words(*model_first(model, trace, "word_trace"))


def attention_sinks(model: ExplorerModel, trace: Trace):
    """Attention sinks on a traced sentence: a pandas table, one row per head, of its share of attention on the first
    token, special tokens and punctuation, by weight and by norm, uniform attention's share, and whether it is a sink
    (explorer/analyses/sentence/sinks.py; `python -m explorer sinks` averages over a corpus)."""
    import pandas as pd

    from explorer.analyses.sentence.sinks import sinks as shares

    return pd.DataFrame(shares(*model_first(model, trace, "attention_sinks"))).set_index("spec")


def word_focus_table(model: ExplorerModel, trace: Trace, word: str, kind: str | None = None, occurrence: int = 1):
    """The lecture's question for every head: the word that `word` (its `occurrence`-th appearance) gives the most
    weight, and that weight, over words (to a word the sum of its pieces, from a word the mean), nothing excluded:
    special tokens and punctuation are named when they get the most. kind: default the self-attention that reads the
    sentence. A FocusTable (.heads, one row per head; .counts(); .to_json()); `python -m explorer focus` prints it."""
    from explorer.analyses.sentence.focus_table import word_focus_table as table

    return table(*model_first(model, trace, "word_focus_table"), word, kind, occurrence)


# -- interventions (explorer/analyses/sentence/interventions.py): read or replace any named value in one run --

def hook_names(model: ExplorerModel, pattern: str = "*") -> list[str]:
    """The names of the values a hook can read or replace, matching a glob pattern, in forward order: e.g.
    "encoder.layers.0.self_attn.{q,k,v,scores,mask,pattern,z,out}", "decoder.layers.2.cross_attn.z",
    "encoder.embed", "encoder.layers.0" (a layer's output, the residual stream after it)."""
    from explorer.analyses.sentence.interventions import hook_names as names

    return names(model, pattern)


def run_with_hooks(model: ExplorerModel, inputs, hooks=(), target=None, names=(), grad: bool = False,
                   recase: bool = False):
    """One teacher-forced run with hooks, as TransformerLens's run_with_hooks.

    inputs: a string; a list of strings (a padded batch, padding masked as the model masks it; each row equals its
    sentence run alone); or token ids (a LongTensor [batch, positions], every position a real token). Text is read
    exactly as typed unless recase=True. hooks: [(name or glob pattern, fn)] or {name: fn}; fn(value, name) returns
    a tensor that replaces the value, or None to leave it (a reader). Names come from explorer.hook_names(model):
    attention values, and each layer's resid_pre, resid_mid, resid_post, mlp_out, ln1, ln2; ready-made hooks from
    explorer.ablate_head and explorer.patch_head. target: the output the decoder reads (its text, one per row, or
    ids; default the model's own greedy output, decoded once per sentence and remembered). names: glob patterns of
    values to return in .cache, as the run saw them after the hooks. grad: keep the graph. A HookedRun: .logits
    ([positions, vocab] for a string, [batch, positions, vocab] for a batch; None for a sentence encoder:
    .embedding), .cache, .source_tokens, .target_tokens, .output_positions, .output_ids, .output_log_prob()."""
    from explorer.analyses.sentence.interventions import run_with_hooks as run

    return run(model, inputs, hooks, target, names, grad=grad, recase=recase)


def run_with_cache(model: ExplorerModel, inputs, names="*", grad: bool = False, target=None, recase: bool = False):
    """(logits, cache) of one teacher-forced run, as TransformerLens's run_with_cache. inputs as run_with_hooks
    takes them (a string, a list of strings, token ids). logits: [batch, positions, vocab] (a sentence encoder:
    its embeddings [batch, d_model]). cache: every value matching names (glob patterns), torch tensors with a
    batch axis, by full name or shorthand: cache["pattern", 0] on a model with one kind of attention,
    cache["pattern", 0, "cross"] (or "encoder", "decoder") on an encoder–decoder, cache["resid_post", 2]. grad=True
    keeps the graph: logits and cached values have gradients (attribution patching)."""
    from explorer.analyses.sentence.interventions import run_with_cache as run

    return run(model, inputs, names, grad=grad, target=target, recase=recase)


def head_value(kind: str, layer: int, value: str = "z") -> str:
    """The name of one attention block's value: kind "encoder", "decoder" or "cross"; value one of q, k, v,
    scores, mask, pattern, z, out (head_value("cross", 2) → "decoder.layers.2.cross_attn.z")."""
    from explorer.analyses.sentence.interventions import head_value as name

    return name(kind, layer, value)


def ablate_head(kind: str, layer: int, head: int, positions=None):
    """A (name, hook) pair for run_with_hooks that zeroes one head's output z at the query `positions` (an int, a
    list, or None: every position)."""
    from explorer.analyses.sentence.interventions import ablate_head as ablate

    return ablate(kind, layer, head, positions)


def patch_head(kind: str, layer: int, head: int, clean, positions=None):
    """A (name, hook) pair for run_with_hooks that puts another run's z of one head (clean: that run's
    .cache[explorer.head_value(kind, layer)]) at the query `positions` (None: every position)."""
    from explorer.analyses.sentence.interventions import patch_head as patch_one

    return patch_one(kind, layer, head, clean, positions)


def patch_positions(model: ExplorerModel, clean: str, corrupt: str, kind: str, layer: int, head: int,
                    metric: str = "total"):
    """Per-position activation patching of one head: for each query position alone, the share of the clean output's
    log-probability that its z from the clean run restores in the corrupted run (explorer.patch does whole heads).
    A PositionPatching: .query_tokens, .restored [queries], .whole_head, .lp_clean, .lp_corrupt."""
    from explorer.analyses.sentence.interventions import patch_positions as per_position

    return per_position(model, clean, corrupt, kind, layer, head, metric)


# -- the corpus studies of heads (explorer/studies.py), with the command line's arguments --

def roles(model: ExplorerModel, text=None, conllu=None, **options):
    """Every head's roles (Voita et al. 2019) over sentences (text: a file's path or a list of strings) and/or a
    CoNLL-U treebank (conllu: a path); the roles command's options as keywords (limit=, positional=, rare_rate=,
    workers= …). A RolesReport: .heads, .to_json() (the command's --json), .table() (pandas)."""
    from explorer.studies import roles as study

    return study(model, text, conllu, **options)


def importance(model: ExplorerModel, src, ref=None, **options):
    """Each head's importance (Michel et al. 2019) on a corpus (src, and ref for a translator: paths or lists of
    strings); gradient_only=True skips the one-head ablations. An ImportanceReport: .heads, .to_json(), .table()."""
    from explorer.studies import importance as study

    return study(model, src, ref, **options)


def prune_curve(model: ExplorerModel, src, ref=None, **options):
    """Quality as heads are pruned, least important first against random orders (Michel et al. 2019, Fig. 2);
    the prune-curve command's options as keywords (kinds="enc,dec,cross,all", steps=10, seeds=3, importance=a
    report or its file). A PruningCurve: .kinds, .to_json(), .table()."""
    from explorer.studies import prune_curve as study

    return study(model, src, ref, **options)


def replicate(model: ExplorerModel, paper=None, sentences: int | None = None):
    """The replication bench: each paper's claim, its number, ours and a verdict (docs/papers.md). paper: a short
    name or a list (vaswani, voita, michel, clark, abnar_zuidema, kobayashi, xiao, olsson, jain_wallace). A Bench:
    .papers (cards), .to_json() (replication.json's form), .table()."""
    from explorer.studies import replicate as study

    return study(model, paper, sentences)


def atlas(model: ExplorerModel, text=None, **options):
    """Every head of one stack on one map (Clark et al. 2019 §6): Jensen–Shannon distances over a corpus (text: a
    path or a list of strings; default 200 captions) and their MDS layout; the atlas command's options as keywords
    (limit=, kind=, workers=). A HeadMap: .heads, .matrix(), .table(), .to_json()."""
    from explorer.atlas_studies import atlas as study

    return study(model, text, **options)


def search_heads(model: ExplorerModel, text=None, query: str = "any", key: str = "previous", **options):
    """Every head ranked by the share of attention from queries matching `query` to keys matching `key` (e.g. key=
    "previous", "same", "special", "word:dog"), with intervals and the best examples. A HeadSearch."""
    from explorer.atlas_studies import search_heads as study

    return study(model, text, query, key, **options)


def query_key_space(model: ExplorerModel, layer: int, head: int, text=None, **options):
    """One head's queries and keys in one plane, as AttentionViz draws them (projection="pca" or "tsne")."""
    from explorer.atlas_studies import query_key_space as study

    return study(model, layer, head, text, **options)
