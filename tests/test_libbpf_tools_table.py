"""docs/libbpf-tools.md (written by scripts/libbpf_tools_table.py): a row for every object of
libbpf-tools 0.37, with event strings that set what the tool's user space sizes and that parse."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from libbpf_tools_table import event_strings  # noqa: E402

from evspec.parser import analyze  # noqa: E402

OBJECTS = json.loads((REPO / "tests" / "data" / "libbpf_tools" / "objects.json").read_text())
ROW = re.compile(r"^\| (\w+) \| `([^`]*)` \| (.*) \| (.*) \|$")


def rows() -> dict[str, tuple[str, str]]:
    out = {}
    for line in (REPO / "docs" / "libbpf-tools.md").read_text().splitlines():
        m = ROW.match(line)
        if m:
            assert m.group(1) not in out, f"{m.group(1)} twice"
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


def test_every_object_has_a_row_with_the_strings_the_script_runs() -> None:
    table = rows()
    assert sorted(table) == sorted(OBJECTS)
    for tool, (strings, _) in table.items():
        assert strings == " ".join(f"-e {s}" for s in event_strings(tool, OBJECTS[tool]))


def test_the_strings_parse_and_name_the_sizes_user_space_gives() -> None:
    for tool, facts in OBJECTS.items():
        strings = event_strings(tool, facts)
        whole = ",".join(strings)  # the events of several -e as one list: references resolve
        assert not [d for d in analyze(whole).diagnostics if d.is_error], (tool, whole)
        for name in facts["sized_by_user_space"]:
            m = facts["maps"][name]
            if m["type"] == "stack_trace" or m["max_entries"] == 0:
                assert f"map:{name}.max_entries=" in strings[-1], (tool, name)


def test_the_table_says_an_outcome_for_every_tool() -> None:
    for tool, (_, said) in rows().items():
        assert said.startswith("fails: ") or re.search(r"records|histogram|table|printed nothing", said), (tool, said)
