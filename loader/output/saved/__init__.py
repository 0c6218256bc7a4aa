"""perf.data files: written by ``record -o`` (perf rings, BPF ring buffers, typed maps) and
read back by ``evspec script``."""
