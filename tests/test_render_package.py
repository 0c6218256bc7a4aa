"""The evspec.render package: its exports, loaded lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import evspec.render
from evspec.render import jsonfmt, perf, text


def test_exports_are_the_module_functions() -> None:
    assert evspec.render.render_text is text.render_text
    assert evspec.render.summary_line is text.summary_line
    assert evspec.render.render_perf is perf.render_perf
    assert evspec.render.BPF_MAP_HINT is perf.BPF_MAP_HINT
    assert evspec.render.render_json is jsonfmt.render_json
    for name in evspec.render.__all__:
        assert callable(getattr(evspec.render, name)) or isinstance(getattr(evspec.render, name), str)


def test_unknown_name() -> None:
    with pytest.raises(AttributeError):
        evspec.render.render_xml  # noqa: B018


def test_importing_the_package_loads_no_renderer() -> None:
    code = "import sys, evspec.render; print(sorted(m for m in sys.modules if m.startswith('evspec.render.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout
    assert out.strip() == "[]"
