"""The whole `evspec check` pipeline against the FULL column of the shared corpus: syntax, rules,
semantic checks against the corpus machine, and BPF objects in the built fixture folder — the first
finding of every string, in the order the corpus README prescribes.

The FULL column says whether a string is valid on the corpus machine ('instructions': valid, but
not countable here). What perf then does with a valid event the machine cannot count or sample
(perf record fails on 'instructions' there: EM030) is a finding of its own, checked against perf
itself in test_perf_runtime, and left out here."""

from __future__ import annotations

from pathlib import Path

import pytest

from evspec.check import CheckOptions, check_specs
from evspec.compiler.runtime import CODES as RUNTIME_CODES
from evspec.diagnostics import Source
from evspec.inputs import SpecInput


def test_full_column(corpus, bpf_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from evspec.system.fixtures import corpus_system

    monkeypatch.chdir(bpf_fixtures)
    options = CheckOptions(system=corpus_system(), mode="record", cwd=bpf_fixtures)
    mismatches = []
    for row in corpus:
        (checked,) = check_specs([SpecInput(row.string, Source("arg", index=0), 0)], options)
        errors = [d for d in checked.diagnostics if d.is_error and d.code not in RUNTIME_CODES]
        verdict, start, end = row.verdict(row.full)
        if verdict == "ok":
            got = "ok" if not errors else f"error@{errors[0].span.start}-{errors[0].span.end} {errors[0].message}"
            if errors:
                mismatches.append(f"line {row.line}: {row.string!r}: want ok, got {got}")
            continue
        if not errors:
            mismatches.append(f"line {row.line}: {row.string!r}: want {row.full}, got ok")
            continue
        first = errors[0]
        if (first.span.start, first.span.end) != (start, end):
            mismatches.append(f"line {row.line}: {row.string!r}: want {row.full}, "
                              f"got error@{first.span.start}-{first.span.end}: {first.message}")
        elif row.perf_message and first.perf_message != row.perf_message:
            mismatches.append(f"line {row.line}: {row.string!r}: perf message {first.perf_message!r}, "
                              f"want {row.perf_message!r}")
    assert not mismatches, f"{len(mismatches)} of {len(corpus)} rows differ:\n" + "\n".join(mismatches)
