"""The object terms of a BPF event checked against its object and turned into what loading needs:
``map:`` terms (``maps``: checks and the map updates), ``prog:`` terms (``programs``), ``var:``
terms (``variables``: checks and the new initial values of the global data maps), and perf's rules
for the ``__bpf_stdout__`` maps no term configures (``bpf_stdout``)."""
