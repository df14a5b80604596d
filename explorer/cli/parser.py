"""The command line's parser: a Command (one-line help, options, run) and the parser built from the registry of
commands (COMMANDS in explorer/cli/__init__.py); the options of the commands written in explorer/cli/__init__.py and
explorer/cli/heads.py, one function per command, and the option groups many commands share. An analysis module
with a command of its own (detect.py, patch.py …) keeps its options beside its run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from explorer.analyses.defaults import RARE_COMMON_TOP, Thresholds
from explorer.capture.sampling_options import add_sampling_arguments
from explorer.cli.arguments import fraction, positive_int, with_casing, with_json, with_model_path, with_workers


@dataclass(frozen=True)
class Command:
    help: str                                                   # its line in `python -m explorer --help`
    add_options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]


def program_name() -> str:
    """How the person started it: `attention-explorer` (the console command) or `python -m explorer`."""
    return "attention-explorer" if Path(sys.argv[0]).name == "attention-explorer" else "python -m explorer"


def parser_for(commands: dict[str, Command]) -> argparse.ArgumentParser:
    """The parser of `python -m explorer`: a subcommand per registered command, in the registry's order."""
    parser = argparse.ArgumentParser(prog=program_name(),
                                     description="Look inside a Transformer: the bundled English→German models and digit "
                                                 "ViT, or a Hugging Face Marian, BART, M2M100/NLLB, T5, BERT, RoBERTa, "
                                                 "GPT-2, Llama, Qwen2, Mistral or ViT model (a folder or a hub id).")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.commands = {}            # each command's own parser: main() reports a wrong option with its usage
    for name, command in commands.items():
        parser.commands[name] = subcommands.add_parser(name, help=command.help)
        command.add_options(parser.commands[name])
    return parser


def launch_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("options", nargs=argparse.REMAINDER, help="the launcher's options: --port N, --models …")


def with_normalisation(sub: argparse.ArgumentParser) -> None:
    from explorer.analyses.defaults import DEFAULT_NORMALISATION, NORMALISATIONS

    sub.add_argument("--normalisation", choices=list(NORMALISATIONS), default=DEFAULT_NORMALISATION,
                     help="order heads by raw gradient importance or by importance normalised per layer "
                          "(Michel et al.); default %(default)s, which pruned better on held-out data")

def with_corpus(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--src", required=True, type=Path,
                     help="source sentences, one per line (plain or .gz); for BERT and GPT-2 the text to score")
    sub.add_argument("--ref", type=Path, help="references aligned with --src (translation models; not for BERT/GPT-2)")
    sub.add_argument("--limit", type=positive_int, help="only the first N lines (sentence pairs)")

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
        with_casing(sub)


def translate_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub)
    add_sampling_arguments(sub)
    sub.add_argument("text", nargs="+", metavar="TEXT", help="the sentences to translate (the model's source language)")

def generate_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub)
    add_sampling_arguments(sub)
    sub.add_argument("text", nargs="+", metavar="TEXT", help="prompts")

def evaluate_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub)
    with_corpus(sub)
    with_workers(sub)
    with_json(sub, "seconds")

def trace_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub)
    source = sub.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="the text the model reads: a sentence to translate, a prompt to continue, a "
                                       "sentence with a mask to fill or a sentence to embed")
    source.add_argument("--image", metavar="IMAGE",
                        help="for an image model: digits:N (the held-out split's digit N), FILE.npy (an array of the "
                             "model's size, 0 … 1) or a picture file (made grey and scaled to the model's size)")
    sub.add_argument("--out", required=True, type=Path, help="FILE.npz or FILE.json")
    sub.add_argument("--top-k", type=positive_int, default=10, help="probabilities kept per decoding step")
    sub.add_argument("--words", action="store_true",
                     help="save attention over words, not pieces (Clark et al. 2019: to a word the sum over its "
                          "pieces, from a word the mean; explorer/capture/words.py)")

def roles_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub, decoding=False)
    sub.add_argument("--text", type=Path,
                     help="in-domain sentences in the model's source language, one per line (plain or .gz), for the "
                          "positional, rare-token and confidence statistics (without it: the treebank's sentences)")
    sub.add_argument("--conllu", type=Path, help="dependency trees, CoNLL-U (plain or .gz), for syntactic roles")
    sub.add_argument("--limit", type=positive_int, help="only the first N sentences of each file")
    with_json(sub, "heads", "thresholds", "corpus", "seconds")
    with_workers(sub)
    defaults = Thresholds()
    sub.add_argument("--positional", type=float, default=defaults.positional,
                     help="share of tokens whose top weight sits at one offset (default %(default)s)")
    sub.add_argument("--syntactic-margin", type=float, default=defaults.syntactic_margin,
                     help="accuracy above the positional baseline (default %(default)s)")
    sub.add_argument("--syntactic-min-count", type=positive_int, default=defaults.syntactic_min_count,
                     help="occurrences a relation needs (default %(default)s)")
    sub.add_argument("--rare-rate", type=float, default=defaults.rare_rate,
                     help="share of sentences whose top token is the rarest (default %(default)s)")
    sub.add_argument("--rare-over-chance", type=float, default=defaults.rare_over_chance,
                     help="and at least this multiple of chance (default %(default)s)")
    sub.add_argument("--rare-common-top", type=int, default=RARE_COMMON_TOP, metavar="N",
                     help="count rare-token hits only in sentences whose rarest token is not among the N most "
                          "frequent (Voita et al. 2019, §5.3; 0: every sentence; default %(default)s)")

def evolution_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub, decoding=False)
    sub.add_argument("--snapshots", required=True, type=Path, help="folder of epoch-N.safetensors files")
    sub.add_argument("--text", required=True, type=Path, help="in-domain sentences (the model's source language), one per line")
    sub.add_argument("--every", type=positive_int, default=1, help="every N-th epoch (and the last)")
    sub.add_argument("--limit", type=positive_int, help="only the first N sentences")

def heads_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub, decoding=False)
    with_json(sub, "model", "heads")

def importance_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub, decoding=False)
    with_corpus(sub)
    with_workers(sub)
    sub.add_argument("--gradient-only", action="store_true", help="skip the (slower) one-head ablations")
    with_json(sub, "heads", "corpus", "seconds")

def prune_curve_options(sub: argparse.ArgumentParser) -> None:
    with_model(sub, decoding=False)
    with_corpus(sub)
    with_workers(sub)
    sub.add_argument("--importance", type=Path, metavar="FILE",
                     help="the order to prune in: a report of the importance command (--json); default: the "
                          "model's head_importance.json, or, where it has none, gradient importance measured on "
                          "this corpus (in-sample)")
    sub.add_argument("--kinds", default="enc,dec,cross,all", help="comma-separated from enc, dec, cross, all")
    sub.add_argument("--steps", type=positive_int, default=10, help="points after the unpruned one (default 10)")
    sub.add_argument("--seeds", type=int, default=3, help="random orders to average (default 3)")
    with_normalisation(sub)
    sub.add_argument("--compare-normalisations", action="store_true",
                     help="also draw the order of the other normalisation")
    with_json(sub, "kinds", "metric", "corpus", "seconds")
