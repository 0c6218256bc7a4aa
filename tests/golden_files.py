"""Golden files under tests/golden/: the expected text of a rendering, compared byte for byte.
Run the tests with ``EVSPEC_BLESS=1`` to rewrite them after an intended change, then review the
diff."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"
BLESS = os.environ.get("EVSPEC_BLESS") == "1"


def check_golden(relative: str, actual: str) -> None:
    path = GOLDEN / relative
    if BLESS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual.encode())
        return
    assert path.exists(), f"{path} is missing: run with EVSPEC_BLESS=1 and review it"
    assert actual == path.read_bytes().decode(), f"{relative} differs from the golden file (EVSPEC_BLESS=1 rewrites it)"
