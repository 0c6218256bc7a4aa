"""Golden files for every renderer over one hand-made set of diagnostics.

Run with ``EVSPEC_BLESS=1`` to rewrite the files under tests/golden/render/ after an intended
change, then review the diff.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest
from golden_files import GOLDEN as GOLDEN_ROOT
from golden_files import check_golden

from evspec import codes
from evspec.codes import CodeInfo
from evspec.diagnostics import Diagnostic, Label, Source, error, warning
from evspec.render.explain import explain
from evspec.render.github import render_github
from evspec.render.jsonfmt import render_json
from evspec.render.perf import BPF_MAP_HINT, render_perf
from evspec.render.sarif import render_sarif
from evspec.render.text import render_text, summary_line
from evspec.span import Span

GOLDEN = GOLDEN_ROOT / "render"

ARG0 = Source("arg", index=0)
ARG1 = Source("arg", index=1)
EVENTS_TXT = Source("file", path="ci/events.txt", line=3)

LONG_LIST = (
    "cpu-clock,task-clock,page-faults,minor-faults,major-faults,dummy,cs,bogus,"
    "cpu-clock,task-clock,page-faults,minor-faults,major-faults"
)
BPF_EVT = "./test_bpf_map_2.c/map:pmu_map.event=evt/"
BPF_123 = "./test_bpf_map_2.c/map:pmu_map.event=123/"
UNICODE_TAB = "cpu-clock,\t事件:ü,task-clock"
DUP_NAME = "bpf-output/no-inherit,name=evt/,cpu-clock/name=evt/"
TWO_TERMS = "software/foo=1,bar=2/"
SOFTWARE_TERMS = "valid terms: config,config1,config2,name,period,percore,metric-id"
# 2,000 repeated terms: one finding with its repeats, the string excerpted around the span
LONG_TERMS = "cpu-clock/" + ",".join(["time"] * 2000) + ",bogus/"


@dataclass(frozen=True)
class Case:
    name: str
    diags: tuple[Diagnostic, ...]
    perf_columns: dict[int, int] = field(default_factory=dict)  # position in diags -> perf's column


CASES = [
    Case("plain_syntax", (
        error("ES001", "unexpected ',': expected an event", Span(10, 11), perf_message="parser error",
              event="cpu-clock,,task-clock", source=ARG0),
    )),
    Case("end_of_input", (
        error("ES002", "expected a modifier after ':'", Span(7, 7), perf_message="parser error",
              event="cycles:", source=EVENTS_TXT),
    )),
    Case("long_middle", (
        error("EM001", "unknown event 'bogus'", Span(LONG_LIST.index("bogus"), LONG_LIST.index("bogus") + 5),
              perf_message="parser error", help=("'perf list' shows the events of this machine",),
              event=LONG_LIST, source=ARG1),
    )),
    Case("unicode_tab", (
        error("ES013", "unknown modifier 'ü'", Span(14, 15),
              labels=(Label(Span(11, 13), "modifiers of this event"),),
              help=("modifiers are u, k, h, I, G, H, p, P, S, D, W, e, b",), perf_message="parser error",
              event=UNICODE_TAB, source=ARG0),
    )),
    Case("labels_help_notes", (
        error("EM020", "two events named 'evt'", Span(47, 50),
              labels=(Label(Span(27, 30), "first named here"), Label(Span(32, 41), "this event")),
              help=("give each event its own name=",),
              notes=("map terms find events by name, so 'map:NAME.event=evt' would be ambiguous",
                     "perf 6.1 accepts duplicate names\nand uses the first match"),
              event=DUP_NAME, source=EVENTS_TXT),
    )),
    Case("two_errors", (
        error("EM010", "unknown term 'foo' for PMU 'software'", Span(9, 12),
              perf_message="unknown term 'foo' for pmu 'software'", help=(SOFTWARE_TERMS,),
              event=TWO_TERMS, source=ARG0),
        error("EM010", "unknown term 'bar' for PMU 'software'", Span(15, 18),
              perf_message="unknown term 'bar' for pmu 'software'", help=(SOFTWARE_TERMS,),
              event=TWO_TERMS, source=ARG0),
    )),
    Case("warning", (
        warning("WS001", "modifier 'p' has no effect on a software event", Span(10, 11),
                help=("drop the 'p'",), event="cpu-clock:p", source=ARG0),
    )),
    Case("bpf_event_not_found", (
        error("EB031", "no earlier event named 'evt'", Span(37, 40),
              labels=(Label(Span(23, 30), "map 'pmu_map'"),),
              help=("define it in an earlier option: -e bpf-output/no-inherit,name=evt/",),
              perf_message="Event not found for map setting", perf_help=BPF_MAP_HINT,
              event=BPF_EVT, source=ARG1),
    ), perf_columns={0: 23}),
    Case("repeated_in_a_long_string", (
        warning("WS002", "term 'time' given twice; the last value is used", Span(15, 19),
                labels=(Label(Span(10, 14), "first given here"),), help=("remove one of them",),
                event=LONG_TERMS, source=ARG0, repeats=tuple(Span(i, i + 4) for i in range(20, 10_000, 5))),
        error("EM010", "unknown term 'bogus' for PMU 'software'", Span(10_005, 10_010),
              labels=(Label(Span(0, 9), "this event"),), perf_message="unknown term 'bogus' for pmu 'software'",
              help=(SOFTWARE_TERMS,), event=LONG_TERMS, source=EVENTS_TXT),
    )),
    Case("bpf_value_type", (
        error("EB030", "map 'pmu_map' takes an event name in .event, not a number", Span(37, 40),
              perf_message="Incorrect value type for map", perf_help=BPF_MAP_HINT,
              event=BPF_123, source=ARG0),
    )),
]
ALL = Case("all", tuple(d for case in CASES for d in case.diags))

CATALOGUE = {
    "ES001": CodeInfo("ES001", "unexpected token", "The event string has a token where none fits.",
                      "cpu-clock,,task-clock", "Remove the stray character."),
    "ES002": CodeInfo("ES002", "unexpected end of the event string", "The string stops mid-event.",
                      "cycles:", "Complete or remove the trailing part."),
    "ES013": CodeInfo("ES013", "unknown modifier", "A modifier letter perf does not know.", "cycles:q"),
    "EM001": CodeInfo("EM001", "unknown event", "No event of that name on the system.", "bogus",
                      "Check 'perf list'."),
    "EM010": CodeInfo("EM010", "unknown PMU term", "The PMU has no format or term of that name."),
    "EM020": CodeInfo("EM020", "duplicate event name", "Two events share one name=."),
    "WS001": CodeInfo("WS001", "modifier without effect", "The modifier changes nothing here.",
                      "cpu-clock:p", "Drop it."),
    "EB030": CodeInfo("EB030", "wrong value type for a map term",
                      ".value takes a number, .event an event name.",
                      "./x.o/map:pmu_map.event=123/", "Use the kind of value the option takes."),
    # EB031 is deliberately missing: a code without catalogue entry still gets a rule.
}


@pytest.fixture()
def fixed_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codes, "catalogue", lambda: dict(CATALOGUE))


def _perf(case: Case) -> str:
    columns = {id(case.diags[i]): col for i, col in case.perf_columns.items()}
    return render_perf(case.diags, column_of=lambda d: columns.get(id(d), d.span.start))


RENDERERS: dict[str, tuple[str, Callable[[Case], str]]] = {
    "text": ("txt", lambda c: render_text(c.diags) + summary_line(c.diags) + "\n"),
    "text-color": ("txt", lambda c: render_text(c.diags, color=True)),
    "perf": ("txt", _perf),
    "json": ("json", lambda c: render_json(c.diags) + "\n"),
    "sarif": ("sarif", lambda c: render_sarif(c.diags) + "\n"),
    "github": ("txt", lambda c: render_github(c.diags)),
}


def _cases_for(renderer: str) -> Sequence[Case]:
    # The colour variant only needs a few shapes; perf reports one string at a time.
    if renderer == "text-color":
        return [c for c in CASES if c.name in ("unicode_tab", "labels_help_notes", "warning")]
    return [*CASES, ALL] if renderer != "perf" else CASES


@pytest.mark.parametrize(
    ("renderer", "case"),
    [(r, c) for r in RENDERERS for c in _cases_for(r)],
    ids=lambda v: v if isinstance(v, str) else v.name,
)
def test_golden(renderer: str, case: Case, fixed_catalogue: None) -> None:
    suffix, render = RENDERERS[renderer]
    check_golden(f"render/{renderer}/{case.name}.{suffix}", render(case))


def test_golden_explain(fixed_catalogue: None) -> None:
    check_golden("render/explain/EB030.txt", explain("eb030") + "\n")


def test_every_golden_file_is_checked() -> None:
    """A renamed or dropped case must not leave a stale golden file behind."""
    expected = {f"{r}/{c.name}.{RENDERERS[r][0]}" for r in RENDERERS for c in _cases_for(r)}
    expected.add("explain/EB030.txt")
    present = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*") if p.is_file()}
    assert present == expected
