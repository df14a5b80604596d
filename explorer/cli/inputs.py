"""What the commands read from their arguments: the model of --model (in its --target-language), the heads to
prune, the model's shipped importance, and the corpus of --src / --ref."""

from __future__ import annotations

import argparse

from explorer.capture.head_sets import HeadSpecError, parse_heads
from explorer.capture.input_kinds import TEXT, input_kind
from explorer.capture.inputs import InputError
from explorer.models.interface import target_languages


def opened(args: argparse.Namespace, images: bool = False):
    """The model of --model; one that reads images only where the command takes images (trace, lesson)."""
    from explorer.models.loader import open_model

    model = open_model(args.model, download=not args.offline, device=args.device)
    if input_kind(model) is not TEXT and not images:
        raise InputError(f"{args.model} reads {input_kind(model).reads}: `{args.command}` works on models of text; "
                         f"`trace --model {args.model} --image digits:N` traces an image")
    return model


def model_for(args: argparse.Namespace):
    """The model of --model, translating into --target-language where one is given (multilingual models)."""
    model = opened(args, images=args.command == "trace")
    language = getattr(args, "target_language", None)
    if language:
        languages = target_languages(model)
        if not languages:
            raise InputError(f"--target-language {language}: {args.model} translates into one language only "
                             f"({model.output_title}); the option is for multilingual models such as M2M100 and NLLB")
        if language not in languages:
            shown = ", ".join(languages[:12]) + (" …" if len(languages) > 12 else "")
            raise InputError(f"--target-language {language}: {args.model} has no such language; it knows {shown}")
        model = model.for_target_language(language)
    return model

def pruned_heads(args: argparse.Namespace, model) -> list:
    """--prune SPEC plus --prune-least-important FRACTION, as one list of heads."""
    pruned = set(parse_heads(args.prune, model))
    if args.prune_least_important:
        from explorer.analyses.corpus.pruning import importance_scores, least_important
        from explorer.capture.head_sets import all_heads

        scores = importance_scores(shipped_importance(model), args.normalisation)
        pruned |= set(least_important(scores, args.prune_least_important, all_heads(model)))
    return sorted(pruned)

def shipped_importance(model):
    """The model's head_importance.json (an ImportanceReport), or an error saying how to create it."""
    from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, analyses_folder, shipped_report

    report = shipped_report(model, IMPORTANCE_FILE)
    if report is None:
        raise HeadSpecError(f"{analyses_folder(model) / IMPORTANCE_FILE}: missing; create it with "
                            f"`python -m explorer importance --model {model.path} --src ... --ref ... --json`")
    return report

def read_corpus(args: argparse.Namespace, model) -> tuple[list[str], list[str] | None]:
    """--src (and --ref, which translation models need and language models do not take), cut to --limit."""
    from explorer.studies import examples

    sources, references, _ = examples(model, args.src, args.ref, args.limit)
    return sources, references
