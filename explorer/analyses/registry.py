"""Analyses registered once. A module in explorer/analyses/sentence/ that defines `ANALYSIS = Analysis(...)` is found
here, and from that one definition:

- the command line has a command of its name (`attention-explorer NAME --model … --text …`, its options, `--json`,
  and `--src FILE` for the mean over a corpus: explorer/cli/registered.py);
- the notebook API runs it (`explorer.analyse(NAME, model, sentence)`);
- the Heads page has a tab of its title with its options as widgets and its figure
  (pages/components/registered_analysis_section.py);
- the corpus job `registered` averages it over a corpus, on Ray workers or here (explorer/analyses/jobs/corpus_jobs.py);
- the Glossary defines its terms, and docs/analyses.md lists it (scripts/docs_lists.py writes the list).

`run(model, trace, **options)` takes the model first, the sentence's trace second (one order for every analysis),
and returns a record whose type says how it is drawn (explorer/figures/registered.py) and printed (`table()`).
A module here imports no torch at its top: building the command line's parser reads every ANALYSIS.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import explorer.analyses.sentence as sentence_analyses


@dataclass(frozen=True)
class Option:
    """One option of an analysis: `--NAME` on the command line, a widget on the page, a keyword in the notebook.
    Its type is its default's (bool: a switch; int, float: a number; str with choices: one of them)."""

    name: str
    default: bool | int | float | str
    help: str
    choices: tuple[str, ...] = ()


def _every_model(model) -> bool:
    return True


@dataclass(frozen=True)
class Analysis:
    name: str                                   # the command's name and the page's key: lower case, dashes
    title: str                                  # the Heads page's tab
    help: str                                   # one line: --help, and the tab's caption
    run: Callable[..., Any]                     # run(model, trace, **options) → a record with table() and to_json()
    applies: Callable[[Any], bool] = _every_model   # what it needs of a model: a capability, never a class
    options: tuple[Option, ...] = ()
    terms: Mapping[str, str] = field(default_factory=dict)     # glossary term → its definition in plain words
    reads: str = "the sentence's attention weights"            # what of the trace it reads, for the docs' list

    def defaults(self) -> dict[str, Any]:
        return {option.name: option.default for option in self.options}

    def checked(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options with the defaults filled in; ValueError naming an option this analysis does not have."""
        unknown = set(options) - {option.name for option in self.options}
        if unknown:
            known = ", ".join(option.name for option in self.options) or "none"
            raise ValueError(f"{self.name} has no option {', '.join(sorted(unknown))}; its options: {known}")
        return {**self.defaults(), **options}


def defines_an_analysis(module: pkgutil.ModuleInfo) -> bool:
    """Whether a module of explorer/analyses/sentence/ assigns ANALYSIS at its top, read from its source: the folder's
    other analyses import torch, which the command line's parser (built on every call, --help too) must not wait for."""
    spec = module.module_finder.find_spec(module.name, None)        # type: ignore[call-arg]
    origin = spec.origin if spec else None
    return bool(origin) and re.search(r"^ANALYSIS\s*=", Path(origin).read_text(encoding="utf-8"), re.MULTILINE) is not None


@cache
def registered() -> dict[str, Analysis]:
    """Every registered analysis by name, in the order of their modules' names."""
    found: dict[str, Analysis] = {}
    modules = [module for module in pkgutil.iter_modules(sentence_analyses.__path__) if defines_an_analysis(module)]
    for module in sorted(modules, key=lambda module: module.name):
        analysis = getattr(importlib.import_module(f"{sentence_analyses.__name__}.{module.name}"), "ANALYSIS", None)
        if isinstance(analysis, Analysis):
            if analysis.name in found:
                raise ValueError(f"two analyses are called {analysis.name!r}")
            found[analysis.name] = analysis
    return found


def analysis_named(name: str) -> Analysis:
    """The analysis called `name`; KeyError naming the ones there are."""
    analyses = registered()
    if name not in analyses:
        raise KeyError(f"no analysis is called {name!r}; registered: {', '.join(analyses) or 'none'}")
    return analyses[name]
