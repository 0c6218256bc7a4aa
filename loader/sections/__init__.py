"""Program section names (``SEC("...")``), with no syscall: their grammar's parser (``names``, over
the committed tables ``lalr`` runs; ``tablegen`` writes them), libbpf's section table
(``libbpf``), the probe arguments a section fetches (``probe_args``) and the perf events a
program's section makes ``record`` open (``program_events``)."""
