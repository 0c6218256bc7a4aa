"""Where the tests' own copy of the acceptance corpus and the seed lives, and how the corpus is read.

``tests/data/corpus`` (events.tsv, its README, the BPF fixture sources and their Makefile) and
``tests/data/seed`` are copies of the project's shared references, refreshed by
``scripts/refresh_test_data.sh``; a clone without the shared folder runs every test from them.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus"
CORPUS_TSV = CORPUS / "events.tsv"
CORPUS_BPF = CORPUS / "bpf"
SEED_COMMITS = DATA / "seed" / "perf-bpf-loader-commits.txt"

#: a string that names a BPF object (COMPAT 1.5: recognised by its suffix)
BPF_PATH = re.compile(r"\.(o|obj|c)($|[/,}:])")


@dataclass(frozen=True)
class CorpusRow:
    line: int  # line number in events.tsv
    string: str
    syntax: str  # "ok" or "error@S-E: reason"
    full: str
    perf_message: str | None
    perf61: str
    note: str

    @staticmethod
    def verdict(field: str) -> tuple[str, int | None, int | None]:
        """("ok", None, None) or ("error", start, end)."""
        if field == "ok":
            return ("ok", None, None)
        head = field.split(":", 1)[0]
        start, end = head.removeprefix("error@").split("-")
        return ("error", int(start), int(end))

    @property
    def names_object(self) -> bool:
        return BPF_PATH.search(self.string) is not None


def read_corpus() -> list[CorpusRow]:
    """Every row of events.tsv, in file order (no field is quoted or escaped)."""
    rows = []
    with CORPUS_TSV.open(newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        for n, rec in enumerate(reader, start=2):
            string, syntax, full, pmsg, perf61, note = rec
            rows.append(CorpusRow(n, string, syntax, full, None if pmsg == "-" else pmsg, perf61, note))
    return rows
