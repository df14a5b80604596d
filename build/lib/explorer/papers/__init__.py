"""The replication bench: each paper's claim beside the same measurement on the open model."""
