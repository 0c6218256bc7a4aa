"""What ``record`` prints from the objects' maps at exit and every ``--interval``: histograms of
integer slots and tables of counters, found from the programs' instructions and the BTF
(``detect``), read (and cleared per interval) from the kernel (``read``), rendered as text
(``histogram``, ``table``) or JSON (``json_form``); ``printer`` is the hook ``record`` calls."""
