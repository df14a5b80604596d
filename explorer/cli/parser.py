"""The command line's parser: every subcommand with its options and their help (python -m explorer --help)."""

from __future__ import annotations

import argparse
from pathlib import Path

from explorer.analyses.roles import Thresholds
from explorer.capture.sampling_options import add_sampling_arguments
from explorer.cli.arguments import fraction, positive_int, with_model_path, with_workers
# The analyses' subcommands, each in a module of its own (add_command, run)
import explorer.cli.detect as cli_detect
import explorer.cli.faithfulness as cli_faithfulness
import explorer.cli.patch as cli_patch
import explorer.cli.replicate as cli_replicate
import explorer.cli.sinks as cli_sinks

def with_normalisation(sub: argparse.ArgumentParser) -> None:
    from explorer.analyses.pruning import DEFAULT_NORMALISATION, NORMALISATIONS

    sub.add_argument("--normalisation", choices=list(NORMALISATIONS), default=DEFAULT_NORMALISATION,
                     help="order heads by raw gradient importance or by importance normalised per layer "
                          "(Michel et al.); default %(default)s, which pruned better on held-out data")

def with_corpus(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--src", required=True, type=Path,
                     help="source sentences, one per line (plain or .gz); for BERT and GPT-2 the text to score")
    sub.add_argument("--ref", type=Path, help="references aligned with --src (translation models; not for BERT/GPT-2)")
    sub.add_argument("--limit", type=positive_int, help="only the first N lines (sentence pairs)")

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m explorer",
                                     description="Look inside a Transformer: the bundled English→German models, or a "
                                                 "Hugging Face Marian, BART, M2M100/NLLB, T5, BERT or GPT-2 folder.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_model(sub: argparse.ArgumentParser, decoding: bool = True) -> None:
        with_model_path(sub)
        if decoding:
            sub.add_argument("--beam", type=positive_int, default=1, help="beam size (1: greedy, the default)")
            sub.add_argument("--length-penalty", type=float, default=0.6, metavar="ALPHA",
                             help="beam score = log-prob / ((5 + length) / 6) ** ALPHA (GNMT; default 0.6)")
            sub.add_argument("--prune", default="", metavar="SPEC",
                             help="heads to mask, e.g. enc.0.3,dec.2.*,cross.1.5")
            sub.add_argument("--prune-least-important", type=fraction, metavar="FRACTION",
                             help="also mask this fraction of all heads, least important first (the checkpoint's "
                                  "head_importance.json, gradient importance)")
            with_normalisation(sub)
            sub.add_argument("--target-language", metavar="CODE",
                             help="the output language of a multilingual model (M2M100: de, fr …; NLLB: deu_Latn …)")
            sub.add_argument("--keep-casing", action="store_true",
                             help="feed all-caps or all-lower-case sentences as typed (by default they are put in "
                                  "sentence case, as the training captions are written)")

    translate = commands.add_parser("translate", help="print one translation per sentence")
    with_model(translate)
    add_sampling_arguments(translate)
    translate.add_argument("text", nargs="+", metavar="TEXT", help="English sentences")
    generate = commands.add_parser("generate", help="print the continuation of each text (GPT-2; for a translation "
                                                    "model the same as translate)")
    with_model(generate)
    add_sampling_arguments(generate)
    generate.add_argument("text", nargs="+", metavar="TEXT", help="prompts")

    evaluate = commands.add_parser("evaluate", help="BLEU and chrF on a parallel corpus (loss and perplexity on a text "
                                                    "file for BERT and GPT-2)")
    with_model(evaluate)
    with_corpus(evaluate)
    with_workers(evaluate)
    evaluate.add_argument("--json", action="store_true", help="print exactly one JSON object")

    trace = commands.add_parser("trace", help="save every attention, mask, PE and decoding step of a sentence "
                                              "(or every attention over an image's patches)")
    with_model(trace)
    source = trace.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="the English sentence")
    source.add_argument("--image", metavar="IMAGE",
                        help="for an image model: digits:N (the held-out split's digit N), FILE.npy (an array of the "
                             "model's size, 0 … 1) or a picture file (made grey and scaled to the model's size)")
    trace.add_argument("--out", required=True, type=Path, help="FILE.npz or FILE.json")
    trace.add_argument("--top-k", type=positive_int, default=10, help="probabilities kept per decoding step")
    trace.add_argument("--words", action="store_true",
                       help="save attention over words, not pieces (Clark et al. 2019: to a word the sum over its "
                            "pieces, from a word the mean; explorer/capture/words.py)")
    roles = commands.add_parser("roles", help="classify heads as positional / syntactic / rare-token")
    with_model(roles, decoding=False)
    roles.add_argument("--text", type=Path,
                       help="in-domain English sentences, one per line (plain or .gz), for the positional, rare-token "
                            "and confidence statistics (without it: the treebank's sentences)")
    roles.add_argument("--conllu", type=Path, help="dependency trees, CoNLL-U (plain or .gz), for syntactic roles")
    roles.add_argument("--limit", type=positive_int, help="only the first N sentences of each file")
    roles.add_argument("--json", action="store_true", help="print exactly one JSON object")
    with_workers(roles)
    defaults = Thresholds()
    roles.add_argument("--positional", type=float, default=defaults.positional,
                       help="share of tokens whose top weight sits at one offset (default %(default)s)")
    roles.add_argument("--syntactic-margin", type=float, default=defaults.syntactic_margin,
                       help="accuracy above the positional baseline (default %(default)s)")
    roles.add_argument("--syntactic-min-count", type=positive_int, default=defaults.syntactic_min_count,
                       help="occurrences a relation needs (default %(default)s)")
    roles.add_argument("--rare-rate", type=float, default=defaults.rare_rate,
                       help="share of sentences whose top token is the rarest (default %(default)s)")
    roles.add_argument("--rare-over-chance", type=float, default=defaults.rare_over_chance,
                       help="and at least this multiple of chance (default %(default)s)")

    evolution = commands.add_parser("evolution", help="head statistics at every training epoch, from its snapshots")
    with_model(evolution, decoding=False)
    evolution.add_argument("--snapshots", required=True, type=Path, help="folder of epoch-N.safetensors files")
    evolution.add_argument("--text", required=True, type=Path, help="in-domain English sentences, one per line")
    evolution.add_argument("--every", type=positive_int, default=1, help="every N-th epoch (and the last)")
    evolution.add_argument("--limit", type=positive_int, help="only the first N sentences")

    heads = commands.add_parser("heads", help="the table of heads: roles, their scores and importance, from the "
                                              "checkpoint's head_roles.json and head_importance.json")
    with_model(heads, decoding=False)
    heads.add_argument("--json", action="store_true", help="one JSON object: head → its row")

    importance = commands.add_parser("importance", help="gradient-based and ablation importance of every head")
    with_model(importance, decoding=False)
    with_corpus(importance)
    with_workers(importance)
    importance.add_argument("--gradient-only", action="store_true", help="skip the (slower) one-head ablations")
    importance.add_argument("--json", action="store_true", help="print exactly one JSON object")
    curve = commands.add_parser("prune-curve", help="BLEU (perplexity for BERT and GPT-2) as heads are pruned, by "
                                                    "importance versus random order")
    with_model(curve, decoding=False)
    with_corpus(curve)
    with_workers(curve)
    curve.add_argument("--importance", type=Path, metavar="FILE",
                       help="the order to prune in: a report of the importance command (--json); default: the "
                            "model's head_importance.json, or, where it has none, gradient importance measured on "
                            "this corpus (in-sample)")
    curve.add_argument("--kinds", default="enc,dec,cross,all", help="comma-separated from enc, dec, cross, all")
    curve.add_argument("--steps", type=positive_int, default=10, help="points after the unpruned one (default 10)")
    curve.add_argument("--seeds", type=int, default=3, help="random orders to average (default 3)")
    with_normalisation(curve)
    curve.add_argument("--compare-normalisations", action="store_true",
                       help="also draw the order of the other normalisation")
    curve.add_argument("--json", action="store_true", help="print exactly one JSON object")
    cli_detect.add_command(commands)        # head detectors (explorer/cli/detect.py)
    cli_patch.add_command(commands)         # activation patching (explorer/cli/patch.py)
    cli_faithfulness.add_command(commands)  # attention against leave-one-out (explorer/cli/faithfulness.py)
    cli_sinks.add_command(commands)         # attention sinks (explorer/cli/sinks.py)
    cli_replicate.add_command(commands)     # the replication bench (explorer/cli/replicate.py)
    return parser
