"""What programs emit: the perf ring reader, tracepoint record decoding, perf-script and JSON
rendering, and the perf.data capture."""
