"""A capture whose file system fills up: writing stops at the failed write, the rings are still
read (what is not written is counted), and the file is completed with the whole records it holds,
or removed when not even its header and features fit. The file system is a stand-in here (writes
refused past a budget, as a full one refuses them, in part and then with ENOSPC); the real one,
a small tmpfs in a private mount namespace, is in test_capture_live."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from evspec.loader.abi.perf import RecordType
from evspec.loader.output.saved import perfdata as pd
from evspec.loader.output.saved.capture import Capture
from test_capture_drain import ATTRS, HOST, Ring, one_sample

SAMPLE_BYTES = len(one_sample(0))


class FullDisk:
    """os.writev for files under ``root``: what fits under ``budget`` bytes of file is written
    (a part of the buffers, as the kernel writes what it can), then ENOSPC."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path, budget: int) -> None:
        self.real = os.writev
        self.root = str(root)
        self.budget = budget
        monkeypatch.setattr(os, "writev", self.writev)

    def writev(self, fd: int, buffers: list[memoryview]) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(self.root):
            return self.real(fd, buffers)
        room = self.budget - os.lseek(fd, 0, os.SEEK_CUR)
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        data = b"".join(bytes(b) for b in buffers)[:room]
        return os.write(fd, data)


def fill(capture: Capture, ring: Ring, rounds: int, per_round: int) -> None:
    time = 0
    for _ in range(rounds):
        for _ in range(per_round):
            time += 1
            ring.put(one_sample(time))
        assert capture.drain() is True
        assert ring.page.data_tail == ring.page.data_head  # read and released, written or not


def samples_in(path: Path) -> int:
    data = pd.read_perf_data(path)
    assert not data.truncated  # complete: header and features written
    return sum(r.type == RecordType.SAMPLE for r in data.records())


def test_a_full_file_system_keeps_the_whole_records_and_counts_the_rest(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ring = Ring()
    capture = Capture(tmp_path / "c.data", ATTRS, [ring.reader], HOST)
    FullDisk(monkeypatch, tmp_path, budget=capture.writer.data_offset + 20_000)
    fill(capture, ring, rounds=10, per_round=50)  # 500 samples of 120 bytes: 60,000 bytes
    assert capture.failure is not None and capture.failure.errno == errno.ENOSPC
    assert "cannot write" in capture.failure.message and "(ENOSPC)" in capture.failure.message
    capture.finish()
    kept = samples_in(tmp_path / "c.data")
    assert kept == capture.samples and 0 < kept < 20_000 // SAMPLE_BYTES
    assert kept + capture.unwritten == 500 and not capture.removed
    assert os.path.getsize(tmp_path / "c.data") <= capture.writer.data_offset + 20_000


def test_records_of_the_round_that_failed_are_kept_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One round of 200 samples, of which the file system takes 150.5 samples' worth: of the 150
    whole ones, what leaves room for the features and a block is kept; the cut one is not."""
    ring = Ring()
    capture = Capture(tmp_path / "c.data", ATTRS, [ring.reader], HOST)
    features = capture.writer.feature_bytes()
    FullDisk(monkeypatch, tmp_path, budget=capture.writer.data_offset + 150 * SAMPLE_BYTES + SAMPLE_BYTES // 2)
    fill(capture, ring, rounds=1, per_round=200)
    assert capture.failure is not None and capture.writer.data_size == 0  # the round did not go in whole
    capture.finish()
    kept = samples_in(tmp_path / "c.data")
    assert kept == (150 * SAMPLE_BYTES - features - 4096) // SAMPLE_BYTES and kept > 50
    assert kept + capture.unwritten == 200


def test_a_file_that_cannot_hold_its_features_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ring = Ring()
    capture = Capture(tmp_path / "c.data", ATTRS, [ring.reader], HOST)
    FullDisk(monkeypatch, tmp_path, budget=capture.writer.data_offset + 10)
    fill(capture, ring, rounds=3, per_round=10)
    capture.finish()
    assert capture.removed and capture.unwritten == 30 and not (tmp_path / "c.data").exists()


def test_a_file_whose_header_does_not_fit_is_not_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FullDisk(monkeypatch, tmp_path, budget=64)
    with pytest.raises(pd.WriteError, match=r"cannot write .*c\.data: No space left on device \(ENOSPC\); the "
                                            r"file is removed: not even its header fits"):
        Capture(tmp_path / "c.data", ATTRS, [Ring().reader], HOST)
    assert not (tmp_path / "c.data").exists()
