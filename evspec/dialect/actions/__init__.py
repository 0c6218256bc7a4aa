"""What perf does while it parses, per release: the semantic actions that add events (4.7-6.6:
``events``; 6.12+: ``pmu_actions``; BPF objects: ``bpf``), config terms, the error slot perf
prints from, and the machine's tables these and the lexer read (perf's PMU list, its built-in
events, legacy cache names, PMU-alias symbols).
"""
