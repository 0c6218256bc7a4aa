"""perf ring records as the kernel writes them for a recording's events (SAMPLE_TYPE, and the
sample_id_all trailer of TID, TIME, CPU, IDENTIFIER): the tests' way to make ring bytes."""

from __future__ import annotations

import struct

from evspec.loader.abi.perf import RecordType


def full_sample(pid: int, tid: int, time: int, cpu: int, payload: bytes, identifier: int = 77) -> bytes:
    """A whole PERF_RECORD_SAMPLE (identifier, ip, tid, time, cpu, period, raw)."""
    size = (len(payload) + 4 + 7) // 8 * 8 - 4
    body = struct.pack("=QQIIQIIQ", identifier, 0, pid, tid, time, cpu, 0, 1) + struct.pack("=I", size)
    body += payload.ljust(size, b"\0")
    return struct.pack("=IHH", RecordType.SAMPLE, 0, 8 + len(body)) + body


def trailer(pid: int, tid: int, time: int, cpu: int) -> bytes:
    return struct.pack("=IIQIIQ", pid, tid, time, cpu, 0, 77)


def lost_record(count: int, time: int = 0) -> bytes:
    return struct.pack("=IHHQQ", RecordType.LOST, 0, 24 + 32, 77, count) + trailer(0, 0, time, 3)


def comm_record(pid: int, tid: int, comm: bytes, time: int) -> bytes:
    name = (comm + b"\0").ljust(-(-(len(comm) + 1) // 8) * 8, b"\0")
    body = struct.pack("=II", pid, tid) + name + trailer(pid, tid, time, 0)
    return struct.pack("=IHH", RecordType.COMM, 0, 8 + len(body)) + body


def fork_record(child: int, parent: int, time: int) -> bytes:
    body = struct.pack("=IIIIQ", child, parent, child, parent, time) + trailer(child, child, time, 0)
    return struct.pack("=IHH", RecordType.FORK, 0, 8 + len(body)) + body
