"""A pytest plugin: in CI (``CI=true``) a skipped test fails the run, and the skips are listed.

The suite's policy is that in CI a missing privilege or tool is a failure, never a skip; this
catches any skip that slipped past that (a new test, a module skipped at import).
"""

from __future__ import annotations

import os

import pytest

#: tests that may skip in CI, by node id, with the reason it is right there (none on a machine of
#: this kind: root, clang, perf, bpftool, a BPF-capable kernel and 2 CPUs are all there)
CI_SKIPS_ALLOWED: dict[str, str] = {}


class CiSkipGuard:
    def __init__(self) -> None:
        self.skipped: list[tuple[str, str]] = []

    def _note(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if report.skipped and report.nodeid not in CI_SKIPS_ALLOWED:
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            self.skipped.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._note(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._note(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.skipped:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", f"{len(self.skipped)} test(s) skipped in CI, where nothing may skip", red=True)
            for nodeid, reason in self.skipped:
                reporter.write_line(f"SKIPPED IN CI {nodeid}: {reason}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") == "true":
        config.pluginmanager.register(CiSkipGuard(), "ci-skip-guard")
