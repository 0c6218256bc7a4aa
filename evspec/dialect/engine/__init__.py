"""The machinery perf's parsers are emulated on: a small flex (start conditions, longest match,
REJECT, perf's columns), bison's LALR(1) tables and parse loop, and C's integer reading. Nothing
here knows perf; ``evspec.dialect``'s lexer and grammar are written on it.
"""
