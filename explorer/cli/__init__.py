"""attention-explorer (or python -m explorer): open the app (`app`, `serve`), translate (or generate), evaluate, trace
and analyse heads from the command line, on the
explorer's own models and on Hugging Face models (Marian, BART, M2M100/NLLB, T5, BERT, GPT-2, Llama/Qwen2/Mistral).

Every anticipated failure (bad checkpoint, unreadable or misaligned corpus, wrong head spec, empty sentence)
prints one line starting with "error:" and exits non-zero, without a traceback.

Each command's code is imported when it runs (`lazy`): the parser and --help load no torch (~0.3 s instead of ~3 s).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# The analyses' subcommands, each in a module of its own (add_options, run; its heavy imports inside run)
import explorer.cli.atlas as cli_atlas
import explorer.cli.detect as cli_detect
import explorer.cli.faithfulness as cli_faithfulness
import explorer.cli.focus as cli_focus
import explorer.cli.lesson as cli_lesson
import explorer.cli.parser as options
import explorer.cli.patch as cli_patch
import explorer.cli.replicate as cli_replicate
import explorer.cli.sinks as cli_sinks
from explorer.cli.parser import Command, parser_for
from explorer.cli.registered import registered_commands
from explorer.models.errors import ExplorerError


def lazy(module: str, function: str):
    """A command's run function, imported from `module` when the command runs."""
    def run(args: argparse.Namespace) -> None:
        getattr(importlib.import_module(module), function)(args)
    run.__qualname__ = f"{module}.{function}"
    return run


run_translate = lazy("explorer.cli.text_commands", "run_translate")
run_evaluate = lazy("explorer.cli.text_commands", "run_evaluate")
run_trace = lazy("explorer.cli.text_commands", "run_trace")
run_roles = lazy("explorer.cli.heads", "run_roles")
run_evolution = lazy("explorer.cli.heads", "run_evolution")
run_heads = lazy("explorer.cli.heads", "run_heads")
run_importance = lazy("explorer.cli.heads", "run_importance")
run_prune_curve = lazy("explorer.cli.heads", "run_prune_curve")


# Every command, registered once: name → its line in --help, the function that adds its options, the function that
# runs it. The parser and main() both read it, so a new command is one entry; the order is --help's.
COMMANDS = {
    "app": Command("open the explorer in a browser, on this machine only (http://localhost:8501; options: app --help)",
                   options.launch_options, lazy("explorer.cli.launch", "run_app")),
    "serve": Command("share the explorer with a class or a lab: every interface, read-only visitors, an access token "
                     "(options: serve --help)", options.launch_options, lazy("explorer.cli.launch", "run_serve")),
    "translate": Command("print one translation per sentence", options.translate_options, run_translate),
    "generate": Command("print the continuation of each text (GPT-2; for a translation model the same as translate)",
                        options.generate_options, run_translate),
    "evaluate": Command("BLEU and chrF on a parallel corpus (loss and perplexity on a text file for BERT and GPT-2)",
                        options.evaluate_options, run_evaluate),
    "trace": Command("save every attention, mask, PE and decoding step of a sentence (or every attention over an "
                     "image's patches)", options.trace_options, run_trace),
    "roles": Command("classify heads as positional / syntactic / rare-token", options.roles_options, run_roles),
    "evolution": Command("head statistics at every training epoch, from its snapshots", options.evolution_options,
                         run_evolution),
    "heads": Command("the table of heads: roles, their scores and importance, from the checkpoint's head_roles.json "
                     "and head_importance.json", options.heads_options, run_heads),
    "importance": Command("gradient-based and ablation importance of every head", options.importance_options,
                          run_importance),
    "prune-curve": Command("BLEU (perplexity for BERT and GPT-2) as heads are pruned, by importance versus random "
                           "order", options.prune_curve_options, run_prune_curve),
    "detect": Command("head detectors: previous-token, duplicate-token, induction and prefix-matching scores on "
                      "repeated random tokens, with chance", cli_detect.add_options, cli_detect.run),
    "focus": Command(cli_focus.HELP, cli_focus.add_options, cli_focus.run),
    "patch": Command("activation patching: the share of the clean output's log-probability each head and each "
                     "layer's output restores in a corrupted run", cli_patch.add_options, cli_patch.run),
    "faithfulness": Command("Spearman correlation of attention, rollout, flow and norms with leave-one-out "
                            "importance, over a corpus", cli_faithfulness.add_options, cli_faithfulness.run),
    "sinks": Command("attention sinks: each head's share of attention on the first token, special tokens and "
                     "punctuation, by weight and by norm", cli_sinks.add_options, cli_sinks.run),
    "replicate": Command("the replication bench: each paper's claim and number beside the same measurement on this "
                         "model, with a verdict", cli_replicate.add_options, cli_replicate.run),
    "lesson": Command(cli_lesson.HELP, cli_lesson.add_options, cli_lesson.run),
    "atlas": Command(cli_atlas.ATLAS_HELP, cli_atlas.atlas_options, lazy("explorer.cli.atlas", "run_atlas")),
    "search-heads": Command(cli_atlas.SEARCH_HELP, cli_atlas.search_options, lazy("explorer.cli.atlas", "run_search")),
    **registered_commands(),        # one for each analysis in explorer/analyses/sentence/ (explorer/cli/registered.py)
}


def build_parser() -> argparse.ArgumentParser:
    return parser_for(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["app"], ["serve"]):        # the launcher reads its own options (and --help) itself
        from explorer.cli.launch import launch

        return launch(argv[0], argv[1:])
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:             # a mistyped option after a command: that command's usage, not the top level's
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        COMMANDS[args.command].run(args)
    except ExplorerError as error:    # every error a person can cause (models/errors.py); a bug keeps its traceback
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  stdout for the rest of the process
    return 0
