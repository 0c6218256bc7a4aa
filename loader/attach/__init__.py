"""Attaching loaded programs: the dispatch by attach kind and tracepoints (``attacher``), kprobes
and uprobes with their tracefs entries and argument prologues, XDP and tc hooks (``net``)."""
