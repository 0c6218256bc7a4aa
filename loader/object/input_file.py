"""Reading a BPF object or source the user named, with bounded cost.

Only a regular file is read, and only up to ``MAX_INPUT_BYTES``: a FIFO would block the reader
forever, ``/dev/zero`` or a huge file would fill memory. The file is looked at (``stat``) before it
is opened, and opened non-blocking, so that neither a special file nor one swapped in between can
block; the size is checked again while reading, for a file that grows. Every refusal is an
``ObjectError`` naming the file and the reason.
"""

from __future__ import annotations

import os
import stat

from evspec.loader.errors import ObjectError

from evspec.codes import bpf as codes
from evspec.codes import bpfconfig

MAX_INPUT_BYTES = 256 << 20  # 256 MiB: clang's largest BPF objects are a few MB
_CHUNK = 1 << 20

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words (``a FIFO (named pipe)``), for a file that is not regular."""
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def read_input(path: str | os.PathLike[str], what: str = "BPF object") -> bytes:
    """The bytes of the regular file ``path``; ``ObjectError`` when it does not exist, cannot be
    read, is a directory or a special file (EB141), or holds more than ``MAX_INPUT_BYTES`` (EB170).
    ``what`` names the file's role in messages (``BPF object``, ``BPF source``)."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
        _refuse_unless_regular(name, st, what)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ObjectError(codes.OBJECT_UNREADABLE, f"{name}: no such file",
                          perf_message=f"Failed to load {name}: No such file or directory") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ObjectError(codes.OBJECT_UNREADABLE, f"{name}: cannot read the file: {reason}",
                          perf_message=f"Failed to load {name}: {reason}") from None
    try:
        _refuse_unless_regular(name, os.fstat(fd), what)  # the file opened is the file looked at
        return _read_bounded(fd, name, what)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ObjectError(codes.OBJECT_UNREADABLE, f"{name}: cannot read the file: {reason}",
                          perf_message=f"Failed to load {name}: {reason}") from None
    finally:
        os.close(fd)


def _refuse_unless_regular(name: str, st: os.stat_result, what: str) -> None:
    if stat.S_ISREG(st.st_mode):
        if st.st_size > MAX_INPUT_BYTES:
            raise _too_big(name, what, f"is {st.st_size} bytes")
        return
    if stat.S_ISDIR(st.st_mode):
        raise ObjectError(codes.OBJECT_UNREADABLE, f"{name}: is a directory, not a {what}",
                          perf_message=f"Failed to load {name}: Is a directory")
    raise ObjectError(bpfconfig.OBJECT_NOT_A_FILE,
                      f"{name}: is {kind_of(st.st_mode)}, not a regular file: a {what} is read only from one",
                      help=("copy it to a file first",))


def _read_bounded(fd: int, name: str, what: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_INPUT_BYTES:
            raise _too_big(name, what, "holds more bytes than its size said (it grew, or its file system "
                                       "does not tell)")
        chunks.append(chunk)


def _too_big(name: str, what: str, how: str) -> ObjectError:
    return ObjectError(codes.INPUT_TOO_BIG,
                       f"{name}: {how}: evspec reads a {what} of at most {MAX_INPUT_BYTES} bytes "
                       f"({MAX_INPUT_BYTES >> 20} MiB, MAX_INPUT_BYTES)",
                       help=("a BPF object of clang is a few megabytes at most: is this the right file?",))
