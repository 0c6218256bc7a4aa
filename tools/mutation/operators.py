"""The mutations the job makes, found and applied on a module's syntax tree.

A mutation point is one small change a wrong answer could come from: a comparison flipped at its
boundary, an arithmetic or bitwise operator swapped, ``and``/``or`` exchanged, a ``not`` or a minus
dropped, an integer off by one, a boolean inverted, a result replaced by ``None``, a call, store,
``raise`` or increment removed, ``break``/``continue`` exchanged. Its id is ``QUALNAME#N``: the N-th
point (from 1, in source order) of the innermost function or class, so that an edit elsewhere in the
module leaves it unchanged. Annotations, docstrings, f-strings, decorators and asserts are left alone.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
    ast.LShift: ast.RShift, ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr,
}  # fmt: skip
_SKIPPED_NAMES = frozenset({"__all__", "__slots__", "__match_args__"})

Replace = Callable[[ast.AST], ast.AST]


@dataclass(frozen=True)
class MutationPoint:
    """One mutant of a module: where it is and what it changes."""

    id: str
    kind: str
    line: int
    end_line: int
    before: str
    after: str
    #: inside a function body (runs when called), rather than at import
    in_body: bool


def _swap_op(table: dict, node: ast.AST) -> ast.AST:
    new = copy.copy(node)
    new.op = table[type(node.op)]()
    return new


def _swap_compare(index: int) -> Replace:
    def replace(node: ast.AST) -> ast.AST:
        assert isinstance(node, ast.Compare)
        new = copy.copy(node)
        new.ops = list(node.ops)
        new.ops[index] = _COMPARE_SWAP[type(node.ops[index])]()
        return new

    return replace


def _swap_boolop(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.BoolOp)
    return ast.BoolOp(op=ast.Or() if isinstance(node.op, ast.And) else ast.And(), values=node.values)


def _constant(value: object) -> Replace:
    return lambda node: ast.Constant(value=value)


def _operand(node: ast.AST) -> ast.AST:
    assert isinstance(node, ast.UnaryOp)
    return node.operand


def _return_none(node: ast.AST) -> ast.AST:
    return ast.Return(value=ast.Constant(value=None))


def _pass(node: ast.AST) -> ast.AST:
    return ast.Pass()


def _loop_jump(node: ast.AST) -> ast.AST:
    return ast.Continue() if isinstance(node, ast.Break) else ast.Break()


def _candidates(node: ast.AST) -> Iterator[tuple[str, Replace]]:
    """The mutations of ``node`` itself (its children have their own), in a fixed order."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE_SWAP:
                yield "compare", _swap_compare(i)
    elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP_SWAP:
        yield "operator", lambda n: _swap_op(_BINOP_SWAP, n)
    elif isinstance(node, ast.BoolOp):
        yield "boolean", _swap_boolop
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.Invert)):
        yield "unary", _operand
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            yield "constant", _constant(not node.value)
        elif isinstance(node.value, int):
            yield "constant", _constant(node.value + 1)
    elif isinstance(node, ast.Return):
        if node.value is not None and not isinstance(node.value, ast.Constant):
            yield "return", _return_none
    elif isinstance(node, (ast.Break, ast.Continue)):
        yield "loop", _loop_jump
    if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.Await)):
        yield "statement", _pass
    elif isinstance(node, ast.Assign) and all(
        isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets
    ):
        yield "statement", _pass
    elif isinstance(node, (ast.AugAssign, ast.Raise)):
        yield "statement", _pass


def _skipped_assign(node: ast.AST) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return any(isinstance(t, ast.Name) and t.id in _SKIPPED_NAMES for t in targets)


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Name)
        and test.id == "TYPE_CHECKING"
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


class _Walker(ast.NodeTransformer):
    """Numbers the mutation points in source order; replaces the one named ``target``, if any."""

    def __init__(self, target: str | None = None) -> None:
        self.target = target
        self.points: list[MutationPoint] = []
        self.applied: MutationPoint | None = None
        self._scope: list[str] = []
        self._counts: dict[str, int] = {}
        self._in_body = False

    def _qualname(self) -> str:
        return ".".join(self._scope) or "<module>"

    def visit(self, node: ast.AST) -> ast.AST | None:
        if isinstance(node, (ast.JoinedStr, ast.Assert)) or _is_type_checking(node):
            return node
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _skipped_assign(node):
            return node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self._visit_scope(node)
        for kind, replace in _candidates(node):
            point = self._point(node, kind, replace)
            if self.target is not None and point.id == self.target:
                self.applied = point
                return ast.copy_location(replace(node), node)
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                node.value = self.visit(node.value)
            return node
        if isinstance(node, ast.arg):
            return node
        return self.generic_visit(node)

    def _point(self, node: ast.AST, kind: str, replace: Replace) -> MutationPoint:
        qualname = self._qualname()
        self._counts[qualname] = self._counts.get(qualname, 0) + 1
        mutated = replace(copy.deepcopy(node))
        point = MutationPoint(
            id=f"{qualname}#{self._counts[qualname]}",
            kind=kind,
            line=node.lineno,
            end_line=node.end_lineno or node.lineno,
            before=ast.unparse(node),
            after=ast.unparse(mutated),
            in_body=self._in_body,
        )
        self.points.append(point)
        return point

    def _visit_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        if isinstance(node, ast.ClassDef):
            node.bases = [self.visit(b) for b in node.bases]
        else:
            node.args = self.visit(node.args)
        outer = self._in_body
        self._scope.append(node.name)
        self._in_body = not isinstance(node, ast.ClassDef)
        body = []
        for i, stmt in enumerate(node.body):
            docstring = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            body.append(stmt if docstring else self.visit(stmt))
        node.body = [s for s in body if s is not None]
        self._scope.pop()
        self._in_body = outer
        return node


def mutation_points(source: str, filename: str = "<module>") -> list[MutationPoint]:
    """Every mutation point of a module's source, in source order."""
    walker = _Walker()
    walker.visit(ast.parse(source, filename))
    return walker.points


def mutate(source: str, mutant_id: str, filename: str = "<module>") -> tuple[ast.Module, MutationPoint]:
    """The module's tree with the one mutation ``mutant_id`` applied; KeyError if it has none such."""
    walker = _Walker(mutant_id)
    tree = walker.visit(ast.parse(source, filename))
    if walker.applied is None:
        raise KeyError(mutant_id)
    return ast.fix_missing_locations(tree), walker.applied
