"""The job's pytest plugin: the baseline's line trace per test, and the tests one mutant runs.

EVSPEC_MUTATION_TRACE=FILE (with EVSPEC_MUTANT_FILE naming the module's source): record, for each
test, the lines of that file it executes and its duration, as JSON in FILE.
EVSPEC_MUTATION_SELECT=FILE: run only the test ids listed in FILE, in its order (all the tests of
their files when one of them is not collected under the mutant).
Both runs use a hypothesis profile without example database and with fixed examples, so that a
mutant's verdict does not depend on earlier runs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

try:
    from hypothesis import settings
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    settings = None

if settings is not None:
    settings.register_profile("evspec-mutation", database=None, derandomize=True, deadline=None)
    settings.load_profile("evspec-mutation")

_TRACE = os.environ.get("EVSPEC_MUTATION_TRACE")
_SELECT = os.environ.get("EVSPEC_MUTATION_SELECT")


class _LineTrace:
    """Lines of one source file executed, per test (and outside tests, under "")."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)
        self.lines: dict[str, set[int]] = {"": set()}
        self.durations: dict[str, float] = {}
        self.current: set[int] = self.lines[""]
        self._files: dict[str, bool] = {}

    def _global(self, frame, event, arg):  # noqa: ANN001 - sys.settrace's signature
        filename = frame.f_code.co_filename
        mine = self._files.get(filename)
        if mine is None:
            mine = self._files[filename] = os.path.realpath(filename) == self.path
        if not mine:
            return None
        self.current.add(frame.f_lineno)
        return self._local

    def _local(self, frame, event, arg):  # noqa: ANN001
        if event == "line":
            self.current.add(frame.f_lineno)
        return self._local

    def start(self) -> None:
        threading.settrace(self._global)
        sys.settrace(self._global)

    def write(self, out: str) -> None:
        data = {"lines": {k: sorted(v) for k, v in self.lines.items()}, "durations": self.durations}
        with open(out, "w", encoding="utf-8") as f:
            json.dump(data, f)


_tracer = _LineTrace(os.environ["EVSPEC_MUTANT_FILE"]) if _TRACE else None
if _tracer is not None:
    _tracer.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ANN001
    if _tracer is None:
        yield
        return
    _tracer.current = _tracer.lines.setdefault(item.nodeid, set())
    start = time.perf_counter()
    yield
    _tracer.durations[item.nodeid] = time.perf_counter() - start
    _tracer.current = _tracer.lines[""]


def pytest_sessionfinish(session, exitstatus):  # noqa: ANN001
    if _tracer is not None:
        sys.settrace(None)
        _tracer.write(_TRACE)


def _rank(nodeid: str, order: dict[str, int]) -> int | None:
    """Where a test comes in the selection: its own id, its file's or its parametrized function's."""
    if nodeid in order:
        return order[nodeid]
    for prefix, sep in ((nodeid.split("::", 1)[0], "::"), (nodeid.split("[", 1)[0], "[")):
        if prefix in order and nodeid.startswith(prefix + sep):
            return order[prefix]
    return None


def pytest_collection_modifyitems(session, config, items):  # noqa: ANN001
    if not _SELECT:
        return
    with open(_SELECT, encoding="utf-8") as f:
        order = {nodeid: i for i, nodeid in enumerate(line.rstrip("\n") for line in f) if nodeid}
    ranks = {item.nodeid: _rank(item.nodeid, order) for item in items}
    kept = sorted((i for i in items if ranks[i.nodeid] is not None), key=lambda i: ranks[i.nodeid])
    dropped = [i for i in items if ranks[i.nodeid] is None]
    matched = set(ranks.values())
    if any(i not in matched for i in order.values()):
        # the mutant renamed a parametrized test (an enum value in its id): run every test of
        # the selected files rather than judge the mutant on a part of them
        return
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
