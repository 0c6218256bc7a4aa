"""evspec: the Linux perf event-specification language, parsed, checked, compiled and loaded.

This module imports nothing heavy: the parser, system model and BPF loader are imported on use.
"""

__version__ = "0.2.0"
