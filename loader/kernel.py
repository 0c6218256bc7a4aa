"""Typed kernel operations (maps, programs, BTF, perf events, ring mappings) built on the funnel.

``Kernel`` is the only class that builds ``bpf(2)`` / ``perf_event_open(2)`` arguments. Every
failure becomes a ``KernelError`` with a code from ``evspec.codes.kernel``; a program the verifier
rejects becomes a ``VerifierError`` that keeps the whole log.
"""

from __future__ import annotations

import ctypes
import errno as E
import mmap as mmap_mod
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from evspec.loader import bpf_abi as abi
from evspec.loader.errors import ObjectError
from evspec.loader.perf_abi import Ioctl, PerfEventAttr
from evspec.loader.spec import LineInfo
from evspec.loader.syscalls import (
    CAP_BPF,
    CAP_PERFMON,
    CAP_SYS_ADMIN,
    CAP_SYS_RESOURCE,
    RLIM_INFINITY,
    Funnel,
    LinuxFunnel,
    SyscallError,
    UnsupportedArchitecture,
)
from evspec.loader.verifier import VerifierSummary, summarize

from evspec.codes import kernel as codes

ENOTSUPP = 524  # the kernel-internal "not supported" that bpf(2) lets escape for batch ops
FIRST_LOG_SIZE = 64 * 1024
MAX_LOG_SIZE = 0xFFFFFFFF >> 2  # the kernel refuses larger verifier log buffers

# Kernel-side checks print the capability that is missing; these name them.
_BPF_CAPS = ((CAP_BPF, "CAP_BPF"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
_PERF_CAPS = ((CAP_PERFMON, "CAP_PERFMON"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
_MEMLOCK_CHARGED = {abi.Cmd.MAP_CREATE, abi.Cmd.PROG_LOAD, abi.Cmd.BTF_LOAD}
# Load-command fields that only name things or carry BTF debug information: an older kernel that
# does not know them loads the same map or program without them. On E2BIG (the bpf(2) ABI: the
# bytes past the kernel's own union bpf_attr must be zero) the last one set is cleared and the
# attribute passed only up to it, until the kernel accepts it; other fields are never left out.
_OPTIONAL_FIELDS = frozenset({
    "map_name", "btf_fd", "btf_key_type_id", "btf_value_type_id", "prog_name", "prog_btf_fd",
    "func_info_rec_size", "func_info", "func_info_cnt", "line_info_rec_size", "line_info",
    "line_info_cnt",
})
_ATTR_TYPES = {abi.Cmd.MAP_CREATE: abi.MapCreateAttr, abi.Cmd.PROG_LOAD: abi.ProgLoadAttr,
               abi.Cmd.BTF_LOAD: abi.BtfLoadAttr}
LINE_INFO = struct.Struct("=IIII")  # struct bpf_line_info: insn_off, file_name_off, line_off, line_col
_ELEM_CMDS = {abi.Cmd.MAP_UPDATE_ELEM, abi.Cmd.MAP_UPDATE_BATCH}


class KernelError(ObjectError):
    """A kernel call failed; ``errno`` and ``operation`` (``BPF_MAP_CREATE``…) say which and how."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        errno: int | None = None,
        operation: str | None = None,
        detail: str | None = None,
        help: tuple[str, ...] = (),
    ) -> None:
        super().__init__(code, message, detail=detail, help=help)
        self.errno = errno
        self.operation = operation


class VerifierError(KernelError):
    """The verifier refused a program: ``log`` is its whole log, ``summary`` the short reading."""

    def __init__(self, program: str, errno: int, log: str, summary: VerifierSummary) -> None:
        name = f"program '{program}'" if program else "program"
        super().__init__(
            codes.VERIFIER,
            f"the verifier rejected {name}: {summary.render()}",
            errno=errno,
            operation="BPF_PROG_LOAD",
            detail=log,
        )
        self.program = program
        self.log = log
        self.summary = summary


@dataclass(frozen=True, slots=True)
class RingMapping:
    """A perf ring buffer mapped into this process: one control page, then ``data_size`` bytes."""

    fd: int
    address: int
    length: int
    page_size: int

    @property
    def data_size(self) -> int:
        return self.length - self.page_size


@dataclass(frozen=True, slots=True)
class MapDescription:
    id: int
    type: int
    name: str
    key_size: int
    value_size: int
    max_entries: int
    flags: int
    btf_id: int


@dataclass(frozen=True, slots=True)
class ProgramDescription:
    id: int
    type: int
    name: str
    tag: bytes
    map_ids: tuple[int, ...]
    gpl_compatible: bool
    xlated_len: int
    btf_id: int = 0  # the BTF the program was loaded with (0: none)
    nr_func_info: int = 0
    nr_line_info: int = 0


def _addr(buf: ctypes.Array | None) -> int:  # type: ignore[type-arg]
    return 0 if buf is None else ctypes.addressof(buf)


def _in_buffer(data: bytes) -> ctypes.Array:  # type: ignore[type-arg]
    return (ctypes.c_char * max(len(data), 1)).from_buffer_copy(data or b"\0")


def _bytes_address(data: bytes) -> int:
    """The address of the contents of ``data`` itself (no copy): for inputs the kernel only reads.
    The caller keeps ``data`` alive for as long as the address is used."""
    address = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
    assert address is not None
    return address


class ProgTestRunAttr(ctypes.Structure):
    """BPF_PROG_TEST_RUN (``attr.test``); ``retval`` is the program's return value."""

    _fields_ = [
        ("prog_fd", ctypes.c_uint32),
        ("retval", ctypes.c_uint32),
        ("data_size_in", ctypes.c_uint32),
        ("data_size_out", ctypes.c_uint32),
        ("data_in", ctypes.c_uint64),
        ("data_out", ctypes.c_uint64),
        ("repeat", ctypes.c_uint32),
        ("duration", ctypes.c_uint32),
        ("ctx_size_in", ctypes.c_uint32),
        ("ctx_size_out", ctypes.c_uint32),
        ("ctx_in", ctypes.c_uint64),
        ("ctx_out", ctypes.c_uint64),
        ("flags", ctypes.c_uint32),
        ("cpu", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
    ]


FUNC_INFO = struct.Struct("<II")  # struct bpf_func_info: insn_off, type_id


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One PROG_LOAD/BTF_LOAD try: the fd, or the error and the log size the kernel asked for."""

    fd: int | None
    error: KernelError | None
    log_true_size: int


# Failures that a repeated load with a verifier log cannot explain better.
_FINAL_CODES = (codes.PERMISSION, codes.MEMLOCK, codes.ATTR_TOO_BIG)


def _raise_if_final(error: KernelError | None) -> None:
    assert error is not None
    if error.code in _FINAL_CODES:
        raise error


def _has(caps: int, cap: int) -> bool:
    return bool(caps >> cap & 1)


def _set_fields(attr: ctypes.Structure, start: int, end: int) -> list[str]:
    """The fields of ``attr`` that start in ``[start, end)`` and are not zero, in order."""
    raw = ctypes.string_at(ctypes.addressof(attr), ctypes.sizeof(attr))
    out = []
    for name, *_ in type(attr)._fields_:  # type: ignore[misc]
        field = getattr(type(attr), name)
        if start <= field.offset < end and raw[field.offset : field.offset + field.size].strip(b"\0"):
            out.append(str(name))
    return out


def _optional_run_start(attr: ctypes.Structure, name: str) -> int:
    """Where the run of optional fields that ends with ``name`` starts (fields that came with
    one kernel feature, such as prog_btf_fd ... line_info_cnt, go together)."""
    names = [n for n, *_ in type(attr)._fields_]  # type: ignore[misc]
    index = names.index(name)
    while index > 0 and names[index - 1] in _OPTIONAL_FIELDS:
        index -= 1
    return int(getattr(type(attr), names[index]).offset)


def _verifier_wrote_log(cmd: abi.Cmd, attr: ctypes.Structure) -> bool:
    """E2BIG with a verifier log is the verifier's verdict (too complex), not the attribute's size."""
    if cmd is not abi.Cmd.PROG_LOAD or not attr.log_size or not attr.log_buf:  # type: ignore[attr-defined]
        return False
    return ctypes.c_char.from_address(attr.log_buf).value != b"\0"  # type: ignore[attr-defined]


def _clear_from(attr: ctypes.Structure, offset: int, dropped: list[str]) -> int:
    """Zero every field of ``attr`` at or past ``offset``, adding those that were set to
    ``dropped``; the attribute size to pass from now on."""
    dropped.extend(_set_fields(attr, offset, ctypes.sizeof(attr)))
    ctypes.memset(ctypes.addressof(attr) + offset, 0, ctypes.sizeof(attr) - offset)
    return offset


# Where each load command's attribute ended in its first kernel: E2BIG about a field before that
# is not about the attribute's size but about a value (too many instructions, a huge value size).
_FIRST_LAYOUT_END = {abi.Cmd.MAP_CREATE: 20, abi.Cmd.PROG_LOAD: 44, abi.Cmd.BTF_LOAD: 28}


def _attr_too_big(exc: KernelError, cmd: abi.Cmd, field: str | None) -> KernelError:
    where = exc.message.split(":", 1)[0]
    offset = -1 if field is None else getattr(_ATTR_TYPES[cmd], field).offset
    if offset < _FIRST_LAYOUT_END[cmd]:
        what = {
            abi.Cmd.MAP_CREATE: "the key, the value or max_entries is too large for this map type",
            abi.Cmd.PROG_LOAD: "the program is too large: more instructions than the kernel "
            "accepts, or more than the verifier's complexity limit",
            abi.Cmd.BTF_LOAD: "the BTF is larger than the kernel accepts",
        }[cmd]
        return KernelError(codes.ATTR_TOO_BIG, f"{where}: {what} (E2BIG)", errno=exc.errno,
                           operation=exc.operation)
    return KernelError(
        codes.ATTR_TOO_BIG,
        f"{where}: the running kernel does not know a field evspec set: {field} (E2BIG)",
        errno=exc.errno,
        operation=exc.operation,
        help=("a newer kernel is needed for this feature",),
    )


class Kernel:
    """The kernel operations evspec uses, each raising a coded ``KernelError`` on failure."""

    def __init__(self, funnel: Funnel | None = None, *, page_size: int = mmap_mod.PAGESIZE) -> None:
        if funnel is None:
            try:
                funnel = LinuxFunnel()
            except UnsupportedArchitecture as exc:
                raise KernelError(codes.UNSUPPORTED_ARCH, str(exc)) from None
        self.funnel = funnel
        self.page_size = page_size
        self._attr_sizes: dict[abi.Cmd, int] = {}  # load commands: the attr size the kernel knows
        self.left_out: dict[str, list[str]] = {}  # operation -> optional fields the kernel lacks

    # ----------------------------------------------------------------- errors

    def _permission_error(self, operation: str, err: int, what: str, perf: bool) -> KernelError:
        caps = self.funnel.effective_capabilities()
        needed = _PERF_CAPS if perf else _BPF_CAPS
        strerror = os.strerror(err)
        if not any(_has(caps, cap) for cap, _ in needed):
            cap_name = needed[0][1]
            return KernelError(
                codes.PERMISSION,
                f"{operation}{what}: {strerror}: the process lacks {cap_name} "
                f"(or CAP_SYS_ADMIN on kernels before 5.8); evspec needs root for this",
                errno=err,
                operation=operation,
                help=("run evspec as root (sudo)",),
            )
        if not perf:
            soft, _hard = self.funnel.memlock_limit()
            if soft != RLIM_INFINITY:
                return KernelError(
                    codes.MEMLOCK,
                    f"{operation}{what}: {strerror}: the locked-memory limit (RLIMIT_MEMLOCK, "
                    f"{soft} bytes) is too low for BPF objects on this kernel",
                    errno=err,
                    operation=operation,
                    help=("raise it with `ulimit -l unlimited`, or run evspec as root",),
                )
        return KernelError(
            codes.PERMISSION,
            f"{operation}{what}: {strerror} although the process has the needed capabilities "
            "(kernel lockdown, an LSM policy or perf_event_paranoid may forbid it)",
            errno=err,
            operation=operation,
        )

    def _error(
        self, exc: SyscallError, what: str, *, perf: bool = False, cmd: abi.Cmd | None = None
    ) -> KernelError:
        err = exc.errno or 0
        op = exc.operation
        where = f" for {what}" if what else ""
        # EACCES from BPF_PROG_LOAD is the verifier's verdict, not a missing privilege.
        if err == E.EPERM or (err == E.EACCES and cmd is not abi.Cmd.PROG_LOAD):
            return self._permission_error(op, err, where, perf)
        if err == E.E2BIG and cmd in _ELEM_CMDS:
            return KernelError(
                codes.NO_SPACE,
                f"{op}{where}: the map is full or the key is beyond its max_entries (E2BIG)",
                errno=err,
                operation=op,
            )
        if err == E.E2BIG:
            return KernelError(
                codes.ATTR_TOO_BIG,
                f"{op}{where}: the running kernel does not know a field evspec set in its "
                "attribute structure (E2BIG)",
                errno=err,
                operation=op,
                help=("a newer kernel is needed for this feature",),
            )
        code = {
            E.ENOENT: codes.NOT_FOUND,
            E.EINVAL: codes.INVALID_ARGUMENT,
            E.ENOSPC: codes.NO_SPACE,
        }.get(err, codes.SYSCALL_FAILED)
        name = E.errorcode.get(err, str(err))
        return KernelError(code, f"{op}{where}: {os.strerror(err)} ({name})", errno=err, operation=op)

    def _raise_memlock(self) -> bool:
        """Lift RLIMIT_MEMLOCK when that can explain an EPERM and we may; True if it was lifted."""
        caps = self.funnel.effective_capabilities()
        if not any(_has(caps, cap) for cap, _ in _BPF_CAPS):
            return False
        soft, hard = self.funnel.memlock_limit()
        if soft == RLIM_INFINITY or not _has(caps, CAP_SYS_RESOURCE):
            return False
        self.funnel.set_memlock_limit(RLIM_INFINITY, RLIM_INFINITY)
        return True

    def _bpf(self, cmd: abi.Cmd, attr: ctypes.Structure, what: str = "", *, size: int | None = None) -> int:
        lifted_memlock = False
        size = ctypes.sizeof(attr) if size is None else size
        while True:
            try:
                return self.funnel.bpf(int(cmd), attr, size, operation=cmd.operation)
            except SyscallError as exc:
                if exc.errno == E.EPERM and cmd in _MEMLOCK_CHARGED and not lifted_memlock:
                    if self._raise_memlock():
                        lifted_memlock = True
                        continue
                raise self._error(exc, what, cmd=cmd) from None

    def _bpf_load(self, cmd: abi.Cmd, attr: ctypes.Structure, what: str) -> int:
        """MAP_CREATE, PROG_LOAD, BTF_LOAD: ``_bpf`` that leaves out, on E2BIG, the optional fields
        the running kernel does not know (remembered for the next call of the same command)."""
        size = ctypes.sizeof(attr)
        known = self._attr_sizes.get(cmd)
        dropped: list[str] = []
        if known is not None and _OPTIONAL_FIELDS.issuperset(_set_fields(attr, known, size)):
            size = _clear_from(attr, known, dropped)
        while True:
            try:
                fd = self._bpf(cmd, attr, what, size=size)
            except KernelError as exc:
                if exc.errno == E.E2BIG and not _verifier_wrote_log(cmd, attr):
                    last = (_set_fields(attr, 0, size) or [None])[-1]
                    if last in _OPTIONAL_FIELDS:
                        size = _clear_from(attr, _optional_run_start(attr, last), dropped)
                        continue
                    raise _attr_too_big(exc, cmd, last) from None  # leaving fields out did not help
                self._remember_left_out(cmd, size, dropped)  # another error: E2BIG is cured
                raise
            self._remember_left_out(cmd, size, dropped)
            return fd

    def _remember_left_out(self, cmd: abi.Cmd, size: int, dropped: list[str]) -> None:
        if dropped:
            self._attr_sizes[cmd] = min(size, self._attr_sizes.get(cmd, size))
            fields = self.left_out.setdefault(cmd.operation, [])
            fields.extend(name for name in dropped if name not in fields)

    @property
    def notes(self) -> list[str]:
        """What ``-v`` should say about this kernel: the fields it did not know."""
        return [
            f"{op}: this kernel does not know {', '.join(fields)}; loaded without them"
            for op, fields in self.left_out.items()
        ]

    # ------------------------------------------------------------------- maps

    def create_map(
        self,
        map_type: int,
        key_size: int,
        value_size: int,
        max_entries: int,
        *,
        flags: int = 0,
        name: str = "",
        btf_fd: int | None = None,
        btf_key_type_id: int = 0,
        btf_value_type_id: int = 0,
        inner_map_fd: int = 0,
        map_extra: int = 0,
    ) -> int:
        attr = abi.MapCreateAttr(
            map_type=map_type,
            key_size=key_size,
            value_size=value_size,
            max_entries=max_entries,
            map_flags=flags,
            inner_map_fd=inner_map_fd,
            map_name=abi.object_name(name),
            map_extra=map_extra,
        )
        if btf_fd is not None:
            attr.btf_fd = btf_fd
            attr.btf_key_type_id = btf_key_type_id
            attr.btf_value_type_id = btf_value_type_id
        return self._bpf_load(abi.Cmd.MAP_CREATE, attr, f"map '{name}'" if name else "")

    @staticmethod
    def _check_size(data: bytes, size: int, what: str) -> None:
        if len(data) != size:
            raise KernelError(codes.BAD_SIZE, f"{what} is {len(data)} bytes, the map's size is {size}")

    def update_elem(
        self, fd: int, key: bytes, value: bytes, flags: int = abi.UpdateFlag.ANY, *, what: str = ""
    ) -> None:
        kbuf, vbuf = _in_buffer(key), _in_buffer(value)
        attr = abi.MapElemAttr(map_fd=fd, key=_addr(kbuf), flags=flags)
        attr.value = _addr(vbuf)
        self._bpf(abi.Cmd.MAP_UPDATE_ELEM, attr, what)

    def lookup(self, fd: int, key: bytes, value_size: int, *, what: str = "") -> bytes | None:
        """The value stored under ``key``, or None when there is none."""
        kbuf = _in_buffer(key)
        vbuf = ctypes.create_string_buffer(max(value_size, 1))
        attr = abi.MapElemAttr(map_fd=fd, key=_addr(kbuf))
        attr.value = _addr(vbuf)
        try:
            self._bpf(abi.Cmd.MAP_LOOKUP_ELEM, attr, what)
        except KernelError as exc:
            if exc.errno == E.ENOENT:
                return None
            raise
        return vbuf.raw[:value_size]

    def delete_elem(self, fd: int, key: bytes, *, what: str = "") -> bool:
        kbuf = _in_buffer(key)
        try:
            self._bpf(abi.Cmd.MAP_DELETE_ELEM, abi.MapElemAttr(map_fd=fd, key=_addr(kbuf)), what)
        except KernelError as exc:
            if exc.errno == E.ENOENT:
                return False
            raise
        return True

    def next_key(self, fd: int, key: bytes | None, key_size: int, *, what: str = "") -> bytes | None:
        """The key after ``key`` (the first key for None), or None after the last."""
        kbuf = None if key is None else _in_buffer(key)
        nbuf = ctypes.create_string_buffer(max(key_size, 1))
        attr = abi.MapElemAttr(map_fd=fd, key=_addr(kbuf))
        attr.next_key = _addr(nbuf)
        try:
            self._bpf(abi.Cmd.MAP_GET_NEXT_KEY, attr, what)
        except KernelError as exc:
            if exc.errno == E.ENOENT:
                return None
            raise
        return nbuf.raw[:key_size]

    def update_batch(
        self,
        fd: int,
        keys: bytes,
        values: bytes,
        *,
        key_size: int,
        value_size: int,
        flags: int = abi.UpdateFlag.ANY,
        what: str = "",
    ) -> int:
        """Write ``len(keys) // key_size`` elements in one BPF_MAP_UPDATE_BATCH.

        Kernels without batch support for the map (EINVAL, EOPNOTSUPP, ENOTSUPP) get one
        BPF_MAP_UPDATE_ELEM per element instead, from the first element on. Returns the count.
        """
        if key_size <= 0 or len(keys) % key_size:
            raise KernelError(
                codes.BAD_SIZE, f"{len(keys)} key bytes are not a multiple of key_size {key_size}"
            )
        count = len(keys) // key_size
        self._check_size(values, count * value_size, f"the values of {count} elements")
        if count == 0:
            return 0
        keys, values = bytes(keys), bytes(values)  # the same objects when they are bytes already
        if count > 0xFFFFFFFF:
            raise KernelError(codes.BAD_SIZE, f"{count} elements do not fit one batch (at most 2**32 - 1)")
        key_base, value_base = _bytes_address(keys), _bytes_address(values)
        attr = abi.MapBatchAttr(keys=key_base, values=value_base, count=count, map_fd=fd, elem_flags=flags)
        try:
            self._bpf(abi.Cmd.MAP_UPDATE_BATCH, attr, what)
            return count
        except KernelError as exc:
            if exc.errno not in (E.EINVAL, E.EOPNOTSUPP, ENOTSUPP):
                raise
        elem = abi.MapElemAttr(map_fd=fd, flags=flags)
        for i in range(count):
            elem.key = key_base + i * key_size
            elem.value = value_base + i * value_size
            self._bpf(abi.Cmd.MAP_UPDATE_ELEM, elem, what)
        return count

    def lookup_batch(
        self, fd: int, *, key_size: int, value_size: int, chunk: int = 4096, what: str = ""
    ) -> tuple[bytes, bytes]:
        """Every key and value of the map, read with BPF_MAP_LOOKUP_BATCH ``chunk`` at a time."""
        kbuf = ctypes.create_string_buffer(key_size * chunk)
        vbuf = ctypes.create_string_buffer(value_size * chunk)
        token_in = ctypes.create_string_buffer(max(key_size, 8))
        token_out = ctypes.create_string_buffer(max(key_size, 8))
        keys: list[bytes] = []
        values: list[bytes] = []
        first = True
        while True:
            attr = abi.MapBatchAttr(
                in_batch=0 if first else _addr(token_in),
                out_batch=_addr(token_out),
                keys=_addr(kbuf),
                values=_addr(vbuf),
                count=chunk,
                map_fd=fd,
            )
            done = False
            try:
                self._bpf(abi.Cmd.MAP_LOOKUP_BATCH, attr, what)
            except KernelError as exc:
                if exc.errno != E.ENOENT:
                    raise
                done = True
            n = attr.count
            keys.append(kbuf.raw[: n * key_size])
            values.append(vbuf.raw[: n * value_size])
            if done:
                return b"".join(keys), b"".join(values)
            ctypes.memmove(token_in, token_out, len(token_out))
            first = False

    def freeze(self, fd: int, *, what: str = "") -> None:
        self._bpf(abi.Cmd.MAP_FREEZE, abi.MapElemAttr(map_fd=fd), what)

    # --------------------------------------------------------------- programs

    def load_program(
        self,
        prog_type: int,
        insns: bytes,
        license: str,
        *,
        name: str = "",
        kern_version: int = 0,
        expected_attach_type: int = 0,
        prog_flags: int = 0,
        log_level: int = 0,
        line_info: Sequence[LineInfo] = (),
        btf_fd: int | None = None,
        func_info: Sequence[tuple[int, int]] = (),
        line_records: Sequence[tuple[int, int, int, int]] = (),
    ) -> int:
        """Load a program; a rejection raises ``VerifierError`` with the verifier's log.

        ``func_info`` pairs (instruction index, BTF FUNC type id) describe the program's functions
        in the BTF loaded as ``btf_fd`` (the verifier needs them for callbacks); ``line_records``
        (instruction index, file name and source line offsets in that BTF's strings, line << 10 |
        column) let the verifier log and ``bpftool prog dump jited linum`` show source lines.
        The first attempt runs without a log (fast path); after a failure the load is repeated
        with ``log_level`` 1 (or the caller's level) and a buffer that grows until the log fits.
        """
        if len(insns) % 8 or not insns:
            raise KernelError(
                codes.BAD_SIZE, f"program '{name}' is {len(insns)} bytes, not whole instructions"
            )
        ibuf = _in_buffer(insns)
        lbuf = ctypes.create_string_buffer(license.encode() + b"\0")
        fbuf = _in_buffer(b"".join(FUNC_INFO.pack(off, tid) for off, tid in func_info))
        line_buf = _in_buffer(b"".join(LINE_INFO.pack(*record) for record in line_records))
        what = f"program '{name}'" if name else ""

        def attempt(level: int, log: ctypes.Array | None) -> _Attempt:  # type: ignore[type-arg]
            attr = abi.ProgLoadAttr(
                prog_type=prog_type,
                insn_cnt=len(insns) // 8,
                insns=_addr(ibuf),
                license=_addr(lbuf),
                kern_version=kern_version,
                prog_flags=prog_flags,
                prog_name=abi.object_name(name),
                expected_attach_type=expected_attach_type,
            )
            if btf_fd is not None:
                attr.prog_btf_fd = btf_fd
            if func_info:
                attr.func_info_rec_size, attr.func_info_cnt = FUNC_INFO.size, len(func_info)
                attr.func_info = _addr(fbuf)
            if line_records:
                attr.line_info_rec_size, attr.line_info_cnt = LINE_INFO.size, len(line_records)
                attr.line_info = _addr(line_buf)
            if log is not None:
                attr.log_level, attr.log_size, attr.log_buf = level, len(log), _addr(log)
            try:
                return _Attempt(self._bpf_load(abi.Cmd.PROG_LOAD, attr, what), None, 0)
            except KernelError as exc:
                return _Attempt(None, exc, attr.log_true_size)

        if not log_level:
            first = attempt(0, None)
            if first.fd is not None:
                return first.fd
            if first.error is None or first.error.errno != E.E2BIG:  # E2BIG: the log may say "too large"
                _raise_if_final(first.error)
        fd, error, log = self._with_growing_log(lambda buf: attempt(log_level or abi.BPF_LOG_LEVEL1, buf))
        if fd is not None:
            return fd
        assert error is not None
        if not log.strip():
            raise error
        raise VerifierError(name, error.errno or 0, log, summarize(log, line_info))

    def run_program(self, fd: int, *, ctx: bytes = b"", what: str = "") -> int:
        """Run a loaded program once with ``ctx`` as its context (BPF_PROG_TEST_RUN); its return value."""
        cbuf = _in_buffer(ctx) if ctx else None
        attr = ProgTestRunAttr(prog_fd=fd, ctx_size_in=len(ctx), ctx_in=_addr(cbuf))
        self._bpf(abi.Cmd.PROG_TEST_RUN, attr, what)
        return int(attr.retval)

    @staticmethod
    def _with_growing_log(
        attempt: Callable[[ctypes.Array], _Attempt],  # type: ignore[type-arg]
    ) -> tuple[int | None, KernelError | None, str]:
        """Repeat ``attempt`` with a larger log buffer while the kernel says it was too small."""
        size = FIRST_LOG_SIZE
        while True:
            buf = ctypes.create_string_buffer(size)
            result = attempt(buf)
            if result.fd is not None:
                return result.fd, None, ""
            assert result.error is not None
            if result.error.errno == E.ENOSPC and size < MAX_LOG_SIZE:
                # Kernels >= 6.4 say exactly how much they need; older ones make us guess.
                wanted = result.log_true_size if result.log_true_size > size else size * 2
                size = min(MAX_LOG_SIZE, wanted)
                continue
            return None, result.error, buf.value.decode("utf-8", "replace")

    def load_btf(self, data: bytes) -> int:
        """Load raw BTF; a rejection raises ``KernelError`` (EK014) with the BTF log as detail."""
        dbuf = _in_buffer(data)

        def attempt(log: ctypes.Array | None) -> _Attempt:  # type: ignore[type-arg]
            attr = abi.BtfLoadAttr(btf=_addr(dbuf), btf_size=len(data))
            if log is not None:
                attr.btf_log_buf, attr.btf_log_size, attr.btf_log_level = _addr(log), len(log), 1
            try:
                return _Attempt(self._bpf_load(abi.Cmd.BTF_LOAD, attr, "BTF"), None, 0)
            except KernelError as exc:
                return _Attempt(None, exc, attr.btf_log_true_size)

        first = attempt(None)
        if first.fd is not None:
            return first.fd
        _raise_if_final(first.error)
        fd, error, log = self._with_growing_log(attempt)
        if fd is not None:
            return fd
        assert error is not None
        if error.code in _FINAL_CODES:
            raise error
        last = log.strip().splitlines()[-1] if log.strip() else error.message
        raise KernelError(
            codes.BTF_REJECTED,
            f"the kernel refused the object's BTF: {last}",
            errno=error.errno,
            operation="BPF_BTF_LOAD",
            detail=log or None,
        )

    # ---------------------------------------------------------------- inspect

    def _info(self, fd: int, info: ctypes.Structure, what: str) -> None:
        attr = abi.ObjInfoAttr(bpf_fd=fd, info_len=ctypes.sizeof(info), info=ctypes.addressof(info))
        self._bpf(abi.Cmd.OBJ_GET_INFO_BY_FD, attr, what)

    def map_info(self, fd: int) -> MapDescription:
        info = abi.MapInfo()
        self._info(fd, info, f"map fd {fd}")
        return MapDescription(
            id=info.id,
            type=info.type,
            name=info.name.decode(errors="replace"),
            key_size=info.key_size,
            value_size=info.value_size,
            max_entries=info.max_entries,
            flags=info.map_flags,
            btf_id=info.btf_id,
        )

    def program_info(self, fd: int) -> ProgramDescription:
        info = abi.ProgInfo()
        self._info(fd, info, f"program fd {fd}")
        ids = (ctypes.c_uint32 * max(info.nr_map_ids, 1))()
        nr = info.nr_map_ids
        if nr:
            info = abi.ProgInfo(nr_map_ids=nr, map_ids=ctypes.addressof(ids))
            self._info(fd, info, f"program fd {fd}")
        return ProgramDescription(
            id=info.id,
            type=info.type,
            name=info.name.decode(errors="replace"),
            tag=bytes(info.tag),
            map_ids=tuple(ids[:nr]),
            gpl_compatible=bool(info.gpl_compatible),
            xlated_len=info.xlated_prog_len,
            btf_id=info.btf_id,
            nr_func_info=info.nr_func_info,
            nr_line_info=info.nr_line_info,
        )

    def _ids(self, cmd: abi.Cmd) -> Iterator[int]:
        current = 0
        while True:
            attr = abi.GetNextIdAttr(start_id=current)
            try:
                self._bpf(cmd, attr)
            except KernelError as exc:
                if exc.errno == E.ENOENT:
                    return
                raise
            current = attr.next_id
            yield current

    def program_ids(self) -> Iterator[int]:
        return self._ids(abi.Cmd.PROG_GET_NEXT_ID)

    def map_ids(self) -> Iterator[int]:
        return self._ids(abi.Cmd.MAP_GET_NEXT_ID)

    def link_perf_event(self, prog_fd: int, perf_fd: int, *, cookie: int = 0) -> int:
        """Attach a program to a perf event with a BPF link (5.15+); closing the link detaches."""
        attr = abi.LinkCreateAttr(
            prog_fd=prog_fd, target_fd=perf_fd, attach_type=abi.BPF_PERF_EVENT, bpf_cookie=cookie
        )
        return self._bpf(abi.Cmd.LINK_CREATE, attr, f"perf event fd {perf_fd}")

    # ------------------------------------------------------------ perf events

    def perf_event_open(
        self, attr: PerfEventAttr, *, pid: int = -1, cpu: int = -1, group_fd: int = -1, flags: int = 0
    ) -> int:
        """Open a perf event; the descriptor is close-on-exec."""
        if attr.size == 0:
            attr.size = ctypes.sizeof(attr)
        what = f" on cpu {cpu}" if cpu >= 0 else ""
        try:
            return self.funnel.perf_event_open(attr, pid, cpu, group_fd, flags)
        except SyscallError as exc:
            if exc.errno == E.E2BIG:
                known = attr.size  # the kernel wrote the size it knows
                beyond = [
                    name
                    for name, *_ in attr._fields_
                    if getattr(PerfEventAttr, name).offset >= known and getattr(attr, name)
                ]
                raise KernelError(
                    codes.ATTR_TOO_BIG,
                    f"perf_event_open{what}: this kernel knows perf_event_attr up to {known} bytes; "
                    f"the event sets {', '.join(beyond) or 'fields'} beyond that (E2BIG)",
                    errno=exc.errno,
                    operation="perf_event_open",
                    help=("a newer kernel is needed for this event",),
                ) from None
            if exc.errno in (E.EPERM, E.EACCES):
                raise self._permission_error("perf_event_open", exc.errno, what, perf=True) from None
            if exc.errno == E.ENOENT:
                raise KernelError(
                    codes.NOT_FOUND,
                    f"perf_event_open{what}: the kernel has no event of type {attr.type} config "
                    f"{attr.config:#x} (ENOENT)",
                    errno=exc.errno,
                    operation="perf_event_open",
                ) from None
            raise self._error(exc, "", perf=True) from None

    def _ioctl(self, fd: int, request: Ioctl, arg: int, what: str) -> int:
        try:
            return self.funnel.ioctl(fd, int(request), arg, operation=f"PERF_EVENT_IOC_{request.name}")
        except SyscallError as exc:
            raise self._error(exc, what, perf=True) from None

    def enable(self, fd: int) -> None:
        self._ioctl(fd, Ioctl.ENABLE, 0, f"perf event fd {fd}")

    def disable(self, fd: int) -> None:
        self._ioctl(fd, Ioctl.DISABLE, 0, f"perf event fd {fd}")

    def set_bpf(self, fd: int, prog_fd: int) -> None:
        """Attach a program to a tracepoint/kprobe/uprobe perf event (PERF_EVENT_IOC_SET_BPF)."""
        self._ioctl(fd, Ioctl.SET_BPF, prog_fd, f"perf event fd {fd}")

    def event_id(self, fd: int) -> int:
        """The kernel's id of a perf event (PERF_EVENT_IOC_ID), as PERF_SAMPLE_IDENTIFIER carries it."""
        value = ctypes.c_uint64()
        self._ioctl(fd, Ioctl.ID, ctypes.addressof(value), f"perf event fd {fd}")
        return value.value

    # PERF_FORMAT_LOST (Linux 6.0): read() of an event gives {u64 value; u64 lost;}, ``lost`` being
    # every sample the event's ring had no room for, including those no PERF_RECORD_LOST reported.
    PERF_FORMAT_LOST = 1 << 4
    _VALUE_AND_LOST = struct.Struct("=QQ")

    def lost_count_readable(self) -> bool:
        """Whether this kernel counts an event's lost samples for ``read_lost`` (asks it once per
        call: a disabled dummy event is opened with PERF_FORMAT_LOST, read and closed)."""
        from evspec.loader.perf_abi import AttrFlag, PerfType, SwConfig

        if self._reader() is None:
            return False
        attr = PerfEventAttr(type=PerfType.SOFTWARE, config=SwConfig.DUMMY, read_format=self.PERF_FORMAT_LOST)
        attr.size = ctypes.sizeof(PerfEventAttr)
        attr.flags = AttrFlag.DISABLED
        try:
            fd = self.perf_event_open(attr, pid=0, cpu=-1)
        except KernelError:
            return False
        try:
            self.read_lost(fd)
            return True
        except KernelError:
            return False
        finally:
            self.close(fd)

    def read_lost(self, fd: int) -> int:
        """The samples perf event ``fd`` (opened with read_format PERF_FORMAT_LOST alone) dropped."""
        reader = self._reader()
        if reader is None:
            raise KernelError(codes.SYSCALL_FAILED, f"read of perf event fd {fd}: this funnel cannot read")
        try:
            data = reader(fd, self._VALUE_AND_LOST.size)
        except OSError as exc:
            raise self._error(SyscallError(exc.errno or 0, "read"), f"perf event fd {fd}", perf=True) from None
        if len(data) != self._VALUE_AND_LOST.size:
            raise KernelError(
                codes.SYSCALL_FAILED,
                f"read of perf event fd {fd}: {len(data)} bytes, not the {self._VALUE_AND_LOST.size} of "
                "value and lost count",
            )
        return int(self._VALUE_AND_LOST.unpack(data)[1])

    def _reader(self) -> Callable[[int, int], bytes] | None:
        """read(2) of the funnel: its own ``read`` (a fake's), or os.read for the real kernel."""
        reader = getattr(self.funnel, "read", None)
        if reader is None and isinstance(self.funnel, LinuxFunnel):
            return os.read
        return reader

    def mmap_ring(self, fd: int, data_pages: int) -> RingMapping:
        """Map the ring buffer of a perf event: one control page plus ``data_pages`` (a power of 2)."""
        if data_pages <= 0 or data_pages & (data_pages - 1):
            raise KernelError(
                codes.RING_BUFFER, f"ring buffer pages must be a power of two, not {data_pages}"
            )
        length = (data_pages + 1) * self.page_size
        try:
            address = self.funnel.mmap(
                length, mmap_mod.PROT_READ | mmap_mod.PROT_WRITE, mmap_mod.MAP_SHARED, fd, 0
            )
        except SyscallError as exc:
            raise self._error(exc, f"the ring buffer of perf event fd {fd}", perf=True) from None
        return RingMapping(fd=fd, address=address, length=length, page_size=self.page_size)

    def munmap(self, ring: RingMapping) -> None:
        try:
            self.funnel.munmap(ring.address, ring.length)
        except SyscallError as exc:
            raise self._error(exc, f"the ring buffer of perf event fd {ring.fd}") from None

    def close(self, fd: int) -> None:
        try:
            self.funnel.close(fd)
        except SyscallError as exc:
            raise self._error(exc, f"fd {fd}") from None
