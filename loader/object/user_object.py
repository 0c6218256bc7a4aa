"""The BPF object a user named, on the command line or in an event string: a ``.c`` source is
compiled first (with the user's clang options), and the ObjectSpec and every message name the
path as the user wrote it, never the working directory it was joined to nor the compile cache's
object."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import ObjectSpec, replace

ReadObject = Callable[[Path], ObjectSpec]
CompileSource = Callable[[Path], Path]


def is_source_path(path: str) -> bool:
    """Whether ``path`` names a C source (compiled before it is read) rather than an object."""
    return path.endswith(".c")


def read_user_object(
    path: str,
    cwd: str | os.PathLike[str] = ".",
    *,
    source: bool | None = None,
    clang_opts: Sequence[str] = (),
    read: ReadObject | None = None,
    compile: CompileSource | None = None,
) -> ObjectSpec:
    """The object ``path`` (relative to ``cwd``) names; ``source`` (default: by its suffix) says it
    must be compiled. ``read``/``compile`` default to ``read_object``/``compile_source`` (with
    ``clang_opts``); ``ObjectError`` when the file cannot be read, compiled or is no BPF object."""
    full = Path(cwd) / path
    shown = [str(full)]
    try:
        if is_source_path(path) if source is None else source:
            if compile is None:
                from evspec.loader.object.clang import compile_source

                compiled = compile_source(full, extra_flags=clang_opts)
            else:
                compiled = compile(full)
            shown.insert(0, str(compiled))
            full = compiled
        if read is None:
            from evspec.loader.object.reader import read_object

            read = read_object
        spec = read(full)
    except ObjectError as exc:
        raise renamed(exc, shown, path) from None
    return replace(spec, path=path)


def renamed(exc: ObjectError, names: Sequence[str], path: str) -> ObjectError:
    """``exc`` with each of ``names`` in its message and perf's message written as ``path``."""

    def rename(text: str) -> str:
        for name in names:
            text = text.replace(name, path)
        return text

    return ObjectError(exc.code, rename(exc.message), detail=exc.detail, help=exc.help,
                       perf_message=rename(exc.perf_message) if exc.perf_message else None)
