"""Statistics over a corpus: head roles, importance, pruning curves, permutation tests, intervals, and the records
and files they are kept in."""
