"""Running a model on what a person typed and keeping everything it computed: the trace, the inputs, translation and
decoding, sampling, the head sets, the caches and the exports."""
