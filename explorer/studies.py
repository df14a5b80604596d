"""The corpus studies of heads as notebook calls, with the command line's arguments: head roles (Voita et al. 2019),
head importance and the pruning curve (Michel et al. 2019), and the replication bench. The commands `roles`,
`importance`, `prune-curve` and `replicate` call these same functions and print what they return: a typed record
whose .to_json() is the command's --json and .table() a pandas view.

A corpus is a file's path (plain or .gz, one sentence a line, as the command line takes it) or a list of strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.analyses.defaults import DEFAULT_NORMALISATION, RARE_COMMON_TOP, Thresholds
from explorer.capture.inputs import InputError

if TYPE_CHECKING:
    from explorer.analyses.corpus.results import ImportanceReport, PruningCurve, RolesReport
    from explorer.analyses.jobs.jobs import Ran
    from explorer.models.interface import ExplorerModel
    from explorer.papers.bench import Bench

Corpus = str | Path | Sequence[str]
Progress = Callable[[float], None] | None
DEFAULTS = Thresholds()


def corpus_lines(corpus: Corpus, what: str) -> tuple[list[str], str]:
    """(its lines, its name): a path is read as the command line reads a file; a list is taken as it is."""
    from explorer.models.data import read_lines

    if isinstance(corpus, (str, Path)):
        return read_lines(corpus), Path(corpus).name
    lines = list(corpus)
    if not all(isinstance(line, str) for line in lines):
        raise InputError(f"{what}: give a file's path or a list of strings")
    return lines, f"{len(lines)} {what} given"


def examples(model: ExplorerModel, src: Corpus, ref: Corpus | None = None, limit: int | None = None
             ) -> tuple[list[str], list[str] | None, str]:
    """(sources, references or None, the corpus's name): a translator needs references aligned with the sources,
    a language model takes none; the first `limit` of them."""
    from explorer.analyses.corpus.corpus import corpus_of_lines
    from explorer.analyses.corpus.corpus_scoring import corpus_task

    translates = corpus_task(model).needs_references
    if translates and ref is None:
        raise InputError(f"{model.name} translates: give the references (--ref FILE, ref=) aligned with the sources")
    if not translates and ref is not None:
        raise InputError(f"{model.name} is a language model: it is scored on the sources alone (its loss and "
                         "perplexity); leave out the references (--ref, ref=)")
    sources, name = corpus_lines(src, "sources")
    references, ref_name = corpus_lines(ref, "references") if ref is not None else (None, "")
    return (*corpus_of_lines(sources, name, references, ref_name, limit), name)


def roles_job(model: ExplorerModel, text: Corpus | None = None, conllu: str | Path | None = None,
              limit: int | None = None, positional: float = DEFAULTS.positional,
              syntactic_margin: float = DEFAULTS.syntactic_margin,
              syntactic_min_count: int = DEFAULTS.syntactic_min_count, rare_rate: float = DEFAULTS.rare_rate,
              rare_over_chance: float = DEFAULTS.rare_over_chance, rare_common_top: int = RARE_COMMON_TOP,
              workers: int = 1, ray_address: str | None = None, progress: Progress = None) -> Ran:
    from explorer.analyses.jobs.jobs import run_job
    from explorer.capture.treebank import read_trees
    from explorer.models.data import CorpusError

    if text is None and conllu is None:
        raise InputError("roles needs sentences (--text FILE, text=), dependency trees (--conllu FILE, conllu=) or "
                         "both")
    sentences, text_name = corpus_lines(text, "sentences") if text is not None else (None, "")
    if sentences is not None:
        sentences = sentences[:limit]
        if not any(s.strip() for s in sentences):
            raise CorpusError(f"{text_name}: no sentences")
    trees = read_trees(conllu, limit) if conllu is not None else None
    thresholds = Thresholds(positional, syntactic_margin, syntactic_min_count, rare_rate, rare_over_chance)
    return run_job("roles", model, {"sentences": sentences, "trees": trees},
                   {"thresholds": asdict(thresholds), "text_name": text_name,
                    "treebank_name": Path(conllu).name if conllu is not None else "", "common_top": rare_common_top},
                   workers, ray_address, progress, cache_folder=None)


def roles(model: ExplorerModel, text: Corpus | None = None, conllu: str | Path | None = None, **options
          ) -> RolesReport:
    """Every head's roles (positional, syntactic, rare-token; Voita et al. 2019) over sentences and/or a CoNLL-U
    treebank, with the command's thresholds as keywords (positional=0.8, rare_rate=…, limit=, workers=). A
    RolesReport: .heads (each head's roles and the scores behind them), .to_json(), .table()."""
    return roles_job(model, text, conllu, **options).result


def importance_job(model: ExplorerModel, src: Corpus, ref: Corpus | None = None, limit: int | None = None,
                   gradient_only: bool = False, workers: int = 1, ray_address: str | None = None,
                   progress: Progress = None) -> Ran:
    from explorer.analyses.corpus.shipped_analyses import ROLES_FILE, shipped_report
    from explorer.analyses.jobs.jobs import run_job

    sources, references, name = examples(model, src, ref, limit)
    shipped_roles = shipped_report(model, ROLES_FILE)
    known_roles = {head.spec: head.roles for head in shipped_roles.heads} if shipped_roles else {}
    return run_job("importance", model, {"sources": sources, "references": references},
                   {"ablation": not gradient_only, "corpus_name": name, "roles": known_roles},
                   workers, ray_address, progress, cache_folder=None)


def importance(model: ExplorerModel, src: Corpus, ref: Corpus | None = None, **options) -> ImportanceReport:
    """Each head's importance (Michel et al. 2019): the gradient of the loss with respect to its gate, and, unless
    gradient_only=True, the loss and BLEU (or perplexity) change when it alone is masked. ref: the references a
    translator is scored against. An ImportanceReport: .heads, .to_json(), .table()."""
    return importance_job(model, src, ref, **options).result


def pruning_order(model: ExplorerModel, importance_report: ImportanceReport | str | Path | None,
                  sources: list[str], references: list[str] | None, name: str, warn: Callable[[str], None],
                  workers: int = 1, ray_address: str | None = None) -> ImportanceReport:
    """The importance to prune by: a report (or its JSON file), else the model's head_importance.json, else
    gradient importance on this corpus itself (in-sample, said through warn)."""
    from explorer.analyses.corpus.results import ImportanceReport
    from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, shipped_report
    from explorer.analyses.jobs.jobs import run_job

    if isinstance(importance_report, ImportanceReport):
        return importance_report
    if importance_report is not None:
        path = Path(importance_report)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise InputError(f"{path}: not a readable importance report ({error.__class__.__name__}); write one "
                             "with `python -m explorer importance ... --json`") from None
        if not isinstance(document, dict) or not isinstance(document.get("heads"), list):
            raise InputError(f"{path}: not an importance report (no list of heads)")
        return ImportanceReport.from_json(document, source=str(path))
    shipped = shipped_report(model, IMPORTANCE_FILE)
    if shipped is not None:
        return shipped
    warn(f"{model.name} has no {IMPORTANCE_FILE}; pruning in the order of gradient importance on {name} itself "
         "(in-sample; --importance FILE or importance= gives an order measured elsewhere)")
    return run_job("importance", model, {"sources": sources, "references": references},
                   {"ablation": False, "corpus_name": name, "roles": {}}, workers, ray_address,
                   cache_folder=None).result


def prune_curve_job(model: ExplorerModel, src: Corpus, ref: Corpus | None = None, limit: int | None = None,
                    importance: ImportanceReport | str | Path | None = None, kinds: str = "enc,dec,cross,all",
                    steps: int = 10, seeds: int = 3, normalisation: str = DEFAULT_NORMALISATION,
                    compare_normalisations: bool = False, workers: int = 1, ray_address: str | None = None,
                    progress: Progress = None, warn: Callable[[str], None] | None = None) -> Ran:
    import warnings

    from explorer.analyses.corpus.pruning import CURVE_KINDS, NORMALISATIONS, importance_scores
    from explorer.analyses.jobs.corpus_jobs import order_of
    from explorer.analyses.jobs.jobs import run_job
    from explorer.capture.head_sets import HeadSpecError

    chosen = tuple(k.strip() for k in kinds.split(",") if k.strip())
    unknown = [k for k in chosen if k not in CURVE_KINDS]
    if unknown or not chosen:
        raise HeadSpecError(f"kinds: {', '.join(unknown) or 'nothing'} is not one of {', '.join(CURVE_KINDS)}")
    if normalisation not in NORMALISATIONS:
        raise InputError(f"normalisation {normalisation!r}: expected one of {', '.join(NORMALISATIONS)}")
    sources, references, name = examples(model, src, ref, limit)
    report = pruning_order(model, importance, sources, references, name, warn or warnings.warn, workers,
                           ray_address)
    orders = {"importance": order_of(importance_scores(report, normalisation))}
    if compare_normalisations:
        orders.update({other: order_of(importance_scores(report, other)) for other in NORMALISATIONS
                       if other != normalisation})
    ran = run_job("curve", model, {"sources": sources, "references": references},
                  {"orders": orders, "kinds": list(chosen), "steps": steps, "seeds": max(0, seeds),
                   "corpus_name": name, "importance_corpus": report.corpus.name, "measure": normalisation},
                  workers, ray_address, progress, cache_folder=None)
    if not ran.result.kinds:
        raise HeadSpecError(f"kinds {kinds}: {model.name} has none of these kinds of attention")
    return ran


def prune_curve(model: ExplorerModel, src: Corpus, ref: Corpus | None = None, **options) -> PruningCurve:
    """Quality as heads are pruned, least important first against random orders (Michel et al. 2019, Fig. 2), per
    kind (kinds="enc,dec,cross,all"), in steps (steps=10, seeds=3). importance: the order (a report, its JSON file;
    default the model's shipped one). A PruningCurve: .kinds, .to_json(), .table()."""
    return prune_curve_job(model, src, ref, **options).result


def replicate(model: ExplorerModel, paper: str | list[str] | None = None, sentences: int | None = None,
              progress: Progress = None) -> Bench:
    """The replication bench on this model: each paper's claim, its number, ours and a verdict (holds, partly,
    does not, inconclusive, not measurable: docs/papers.md). paper: one or several of the bench's short names
    (vaswani, voita …); sentences: the corpus sentences a heavy measurement uses. A Bench: .cards, .to_json()
    (replication.json's form), .table()."""
    from explorer.papers.bench import Bench, Budget
    from explorer.papers.replication import replicate as run

    names = [paper] if isinstance(paper, str) else paper
    return Bench.from_json(run(model, names, Budget(sentences=sentences or Budget.sentences, progress=progress)))
