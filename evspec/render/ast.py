"""AST as JSON-ready data and as an indented tree, for ``evspec parse``."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

from evspec.span import Span


def to_data(node: Any) -> Any:
    """Nested dicts and lists; every node names its class in ``"node"`` and keeps its spans."""
    if isinstance(node, Span):
        return {"start": node.start, "end": node.end}
    if isinstance(node, Enum):
        return node.value
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        out: dict[str, Any] = {"node": type(node).__name__}
        for f in dataclasses.fields(node):
            if f.name == "source":
                continue
            out[f.name] = to_data(getattr(node, f.name))
        return out
    if isinstance(node, tuple | list):
        return [to_data(x) for x in node]
    return node


def _scalar(value: Any) -> str:
    if isinstance(value, Span):
        return f"[{value.start}, {value.end})"
    if isinstance(value, Enum):
        return str(value.value)
    return repr(value)


def to_tree(node: Any, indent: str = "") -> str:
    """A readable tree: one node a line with its span, scalar fields inline, children indented."""
    lines: list[str] = []
    _tree(node, indent, lines, label="")
    return "\n".join(lines)


def _is_leafish(value: Any) -> bool:
    return not (dataclasses.is_dataclass(value) and not isinstance(value, type)) and not (
        isinstance(value, tuple | list) and value
    )


def _tree(node: Any, indent: str, lines: list[str], label: str) -> None:
    prefix = f"{indent}{label}"
    if isinstance(node, tuple | list):
        lines.append(f"{prefix}[{len(node)}]" if label else f"{indent}[{len(node)}]")
        for child in node:
            _tree(child, indent + "  ", lines, label="- ")
        return
    if not (dataclasses.is_dataclass(node) and not isinstance(node, type)):
        lines.append(f"{prefix}{_scalar(node)}")
        return
    scalars = []
    children = []
    span = getattr(node, "span", None)
    for f in dataclasses.fields(node):
        if f.name in ("span", "source") or f.name.endswith("_span") or f.name.endswith("_spans"):
            continue
        value = getattr(node, f.name)
        if value is None or value == ():
            continue
        if _is_leafish(value) or isinstance(value, Span):
            scalars.append(f"{f.name}={_scalar(value)}")
        else:
            children.append((f.name, value))
    where = f" @{_scalar(span)}" if isinstance(span, Span) else ""
    lines.append(f"{prefix}{type(node).__name__}{where}" + (" " + " ".join(scalars) if scalars else ""))
    for name, value in children:
        _tree(value, indent + "  ", lines, label=f"{name}: ")
