"""The papers of the replication bench, in the order the Papers page shows them; each module registers its papers
with explorer.papers.bench.paper."""

from explorer.papers.bench import PAPERS

# isort: off   (the order of these imports is the Papers page's order: each module registers its papers as it loads)
from explorer.papers.cards import (
    attention_papers,  # noqa: F401
    clark_papers,  # noqa: F401
    heads_papers,  # noqa: F401
    induction_papers,  # noqa: F401
)

# isort: on

__all__ = ["PAPERS"]
