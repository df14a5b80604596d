"""Attention entropy: how spread out each head's attention is. For one query, H = −Σ_k α_k log₂ α_k over the keys it
may see: 0 bits when all of its weight is on one key, log₂(n) when it is spread evenly over n keys. A head's number
is the mean over its queries. Low entropy marks a focused head (a previous-token or rare-token head, Voita et al.
2019); high entropy a head that averages (Clark et al. 2019, §3 and Fig. 4, "broad" heads of BERT's first layers).

`normalised` divides each query's entropy by log₂ of the keys it may see, so 1 is uniform attention whatever the
sentence's length; a query that sees one key only (the decoder's first position) has no such number and is left out.
"""

from __future__ import annotations

import warnings

import numpy as np

from explorer.analyses.records import HeadScores
from explorer.analyses.registry import Analysis, Option


def query_entropy(pattern: np.ndarray, visible: np.ndarray, normalised: bool) -> np.ndarray:
    """[..., query, key] weights → [..., query] entropies in bits; NaN for a pruned head's rows (NaN weights) and,
    normalised, for a query that sees one key."""
    weights = pattern.astype(np.float64)
    logs = np.log2(weights, out=np.zeros_like(weights), where=weights > 0)
    entropy = -(weights * logs).sum(axis=-1)
    entropy[np.isnan(weights).any(axis=-1)] = np.nan
    if normalised:
        most = np.log2(visible.sum(axis=-1).astype(np.float64))
        entropy = np.divide(entropy, most, out=np.full_like(entropy, np.nan), where=most > 0)
    return entropy


def head_entropy(model, trace, normalised: bool = False) -> HeadScores:
    """Each head's mean entropy over the sentence's queries, for every attention kind the trace has."""
    scores = {}
    for kind, values in trace.attention.items():
        rows = query_entropy(values.pattern, trace.masks[kind], normalised)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # a pruned head: every row NaN, its mean NaN
            scores[kind] = np.nanmean(rows, axis=-1)
    unit = "share of the most (uniform attention = 1)" if normalised else "bits"
    return HeadScores(f"attention entropy ({unit})", scores, reading="low: the head looks at one key; high: it "
                      "spreads its attention evenly over the keys (log₂ of their count, or 1 normalised)")


ANALYSIS = Analysis(
    name="entropy", title="Attention entropy",
    help="each head's attention entropy (bits), the mean over the sentence's queries: low focuses, high spreads out",
    run=head_entropy,
    options=(Option("normalised", False, "divide by log₂ of the keys each query may see (1 = uniform attention)"),),
    terms={"attention entropy": "How spread out a query's attention is: −Σ α log₂ α over the keys, in bits. 0 when "
                                "all the weight is on one key; log₂ n when it is spread evenly over n keys."},
)
