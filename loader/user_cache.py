"""The user's private evspec cache directories: ``$XDG_CACHE_HOME/evspec/NAME`` (an absolute
``XDG_CACHE_HOME``), else ``~/.cache/evspec/NAME``.

A directory is used only when it is safe to read back what was written there: a real directory
(no symbolic link) of the current user, not writable by group or others, in a parent that others
cannot rename it out of (writable by them only if sticky) — the rules of the compile cache
(``compile.cache_refusal``). Files in it are used only when they are regular files of the user
that nobody else may write. Written with ``os`` alone: a cold start pays for nothing more.
"""

from __future__ import annotations

import os
import stat

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def cache_root() -> str:
    """``$XDG_CACHE_HOME/evspec``, else ``~/.cache/evspec``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "evspec")


def refusal(directory: str) -> str | None:
    """Why ``directory`` must not hold a cache, or None when it is safe."""
    try:
        st = os.lstat(directory)
    except OSError as exc:
        return f"cannot inspect {directory}: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return f"{directory} is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return f"{directory} is not a directory"
    if st.st_uid != os.geteuid():
        return f"{directory} is owned by uid {st.st_uid}, not by the current user (uid {os.geteuid()})"
    if st.st_mode & _OTHERS_WRITE:
        return f"{directory} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    parent = os.path.dirname(os.path.abspath(directory))
    try:
        pst = os.stat(parent)
    except OSError as exc:
        return f"cannot inspect {parent}: {exc.strerror or exc}"
    if pst.st_mode & _OTHERS_WRITE and not pst.st_mode & stat.S_ISVTX:
        return f"its parent {parent} is writable by others and not sticky"
    return None


def private_dir(name: str) -> str | None:
    """The cache directory ``NAME`` (created with mode 0700 if missing), or None when it cannot
    be created or is not safe (``refusal``)."""
    directory = os.path.join(cache_root(), name)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return directory if refusal(directory) is None else None


def usable_file(path: str) -> bool:
    """Whether ``path`` is a regular file (no symbolic link) of the current user that group and
    others cannot write: one that only this user can have put there."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return usable_stat(st)


def usable_stat(st: os.stat_result) -> bool:
    """``usable_file`` of a file already opened (its ``fstat``)."""
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & _OTHERS_WRITE
