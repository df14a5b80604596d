"""`python -m explorer replicate`: the replication bench — each paper's claim, its number, ours on the model, and a
verdict (explorer/papers/bench.py, explorer/papers/cards/). --json prints the object the bundled models ship as
replication.json."""

from __future__ import annotations

import argparse
import json
import textwrap

from explorer.cli.arguments import positive_int, progress_bar, with_json, with_model_path
from explorer.papers.bench import Budget


def add_options(sub: argparse.ArgumentParser) -> None:
    with_model_path(sub)
    sub.add_argument("--paper", action="append", metavar="NAME",
                     help="only this paper (repeatable): vaswani, voita, michel, clark, abnar_zuidema, kobayashi, "
                          "xiao, olsson, jain_wallace")
    sub.add_argument("--sentences", type=positive_int, default=Budget.sentences,
                     help="corpus sentences a heavy measurement uses (default %(default)s, as replication.json)")
    with_json(sub, "model", "papers")


def run(args: argparse.Namespace) -> None:
    from explorer.cli.inputs import opened
    from explorer.papers.replication import replicate

    model = opened(args)
    bar, progress = progress_bar("replicate")
    report = replicate(model, args.paper, Budget(sentences=args.sentences, progress=progress))
    bar.close()
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return
    for card in report["papers"]:
        print(f"{card['paper']} [{card['verdict']}]")
        for label, text in (("claim", card["claim"]), ("paper", f"{card['paper_value']} ({card['source']})"),
                            ("ours", card["ours"] or "—"), ("rule", card["rule"]), ("command", card["command"] or "—")):
            print(textwrap.fill(text, 116, initial_indent=f"  {label:<8}", subsequent_indent=" " * 10))
