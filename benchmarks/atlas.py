"""The head atlas as a user runs it: the map of all-MiniLM-L6-v2's 72 heads over 200 captions (the Atlas page's
largest default and `python -m explorer atlas --model all-MiniLM-L6-v2 --limit 200`), timed in this process after
the model is loaded (target ≤ 30 s on this 2-core machine, issue 62), and the search and the query–key space beside it.

    .venv/bin/python -m benchmarks.atlas
"""

from __future__ import annotations

import time

import explorer.settings as settings
from benchmarks.measured import Measured
from explorer.atlas_studies import atlas, query_key_space, search_heads
from explorer.models.data import read_lines
from explorer.models.loader import open_model

TARGET = 30.0


def main() -> None:
    measured = Measured("atlas")
    captions = read_lines(settings.CAPTIONS)[:200]
    for name in ("all-MiniLM-L6-v2", "en-de-h8"):
        model = open_model(name)
        for label, run in (("map, 200 captions", lambda model=model: atlas(model, captions)),
                           ("search (previous token), 200 captions", lambda model=model: search_heads(model, captions, "any",
                                                                                           "previous")),
                           ("query–key space, PCA, 100 captions", lambda model=model: query_key_space(model, 1, 0, captions,
                                                                                           limit=100))):
            started = time.perf_counter()
            run()
            seconds = time.perf_counter() - started
            print(f"{name} {label}: {seconds:.1f} s = {seconds / TARGET:.2f} × the {TARGET:.0f} s target",
                  flush=True)
            measured.add(f"atlas {label}, {name}", seconds, "s", TARGET)
    measured.save()


if __name__ == "__main__":
    main()
