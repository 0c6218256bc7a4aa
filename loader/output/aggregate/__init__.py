"""What ``record`` prints from the objects' maps at exit and every ``--interval``: histograms of
integer slots and tables of counters, found from the programs' instructions and the BTF
(``detect``), read (and cleared per interval) from the kernel (``read``), rendered as text
(``histogram``, ``table``) or JSON; ``printer`` puts them together and ``hook`` is what
``record`` calls (at exit, and from a thread every interval). The terms that shape them are
checked in ``loader/lint/terms/print_terms.py``."""
