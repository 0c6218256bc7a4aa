"""Mutation testing of the modules that decide evspec's data; slow, outside the CI path.

    run.py [MODULE...] [--survivors] [--report]  sample, run, one line per module and the total
    run.py --report-only                         write docs/mutation-report.md from the last runs
    run.py core --list                           the mutants of a module, with their ids
    run.py core --apply ID [--tests T...]        show one mutant and run the module's tests on it
    run.py --pins [MODULE...]                    each pinned test fails under its mutant

Modules, their tests and the sample sizes are in mutation.toml; equivalent mutants, with the reason,
in equivalent.toml; the tests written to kill a mutant in pins.toml. Run it with the virtual
environment's python, from anywhere.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

from config import REPO, Config, ConfigError, Module, load_config
from operators import MutationPoint, mutation_points
from runner import CACHE, Baseline, BaselineError, Outcome, baseline, run_mutant

KILLED = ("killed", "timeout")


def points_of(module: Module) -> list[MutationPoint]:
    return mutation_points(module.file.read_text(encoding="utf-8"), str(module.file))


def sampled(config: Config, module: Module, points: list[MutationPoint]) -> list[MutationPoint]:
    """A fixed sample: the same mutants every run while the module's source stays the same, and
    a larger sample holds the smaller one."""
    order = list(range(len(points)))
    random.Random(f"{config.seed}:{module.name}").shuffle(order)
    return [points[i] for i in sorted(order[: module.sample])]


def check_equivalents(config: Config, module: Module, points: list[MutationPoint]) -> None:
    by_id = {p.id: p for p in points}
    for mid, entry in config.equivalents.get(module.name, {}).items():
        point = by_id.get(mid)
        if point is None or entry.mutation != describe(point):
            now = describe(point) if point else "no such mutant"
            raise ConfigError(
                f"equivalent.toml [{module.name}] {mid}: says '{entry.mutation}', the module has '{now}'"
            )


def describe(point: MutationPoint) -> str:
    return f"{point.before} -> {point.after}"


def tests_for(point: MutationPoint, base: Baseline) -> list[str]:
    if not point.in_body:
        return base.all_tests()
    return base.covering(point.line, point.end_line)


def timeout_for(config: Config, tests: list[str], base: Baseline) -> float:
    return max(
        config.timeout_min, config.timeout_factor * sum(base.durations.get(t, 1.0) for t in tests) + 10
    )


def _source_digest(module: Module) -> str:
    return hashlib.sha256(module.file.read_bytes()).hexdigest()[:16]


def _results_file(module: Module) -> Path:
    return CACHE / f"{module.name}.results.json"


def run_module(config: Config, module: Module, reuse_killed: bool, log) -> dict:  # noqa: ANN001
    points = points_of(module)
    check_equivalents(config, module, points)
    chosen = sampled(config, module, points)
    base = baseline(module, log)
    previous: dict[str, dict] = {}
    if reuse_killed and _results_file(module).exists():
        old = json.loads(_results_file(module).read_text())
        if old.get("source") == _source_digest(module):
            previous = {k: v for k, v in old["results"].items() if v["status"] == "killed"}
    results: dict[str, dict] = {}
    start = time.monotonic()
    record = {
        "module": module.name,
        "source": _source_digest(module),
        "total_points": len(points),
        "points": {p.id: asdict(p) for p in chosen},
        "results": results,
        "seconds": 0.0,
    }
    for n, point in enumerate(chosen, 1):
        if point.id in previous:
            results[point.id] = previous[point.id]
            continue
        if time.monotonic() - start > module.max_seconds:
            results[point.id] = asdict(Outcome("not run", 0.0, f"over the {module.max_seconds:.0f} s cap"))
            continue
        tests = tests_for(point, base)
        if not tests:
            outcome = Outcome("survived", 0.0, "no test executes this line")
        else:
            timeout = timeout_for(config, tests, base)
            outcome = run_mutant(module, point.id, tests, timeout)
            if outcome.status == "timeout":  # a loaded machine, or a mutant that loops: once more, twice as long
                outcome = run_mutant(module, point.id, tests, 2 * timeout)
        results[point.id] = asdict(outcome)
        record["seconds"] = time.monotonic() - start
        _results_file(module).write_text(json.dumps(record, indent=1))  # a stopped run can be resumed
        log(f"  [{n}/{len(chosen)}] {point.id:<40} {outcome.status:<8} {outcome.seconds:5.1f}s {outcome.detail[:70]}")
    record["seconds"] = time.monotonic() - start
    _results_file(module).write_text(json.dumps(record, indent=1))
    return record


def score(config: Config, record: dict) -> dict:
    equivalents = config.equivalents.get(record["module"], {})
    counts = {"killed": 0, "equivalent": 0, "survived": 0, "not run": 0, "error": 0, "wrong equivalent": 0}
    for mid, result in record["results"].items():
        status = result["status"]
        if mid in equivalents:
            counts["wrong equivalent" if status in KILLED else "equivalent"] += 1
        elif status in KILLED:
            counts["killed"] += 1
        else:
            counts[status] += 1
    counts["non-equivalent"] = (
        counts["killed"] + counts["survived"] + counts["error"] + counts["wrong equivalent"]
    )
    return counts


def line(name: str, counts: dict, record: dict | None = None) -> str:
    total = counts["non-equivalent"]
    pct = 100.0 * counts["killed"] / total if total else 100.0
    text = f"{name:<16} {counts['killed']:>4}/{total:<4} killed {pct:6.1f}%"
    extra = [f"{counts['equivalent']} equivalent", f"{counts['survived']} survived"]
    extra += [f"{counts[k]} {k}" for k in ("not run", "error", "wrong equivalent") if counts[k]]
    if record is not None:
        extra.insert(0, f"{len(record['results'])} of {record['total_points']} mutants")
        extra.append(f"{record['seconds'] / 60:.1f} min")
    return f"{text}  ({', '.join(extra)})"


def write_report(config: Config, records: list[dict], path: Path) -> None:
    out = [
        "# Mutation testing report",
        "",
        "Written by `tools/mutation/run.py --report` (see README, Development). A module's score is",
        "the killed share of its non-equivalent sampled mutants (\"X of N mutants\": the fixed sample",
        "of mutation.toml, all of them for CO-RE); a timeout, retried once with twice the time, counts",
        "as killed. The minutes are those of the last run, which with --survivors reuses earlier kills.",
        "Equivalent mutants are listed with their reason below (equivalent.toml); the survivors with",
        "theirs (survivors.toml).",
        "",
        "```",
    ]
    total = {}
    for record in records:
        counts = score(config, record)
        out.append(line(record["module"], counts, record))
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    if records:
        out.append(line("total", total))
    out.append("```")
    pinned = [line for m in config.modules if _pins_log(m).exists() for line in _pins_log(m).read_text().splitlines()]
    if pinned:
        out += ["", "## Tests written for survivors, each failing under its mutant (`run.py --pins`)", "",
                "Each module's pinned tests pass without a mutant; each line is one of them run under the", "mutant it was written for.", "", "```", *pinned, "```"]  # fmt: skip
    for record in records:
        module = config.modules[record["module"]]
        equivalents = config.equivalents.get(module.name, {})
        rows = []
        for mid, result in record["results"].items():
            point = record["points"][mid]
            if mid in equivalents:
                why = f"equivalent: {equivalents[mid].reason}"
            elif result["status"] in KILLED:
                continue
            else:
                note = config.notes.get(module.name, {}).get(mid)
                why = f"{result['status']}: {note or result['detail'] or 'no test of the module fails'}"
            mutation = f"{point['before']} -> {point['after']}".replace("|", "\\|").replace("\n", " ")
            rows.append(f"| `{mid}` | {point['line']} | `{mutation}` | {why} |")
        out += ["", f"## {module.name} ({module.path})", ""]
        out += (
            ["| mutant | line | mutation | why it lives |", "|---|---|---|---|", *rows]
            if rows
            else ["No survivor."]
        )
    path.write_text("\n".join(out) + "\n")


def apply_one(config: Config, module: Module, mutant_id: str, tests: list[str]) -> int:
    point = {p.id: p for p in points_of(module)}.get(mutant_id)
    if point is None:
        print(f"{module.name}: no mutant {mutant_id} (see --list)", file=sys.stderr)
        return 2
    print(f"{module.path}:{point.line}: {mutant_id} ({point.kind}): {describe(point)}")
    if not tests:
        tests = tests_for(point, baseline(module))
    outcome = run_mutant(
        module, mutant_id, tests, timeout_for(config, tests, baseline(module)), stop_first=False
    )
    print(f"{outcome.status} in {outcome.seconds:.1f} s {outcome.detail}")
    return 0 if outcome.status in KILLED else 1


def _pins_log(name: str) -> Path:
    return CACHE / f"{name}.pins.txt"


def check_pins(config: Config, names: list[str]) -> int:
    """The pinned tests of a module pass on it as it is, and each fails under its mutant; the
    lines are kept in build/mutation/MODULE.pins.txt for the report."""
    bad = 0
    for name in names:
        lines: list[str] = []

        def say(text: str, lines: list[str] = lines) -> None:
            print(text, flush=True)
            lines.append(text)

        module = config.modules[name]
        points = {p.id: p for p in points_of(module)}
        pins = config.pins.get(name, {})
        if not pins:
            continue
        every = list(dict.fromkeys(t for tests in pins.values() for t in tests))
        clean = run_mutant(module, None, every, 900, stop_first=False)
        if clean.status != "survived":
            say(f"{name:<16} the pinned tests fail without a mutant ({clean.detail})")
            bad += 1
            continue
        for mid, tests in pins.items():
            if mid not in points:
                say(f"{name:<16} {mid:<40} no such mutant in {module.path}")
                bad += 1
                continue
            for test in tests:
                outcome = run_mutant(module, mid, [test], 600, stop_first=False)
                verdict = "fails under it" if outcome.status in KILLED else f"does NOT fail ({outcome.status})"
                bad += outcome.status not in KILLED
                say(f"{name:<16} {mid:<40} {test}: {verdict}")
        CACHE.mkdir(parents=True, exist_ok=True)
        _pins_log(name).write_text("\n".join(lines) + "\n")
    return 1 if bad else 0


def _last_records(config: Config) -> list[dict]:
    return [json.loads(_results_file(m).read_text()) for m in config.modules.values() if _results_file(m).exists()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("modules", nargs="*", help="module names of mutation.toml (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants (* marks the sampled ones)")
    parser.add_argument("--apply", metavar="ID", help="run the tests under the one mutant ID")
    parser.add_argument(
        "--tests", nargs="+", default=[], help="with --apply: these tests (default: those reaching it)"
    )
    parser.add_argument(
        "--pins", action="store_true", help="check that each test of pins.toml fails under its mutant"
    )
    parser.add_argument(
        "--survivors", action="store_true", help="reuse kills of the last run; rerun the rest"
    )
    parser.add_argument("--report", nargs="?", const="docs/mutation-report.md", metavar="FILE",
                        help="write the report (default docs/mutation-report.md) from the runs' results")  # fmt: skip
    parser.add_argument("--report-only", action="store_true", help="write the report from the last runs, run nothing")
    parser.add_argument("--quiet", action="store_true", help="no line per mutant")
    args = parser.parse_args(argv)
    try:
        config = load_config()
        names = args.modules or list(config.modules)
        unknown = [n for n in names if n not in config.modules]
        if unknown:
            parser.error(
                f"no module {', '.join(unknown)} in mutation.toml (have: {', '.join(config.modules)})"
            )
        if args.list:
            for name in names:
                chosen = {
                    p.id for p in sampled(config, config.modules[name], points_of(config.modules[name]))
                }
                for p in points_of(config.modules[name]):
                    print(f"{'*' if p.id in chosen else ' '} {name} {p.id:<40} {p.line:>5} {describe(p)}")
            return 0
        if args.apply:
            if len(names) != 1:
                parser.error("--apply needs exactly one module")
            return apply_one(config, config.modules[names[0]], args.apply, args.tests)
        if args.pins:
            return check_pins(config, names)
        if args.report_only:
            write_report(config, _last_records(config), REPO / (args.report or "docs/mutation-report.md"))
            return 0
        log = (lambda *_: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
        records = []
        broken = []
        for name in names:
            try:
                record = run_module(config, config.modules[name], args.survivors, log)
            except BaselineError as e:
                print(f"{name:<16} not judged: {e}", flush=True)
                broken.append(name)
                continue
            print(line(name, score(config, record), record), flush=True)
            records.append(record)
        total: dict[str, int] = {}
        for record in records:
            for k, v in score(config, record).items():
                total[k] = total.get(k, 0) + v
        print(line("total", total))
        if args.report:
            write_report(config, _last_records(config), REPO / args.report)
        return 1 if broken else 0
    except (ConfigError, BaselineError) as e:
        print(f"mutation: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
