"""Runs pytest for the job: the traced baseline of a module's tests, and its tests under one mutant.

Each run is a fresh interpreter with this folder first on PYTHONPATH, so that sitecustomize serves
the mutant (to the test process and to every Python subprocess a test starts) and pytest_mutation
traces or selects tests. Results of the baseline are cached under build/mutation/, keyed by the
contents of the module, its test files, the tests' shared helpers and the tracing plugin.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from config import HERE, REPO, Module

CACHE = REPO / "build" / "mutation"
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


class BaselineError(Exception):
    """The module's tests fail without any mutant: no mutant can be judged."""


@dataclass(frozen=True)
class Baseline:
    lines: dict[str, frozenset[int]]
    durations: dict[str, float]

    def covering(self, first: int, last: int) -> list[str]:
        """The tests that execute any of the lines, fastest first; all of them when the lines run
        while the module is imported (a table built by a function at import)."""
        wanted = set(range(first, last + 1))
        if not wanted.isdisjoint(self.lines.get("", ())):
            return self.all_tests()
        tests = [t for t, lines in self.lines.items() if t and not wanted.isdisjoint(lines)]
        return sorted(tests, key=lambda t: self.durations.get(t, 0.0))

    def all_tests(self) -> list[str]:
        return sorted((t for t in self.lines if t), key=lambda t: self.durations.get(t, 0.0))


@dataclass(frozen=True)
class Outcome:
    status: str  # killed, timeout, survived, error
    seconds: float
    detail: str  # the failing test, or what went wrong


_JOB_VARS = ("EVSPEC_MUTANT_MODULE", "EVSPEC_MUTANT_ID", "EVSPEC_MUTATION_TRACE", "EVSPEC_MUTATION_SELECT")


def _env_base() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _JOB_VARS}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    env.setdefault("CI", "true")
    return env


def _env(module: Module, **extra: str) -> dict[str, str]:
    return {**_env_base(), "EVSPEC_MUTANT_FILE": str(module.file), **extra}


_PYTEST = ["-q", "-p", "no:cacheprovider", "-p", "pytest_mutation"]


def _pytest(args: list[str], env: dict[str, str], timeout: float | None) -> tuple[int | None, str, float]:
    """Exit code (None on timeout), output, seconds; the whole process group is ended on timeout."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *_PYTEST, *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out, time.perf_counter() - start
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out, time.perf_counter() - start


class _ForkServer:
    """One forkserver.py process for the job's mutant runs, started on first use."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def run(self, args: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str, float]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, str(HERE / "forkserver.py")], cwd=REPO, env=_env_base(),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            atexit.register(self.proc.kill)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with tempfile.NamedTemporaryFile(dir=CACHE, suffix=".out", delete=False) as tmp:
            output = tmp.name
        start = time.perf_counter()
        request = {"args": [*_PYTEST, *args], "env": env, "output": output, "timeout": timeout}
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
            if not answer:
                raise RuntimeError("the mutation fork server ended")
            return (
                json.loads(answer)["code"],
                Path(output).read_text(errors="replace"),
                time.perf_counter() - start,
            )
        finally:
            os.unlink(output)


_SERVER = _ForkServer()


def _deselected(module: Module) -> list[str]:
    return [arg for test in module.deselect for arg in ("--deselect", test)]


def _digest(module: Module) -> str:
    h = hashlib.sha256()
    helpers = sorted(p for p in (REPO / "tests").glob("*.py") if not p.name.startswith("test_"))
    files = [module.file, *(REPO / t for t in module.tests), *helpers, HERE / "pytest_mutation.py"]
    for path in dict.fromkeys(files):
        h.update(str(path).encode())
        h.update(path.read_bytes())
    h.update("\n".join(module.deselect).encode())
    return h.hexdigest()[:16]


def baseline(module: Module, log=print) -> Baseline:  # noqa: ANN001 - any print-like callable
    """The module's tests run once without a mutant, traced; cached while nothing they read changes."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = CACHE / f"{module.name}.baseline.{_digest(module)}.json"
    if not cached.exists():
        log(f"{module.name}: baseline run of {len(module.tests)} test files, traced")
        for stale in CACHE.glob(f"{module.name}.baseline.*.json"):
            stale.unlink()
        with tempfile.NamedTemporaryFile(dir=CACHE, suffix=".json", delete=False) as tmp:
            trace = tmp.name
        for attempt in (1, 2):  # a test disturbed by another run on the machine gets a second try
            code, out, _ = _pytest([*module.tests, *_deselected(module)], _env(module, EVSPEC_MUTATION_TRACE=trace), None)
            if code == 0:
                break
            log(f"{module.name}: baseline attempt {attempt} failed (exit {code})")
        if code != 0:
            Path(trace).unlink(missing_ok=True)
            failed = "\n".join(_FAILED.findall(out)) or out[-3000:]
            raise BaselineError(f"{module.name}: its tests fail without a mutant (exit {code}):\n{failed}")
        os.replace(trace, cached)
    data = json.loads(cached.read_text())
    lines = {t: frozenset(ls) for t, ls in data["lines"].items()}
    return Baseline(lines=lines, durations=data["durations"])


def run_mutant(
    module: Module, mutant_id: str | None, tests: list[str], timeout: float, stop_first: bool = True
) -> Outcome:
    """The given tests (node ids or files) under one mutant (None: the module as it is)."""
    CACHE.mkdir(parents=True, exist_ok=True)  # (a fresh clone has no build/)
    with tempfile.NamedTemporaryFile("w", dir=CACHE, suffix=".select", delete=False) as f:
        f.write("\n".join(tests) + "\n")
        select = f.name
    files = list(dict.fromkeys(t.split("::", 1)[0] for t in tests))
    mutant = (
        {}
        if mutant_id is None
        else {"EVSPEC_MUTANT_MODULE": module.import_name, "EVSPEC_MUTANT_ID": mutant_id}
    )
    env = _env(module, EVSPEC_MUTATION_SELECT=select, **mutant)
    try:
        args = [*(["-x"] if stop_first else []), "-rfE", *files, *_deselected(module)]
        code, out, seconds = _SERVER.run(args, env, timeout)
    finally:
        os.unlink(select)
    if code is None:
        return Outcome("timeout", seconds, f"over {timeout:.0f} s")
    failed = _FAILED.findall(out)
    if code == 0:
        return Outcome("survived", seconds, "")
    if code in (1, 2) and (failed or code == 2):
        return Outcome("killed", seconds, failed[0] if failed else "collection error")
    return Outcome("error", seconds, f"pytest exit {code}: {out.strip().splitlines()[-1:]}")
