"""What is computed from traces and corpora: rollout and flow, norms, faithfulness, sinks, the logit lens, patching,
detectors, head roles and importance, pruning, and the same analyses on Ray."""
