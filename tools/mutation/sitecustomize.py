"""Serves one mutant of a module in every Python process the job starts, its subprocesses too.

The job puts this folder first on PYTHONPATH and names the mutant in the environment
(EVSPEC_MUTANT_MODULE, EVSPEC_MUTANT_FILE, EVSPEC_MUTANT_ID); importing that module then executes
the mutated tree instead of the file, wherever the package is installed from. The files on disk are
never changed.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys


class _MutantLoader(importlib.abc.Loader):
    def __init__(self, path: str, mutant_id: str) -> None:
        self.path = path
        self.mutant_id = mutant_id

    def create_module(self, spec):  # noqa: ANN001 - the import system's signature
        return None

    def exec_module(self, module) -> None:  # noqa: ANN001
        from operators import mutate

        with open(self.path, encoding="utf-8") as f:
            tree, _ = mutate(f.read(), self.mutant_id, self.path)
        exec(compile(tree, self.path, "exec", dont_inherit=True), module.__dict__)


class _MutantFinder(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, path: str, mutant_id: str) -> None:
        self.name = name
        self.loader = _MutantLoader(path, mutant_id)

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.loader.path, loader=self.loader)


def _install() -> None:
    name = os.environ.get("EVSPEC_MUTANT_MODULE")
    if name:
        finder = _MutantFinder(name, os.environ["EVSPEC_MUTANT_FILE"], os.environ["EVSPEC_MUTANT_ID"])
        sys.meta_path.insert(0, finder)


_install()
