"""Every command of `python -m explorer`, registered once: its name, its one-line help, the function that adds its
options and the function that runs it. The parser (build_parser) and the dispatch (explorer.cli.main) both read
COMMANDS, so a new command is a module with `add_options` and `run` and one entry here; the order of the entries
is the order of `--help`."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from explorer.cli import detect, faithfulness, heads, parser, patch, replicate, sinks


@dataclass(frozen=True)
class Command:
    help: str
    add_options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]


def in_package(name: str) -> Callable[[argparse.Namespace], None]:
    """A run function of explorer/cli/__init__.py (translate, evaluate, trace). That module imports this registry,
    so the function is looked up when the command runs, not when this module is imported."""
    def run(args: argparse.Namespace) -> None:
        import explorer.cli

        getattr(explorer.cli, name)(args)
    run.__name__ = name
    return run


COMMANDS: dict[str, Command] = {
    "translate": Command("print one translation per sentence", parser.translate_options, in_package("run_translate")),
    "generate": Command("print the continuation of each text (GPT-2; for a translation model the same as translate)",
                        parser.generate_options, in_package("run_translate")),
    "evaluate": Command("BLEU and chrF on a parallel corpus (loss and perplexity on a text file for BERT and GPT-2)",
                        parser.evaluate_options, in_package("run_evaluate")),
    "trace": Command("save every attention, mask, PE and decoding step of a sentence (or every attention over an "
                     "image's patches)", parser.trace_options, in_package("run_trace")),
    "roles": Command("classify heads as positional / syntactic / rare-token", parser.roles_options, heads.run_roles),
    "evolution": Command("head statistics at every training epoch, from its snapshots", parser.evolution_options,
                         heads.run_evolution),
    "heads": Command("the table of heads: roles, their scores and importance, from the checkpoint's head_roles.json "
                     "and head_importance.json", parser.heads_options, heads.run_heads),
    "importance": Command("gradient-based and ablation importance of every head", parser.importance_options,
                          heads.run_importance),
    "prune-curve": Command("BLEU (perplexity for BERT and GPT-2) as heads are pruned, by importance versus random "
                           "order", parser.prune_curve_options, heads.run_prune_curve),
    "detect": Command("head detectors: previous-token, duplicate-token, induction and prefix-matching scores on "
                      "repeated random tokens, with chance", detect.add_options, detect.run),
    "patch": Command("activation patching: the share of the clean output's log-probability each head and each "
                     "layer's output restores in a corrupted run", patch.add_options, patch.run),
    "faithfulness": Command("Spearman correlation of attention, rollout, flow and norms with leave-one-out "
                            "importance, over a corpus", faithfulness.add_options, faithfulness.run),
    "sinks": Command("attention sinks: each head's share of attention on the first token, special tokens and "
                     "punctuation, by weight and by norm", sinks.add_options, sinks.run),
    "replicate": Command("the replication bench: each paper's claim and number beside the same measurement on this "
                         "model, with a verdict", replicate.add_options, replicate.run),
}


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m explorer",
                                  description="Look inside a Transformer: the bundled English→German models, or a "
                                              "Hugging Face Marian, BART, M2M100/NLLB, T5, BERT or GPT-2 folder.")
    subcommands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        command.add_options(subcommands.add_parser(name, help=command.help))
    return top
