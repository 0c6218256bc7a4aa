"""`evspec verify` leaves nothing pinned when it is stopped at the wrong moment, with real signals:
SIGTERM while a map is pinned in its private directory (on /sys/fs/bpf, or on its own bpffs mount
when none is mounted there) removes it and exits 143; after SIGKILL the next verify sweeps the
directory (and the mount) of the dead run away, never a live run's.

Each test runs verify in a private mount namespace (``unshare``) held open by a ``sleep``, where
/sys/fs/bpf is a bpffs mount or none; the test looks into it through /proc/HOLDER/root."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bpf_build import BPF_FLAGS, require_tools
from corpus_files import DATA
from evspec.loader.verify.pins import owner_of

MAP = "es_verify_pinned"
WAIT = 120.0  # seconds at most for verify to pin its map (the machine may be busy)


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("clang", "unshare", "nsenter")
    out = tmp_path_factory.mktemp("verify_signals")
    out.chmod(0o755)
    shutil.copy(DATA / "verify" / "pinned_slow.c", out)
    shutil.copy(DATA / "corpus" / "bpf" / "maps.c", out)
    for name in ("pinned_slow", "maps"):
        subprocess.run(["clang", *BPF_FLAGS, "-c", f"{name}.c", "-o", f"{name}.o"], cwd=out, check=True)
    return out


class Namespace:
    """A private mount namespace, held by a sleeping process, with or without bpffs at /sys/fs/bpf."""

    def __init__(self, bpffs: bool) -> None:
        setup = "mount -t bpf bpf /sys/fs/bpf" if bpffs else "umount /sys/fs/bpf 2>/dev/null; true"
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                        f"{setup} && echo ready && exec sleep 1000"],
                                       stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout is not None and self.holder.stdout.readline() == "ready\n"
        self.root = Path(f"/proc/{self.holder.pid}/root")
        self.pin_parent = self.root / ("sys/fs/bpf" if bpffs else "tmp")

    def verify(self, cwd: Path, *objects: str) -> subprocess.Popen[str]:
        return subprocess.Popen(["nsenter", f"--mount=/proc/{self.holder.pid}/ns/mnt", f"--wd={cwd}", "--",
                                 sys.executable, "-m",
                                 "evspec", "verify", *objects], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def dirs(self) -> list[Path]:
        return sorted(p for p in self.pin_parent.iterdir() if p.name.startswith("evspec-verify-"))

    def mounts(self) -> str:
        return (Path(f"/proc/{self.holder.pid}/mounts")).read_text()

    def wait_for_pin(self, proc: subprocess.Popen[str]) -> Path:
        """The directory of ``proc`` once its map is pinned there; ``proc`` is stopped (SIGSTOP)
        the moment it is seen, so that the signal the test sends next finds it there."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for d in self.dirs():
                owner = owner_of(d.name)
                if owner is not None and owner.pid == proc.pid and (d / MAP).exists():
                    os.kill(proc.pid, signal.SIGSTOP)
                    return d
            if proc.poll() is not None:
                pytest.fail(f"verify ended before its map was seen pinned: {proc.communicate()}")
            time.sleep(0.002)
        proc.kill()
        pytest.fail("verify did not pin its map in time")

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait()


@pytest.fixture(params=[True, False], ids=["bpffs-mounted", "private-mount"])
def namespace(request: pytest.FixtureRequest, root_kernel: None) -> Iterator[Namespace]:
    ns = Namespace(request.param)
    try:
        yield ns
    finally:
        ns.close()


def test_sigterm_removes_the_pins_and_exits_143(namespace: Namespace, objects: Path) -> None:
    proc = namespace.verify(objects, "pinned_slow.o")
    pinned = namespace.wait_for_pin(proc)
    os.kill(proc.pid, signal.SIGTERM)
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.endswith("evspec verify: stopped by SIGTERM: what it had loaded and pinned is removed\n")
    assert not pinned.exists() and namespace.dirs() == []
    assert "evspec-verify-" not in namespace.mounts()


def test_after_sigkill_the_next_verify_sweeps(namespace: Namespace, objects: Path) -> None:
    proc = namespace.verify(objects, "pinned_slow.o")
    pinned = namespace.wait_for_pin(proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=WAIT)
    assert (pinned / MAP).exists()  # what a killed run leaves, before this change for good
    after = namespace.verify(objects, "maps.o")
    out, err = after.communicate(timeout=WAIT)
    assert after.returncode == 0, err
    assert f"evspec verify: removed {str(pinned).removeprefix(str(namespace.root))} (left by verify process " \
           f"{proc.pid}, which is gone)\n" in err
    assert not pinned.exists() and namespace.dirs() == []
    assert "evspec-verify-" not in namespace.mounts()


def test_a_live_runs_directory_is_not_swept(namespace: Namespace, objects: Path) -> None:
    proc = namespace.verify(objects, "pinned_slow.o")
    pinned = namespace.wait_for_pin(proc)  # stopped, not dead
    try:
        other = namespace.verify(objects, "maps.o")
        _, err = other.communicate(timeout=WAIT)
        assert other.returncode == 0 and "removed" not in err, err
        assert (pinned / MAP).exists()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    assert "1 of 1 program(s) loaded" in out and namespace.dirs() == []
