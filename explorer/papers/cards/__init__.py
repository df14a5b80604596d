"""The papers of the replication bench, in the order the Papers page shows them; each module registers its papers
with explorer.papers.bench.paper."""

from explorer.papers.bench import PAPERS

# The order of these imports is the Papers page's order: each module registers its papers as it loads.
# isort: off
from explorer.papers.cards import heads_papers  # noqa: F401
from explorer.papers.cards import clark_papers  # noqa: F401
from explorer.papers.cards import attention_papers  # noqa: F401
from explorer.papers.cards import induction_papers  # noqa: F401
from explorer.papers.cards import atlas_papers  # noqa: F401
# isort: on

__all__ = ["PAPERS"]
