"""The plumbing that runs a corpus analysis: the job registry, run_job (cached, on Ray workers or here) and the
explorer's own jobs."""
