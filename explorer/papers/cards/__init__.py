"""The papers of the replication bench, in the order the Papers page shows them; each module registers its papers
with explorer.papers.bench.paper."""

from explorer.papers.bench import PAPERS
from explorer.papers.cards import attention_papers, clark_papers, heads_papers, induction_papers  # noqa: F401  (they register)

__all__ = ["PAPERS"]
