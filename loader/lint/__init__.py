"""Why ``evspec check`` refuses a BPF event, with no syscall: the whole offline check of a BPF
event against its object (``event``), what ``record`` refuses of an object before its first
system call (``libbpf_rules``), the notes on what evspec does differently from libbpf
(``libbpf_differences``), and the object terms of an event (``terms``: ``map:``, ``prog:`` and
``var:`` terms, checked and turned into what loading needs)."""
