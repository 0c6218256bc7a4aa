"""Program and BTF operations of ``Kernel``: loading (with the verifier's or the BTF log on
failure), running once, describing, linking to perf events."""

from __future__ import annotations

import ctypes
import errno as E
import struct
from collections.abc import Callable, Iterator, Sequence

from evspec.loader.abi import bpf as abi
from evspec.loader.kernel.base import KernelBase, address, in_buffer
from evspec.loader.kernel.errors import KernelError, VerifierError
from evspec.loader.kernel.verifier import summarize
from evspec.loader.object.spec import LineInfo

from evspec.codes import kernel as codes
from evspec.span import Slotted

FIRST_LOG_SIZE = 64 * 1024
MAX_LOG_SIZE = 0xFFFFFFFF >> 2  # the kernel refuses larger verifier log buffers
FUNC_INFO = struct.Struct("=II")  # struct bpf_func_info: insn_off, type_id
LINE_INFO = struct.Struct("=IIII")  # struct bpf_line_info: insn_off, file_name_off, line_off, line_col
CORE_RELO = struct.Struct("=IIII")  # struct bpf_core_relo: insn_off, type_id, access_str_off, kind
# Failures that a repeated load with a log cannot explain better.
_FINAL_CODES = (codes.PERMISSION, codes.MEMLOCK, codes.ATTR_TOO_BIG)
BTF_MAX_SIZE = 16 << 20  # the kernel's limit on a BPF_BTF_LOAD blob
_BTF_HEADER_LEN = 24  # struct btf_header as every kernel since 4.18 knows it
# expected attach types of programs that run through a BPF trampoline: fentry, fexit, fmod_ret, lsm
# (enum bpf_attach_type: BPF_TRACE_FENTRY, BPF_TRACE_FEXIT, BPF_MODIFY_RETURN, BPF_LSM_MAC, BPF_LSM_CGROUP)
_TRAMPOLINE_ATTACH_TYPES = {24: "fentry", 25: "fexit", 26: "fmod_ret", 27: "lsm", 43: "lsm_cgroup"}
_TRAMPOLINE_PROG_TYPES = (26, 29)  # BPF_PROG_TYPE_TRACING, BPF_PROG_TYPE_LSM


class ProgramDescription(Slotted):
    """A program as BPF_OBJ_GET_INFO_BY_FD describes it."""

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


class _Attempt(Slotted):
    """One PROG_LOAD/BTF_LOAD try: the fd, or the error and the log size the kernel asked for."""

    fd: int | None
    error: KernelError | None
    log_true_size: int


def _with_growing_log(
    attempt: Callable[[ctypes.Array], _Attempt],  # type: ignore[type-arg]
) -> tuple[int | None, KernelError | None, str]:
    """Repeat ``attempt`` with a larger log buffer while the kernel says it was too small; the fd,
    or the error and the log of the last try."""
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


def _trampoline_refusal(error: KernelError, what: str, prog_type: int, attach_type: int) -> KernelError:
    """An EPERM without a verifier log for a trampoline program of a process that has the
    capabilities: the kernel refused the program before verifying it, and the generic reading of
    EPERM (a locked-memory limit) does not apply."""
    kind = _TRAMPOLINE_ATTACH_TYPES.get(attach_type)
    if error.errno != E.EPERM or kind is None or prog_type not in _TRAMPOLINE_PROG_TYPES:
        return error
    if error.code != codes.MEMLOCK and "although the process has the needed capabilities" not in error.message:
        return error  # a missing capability: that reading stands
    return KernelError(
        codes.PERMISSION,
        f"BPF_PROG_LOAD for {what or 'a program'}: Operation not permitted (EPERM) before the verifier ran (no "
        f"log): the kernel refused a {kind} program, which needs a BPF trampoline",
        errno=error.errno,
        operation=error.operation,
    )


class ProgramOperations(KernelBase):
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
        core_relos: Sequence[tuple[int, int, int, int]] = (),
        attach_btf_id: int = 0,
        attach_btf_obj_fd: int = 0,
        fd_array: Sequence[int] = (),
    ) -> int:
        """Load a program; a rejection raises ``VerifierError`` with the verifier's log.

        ``func_info`` pairs (instruction index, BTF FUNC type id) describe the program's functions
        in the BTF loaded as ``btf_fd`` (the verifier needs them for callbacks); ``line_records``
        (instruction index, file name and source line offsets in that BTF's strings, line << 10 |
        column) let the verifier log and ``bpftool prog dump jited linum`` show source lines;
        ``line_info`` (the object's own reading of them) lets the error name the source line;
        ``core_relos`` (byte offset, type id and access string offset in that BTF, kind) are CO-RE
        relocations for the kernel (5.17+) to apply itself. ``fd_array``: the module BTF fds that
        the program's kfunc calls name by index (their ``off``; index 0 is vmlinux's).
        ``attach_btf_id`` is a type of vmlinux's BTF, or of the module BTF open as
        ``attach_btf_obj_fd`` (5.11+; 0: vmlinux's).
        The first attempt runs without a log (fast path); after a failure the load is repeated
        with ``log_level`` 1 (or the caller's level) and a buffer that grows until the log fits.
        """
        what = f"program '{name}'" if name else ""
        if len(insns) % abi.INSN_SIZE or not insns:
            raise KernelError(
                codes.BAD_SIZE,
                f"{what or 'a program'} is {len(insns)} bytes, not whole {abi.INSN_SIZE}-byte instructions",
            )
        ibuf = in_buffer(insns)
        lbuf = ctypes.create_string_buffer(license.encode() + b"\0")
        fbuf = in_buffer(b"".join(FUNC_INFO.pack(off, tid) for off, tid in func_info))
        line_buf = in_buffer(b"".join(LINE_INFO.pack(*record) for record in line_records))
        core_buf = in_buffer(b"".join(CORE_RELO.pack(*record) for record in core_relos))
        fd_buf = (ctypes.c_int32 * len(fd_array))(*fd_array) if fd_array else None

        def attempt(level: int, log: ctypes.Array | None) -> _Attempt:  # type: ignore[type-arg]
            attr = abi.ProgLoadAttr(
                prog_type=prog_type,
                insn_cnt=len(insns) // abi.INSN_SIZE,
                insns=address(ibuf),
                license=address(lbuf),
                kern_version=kern_version,
                prog_flags=prog_flags,
                prog_name=abi.object_name(name),
                expected_attach_type=expected_attach_type,
                attach_btf_id=attach_btf_id,
                attach_prog_fd=attach_btf_obj_fd,  # the union's attach_btf_obj_fd
            )
            if btf_fd is not None:
                attr.prog_btf_fd = btf_fd
            if func_info:
                attr.func_info_rec_size, attr.func_info_cnt = FUNC_INFO.size, len(func_info)
                attr.func_info = address(fbuf)
            if line_records:
                attr.line_info_rec_size, attr.line_info_cnt = LINE_INFO.size, len(line_records)
                attr.line_info = address(line_buf)
            if core_relos:
                attr.core_relo_rec_size, attr.core_relo_cnt = CORE_RELO.size, len(core_relos)
                attr.core_relos = address(core_buf)
            if fd_buf is not None:
                attr.fd_array = address(fd_buf)
            if log is not None:
                attr.log_level, attr.log_size, attr.log_buf = level, len(log), address(log)
            try:
                return _Attempt(self._bpf_load(abi.Cmd.PROG_LOAD, attr, what), None, 0)
            except KernelError as exc:
                return _Attempt(None, exc, attr.log_true_size)

        if not log_level:
            first = attempt(0, None)
            if first.fd is not None:
                return first.fd
            assert first.error is not None
            if first.error.errno != E.E2BIG and first.error.code in _FINAL_CODES:
                # E2BIG goes on: the log may say the program is too large
                raise _trampoline_refusal(first.error, what, prog_type, expected_attach_type)
        fd, error, log = _with_growing_log(lambda buf: attempt(log_level or abi.BPF_LOG_LEVEL1, buf))
        if fd is not None:
            return fd
        assert error is not None
        if not log.strip():
            raise _trampoline_refusal(error, what, prog_type, expected_attach_type)
        raise VerifierError(name, error.errno or 0, log, summarize(log, line_info))

    def run_program(self, fd: int, *, ctx: bytes = b"", what: str = "") -> int:
        """Run a loaded program once with ``ctx`` as its context (BPF_PROG_TEST_RUN); its return value."""
        cbuf = in_buffer(ctx) if ctx else None
        attr = abi.ProgTestRunAttr(prog_fd=fd, ctx_size_in=len(ctx), ctx_in=address(cbuf))
        self._bpf(abi.Cmd.PROG_TEST_RUN, attr, what or f"program fd {fd}")
        return int(attr.retval)

    def load_btf(self, data: bytes) -> int:
        """Load raw BTF; a rejection raises ``KernelError`` (EK014) with the BTF log as detail."""
        dbuf = in_buffer(data)

        def attempt(log: ctypes.Array | None) -> _Attempt:  # type: ignore[type-arg]
            attr = abi.BtfLoadAttr(btf=address(dbuf), btf_size=len(data))
            if log is not None:
                attr.btf_log_buf, attr.btf_log_size, attr.btf_log_level = address(log), len(log), 1
            try:
                return _Attempt(self._bpf_load(abi.Cmd.BTF_LOAD, attr, "BTF"), None, 0)
            except KernelError as exc:
                return _Attempt(None, exc, attr.btf_log_true_size)

        first = attempt(None)
        if first.fd is not None:
            return first.fd
        assert first.error is not None
        if first.error.errno == E.E2BIG:  # every field set here is one the first BPF_BTF_LOAD had
            raise _btf_too_big(first.error, data) from None
        if first.error.code in _FINAL_CODES:
            raise first.error
        fd, error, log = _with_growing_log(attempt)
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

    def program_xlated(self, fd: int) -> bytes:
        """The program's instructions as the verifier left them (``xlated_prog_insns``)."""
        info = abi.ProgInfo()
        self._info(fd, info, f"program fd {fd}")
        buf = ctypes.create_string_buffer(max(info.xlated_prog_len, 1))
        info = abi.ProgInfo(xlated_prog_len=info.xlated_prog_len, xlated_prog_insns=ctypes.addressof(buf))
        self._info(fd, info, f"program fd {fd}")
        return buf.raw[:info.xlated_prog_len]

    def program_ids(self) -> Iterator[int]:
        """The ids of every program on the system (BPF_PROG_GET_NEXT_ID)."""
        return self._next_ids(abi.Cmd.PROG_GET_NEXT_ID)

    def raw_tracepoint_open(self, name: str | None, prog_fd: int) -> int:
        """Attach a raw tracepoint program to the tracepoint ``name`` (``sched_switch``), or a
        tp_btf program (``name`` None) to the tracepoint it was loaded for; closing the
        descriptor returned detaches it."""
        text = ctypes.create_string_buffer(name.encode()) if name is not None else None
        attr = abi.RawTracepointOpenAttr(name=ctypes.addressof(text) if text is not None else 0, prog_fd=prog_fd)
        return self._bpf(abi.Cmd.RAW_TRACEPOINT_OPEN, attr, f"raw tracepoint {name or 'of the program'}")

    def link_perf_event(self, prog_fd: int, perf_fd: int, *, cookie: int = 0) -> int:
        """Attach a program to a perf event with a BPF link (5.15+); closing the link detaches."""
        attr = abi.LinkCreateAttr(
            prog_fd=prog_fd, target_fd=perf_fd, attach_type=abi.BPF_PERF_EVENT, bpf_cookie=cookie
        )
        return self._bpf(abi.Cmd.LINK_CREATE, attr, f"perf event fd {perf_fd}")


    def link_uprobe_multi(self, prog_fd: int, path: str, offsets: Sequence[int], *, pid: int = 0) -> int:
        """A uprobe_multi link of ``prog_fd`` on ``offsets`` of the file ``path`` (6.6+), only in
        process ``pid`` (0: any); closing the link detaches."""
        text = ctypes.create_string_buffer(path.encode())
        where = (ctypes.c_uint64 * max(len(offsets), 1))(*offsets)
        attr = abi.UprobeMultiLinkAttr(prog_fd=prog_fd, target_fd=0, attach_type=abi.BPF_TRACE_UPROBE_MULTI,
                                       path=ctypes.addressof(text), offsets=ctypes.addressof(where),
                                       cnt=len(offsets), pid=pid & 0xFFFFFFFF)
        return self._bpf(abi.Cmd.LINK_CREATE, attr, f"uprobe_multi link on '{path}'")

def _btf_too_big(exc: KernelError, data: bytes) -> KernelError:
    """BPF_BTF_LOAD's E2BIG (with every attribute the kernel knows): the kernel says it for a blob
    over ``BTF_MAX_SIZE`` and for a header longer than its struct btf_header whose extra bytes are
    not zero ("Unsupported btf_header"); which of the two, from the blob."""
    hdr_len = struct.unpack_from("<I" if data[:2] == b"\x9f\xeb" else ">I", data, 4)[0] if len(data) >= 8 else 0
    if len(data) > BTF_MAX_SIZE:
        why = f"the BTF is {len(data)} bytes, more than the kernel's limit of {BTF_MAX_SIZE} (BTF_MAX_SIZE)"
    elif _BTF_HEADER_LEN < hdr_len <= len(data) and any(data[_BTF_HEADER_LEN:hdr_len]):
        why = (f"the BTF header is {hdr_len} bytes with non-zero bytes past the {_BTF_HEADER_LEN} this kernel's "
               "struct btf_header has (\"Unsupported btf_header\"): it was written for a newer kernel")
    else:
        why = "the kernel says the BTF is too large or its header too long for it"
    return KernelError(codes.ATTR_TOO_BIG, f"BPF_BTF_LOAD: {why} (E2BIG)", errno=exc.errno,
                       operation=exc.operation)
