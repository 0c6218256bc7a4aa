"""Renderers: a sequence of Diagnostics in, a string out (library code never prints).

=================  ==========================================  ===============================
format             function                                    module
=================  ==========================================  ===============================
human text         ``render_text(diags, color=False)``         :mod:`evspec.render.text`
                   ``summary_line(diags)``
perf's layout      ``render_perf(diags, columns=80, ...)``     :mod:`evspec.render.perf`
                   ``perf_error_block(event, column, ...)``
JSON               ``render_json(diags, extra=None, ...)``     :mod:`evspec.render.jsonfmt`
SARIF 2.1.0        ``render_sarif(diags)``                     :mod:`evspec.render.sarif`
GitHub Actions     ``render_github(diags)``                    :mod:`evspec.render.github`
``explain``        ``explain(code)``, ``list_codes()``         :mod:`evspec.render.explain`
=================  ==========================================  ===============================

The names are importable from this package too (except ``explain``, which is also the name of its
module); each module is imported on first use only.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "render_text": "text",
    "summary_line": "text",
    "render_perf": "perf",
    "perf_error_block": "perf",
    "BPF_MAP_HINT": "perf",
    "render_json": "jsonfmt",
    "render_sarif": "sarif",
    "render_github": "github",
    "list_codes": "explain",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
