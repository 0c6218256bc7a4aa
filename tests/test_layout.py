"""The layout shows the pipeline (DESIGN.md "Layout"), and the import graph keeps its rules:

- no import cycle anywhere, imports inside functions and "module:Class" names included (imports
  for the type checker alone run nothing and are left out of this one rule);
- no module imports another module's ``_private`` name;
- no folder holds more than 12 modules, nor a family of modules named alike;
- the no-syscall side (``abi``, ``asm``, ``object``, ``btf``, ``sections``, ``externs``, ``lint``,
  ``user_cache``) and the front end (``evspec`` outside ``evspec.cli``) import nothing of the kernel
  side, not even inside a function;
- the loader imports nothing of the front end's parser, compiler, renderers or commands;
- the grammar package (the LALR runtime both parsers use) imports nothing of either side.

Read from the installed package's files, so what users get is what is checked."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import evspec.grammar

import evspec
from evspec import loader

EVSPEC = Path(evspec.__file__).parent
LOADER = Path(loader.__file__).parent
GRAMMAR = Path(evspec.grammar.__file__).parent
ROOTS = ((LOADER, "evspec.loader"), (GRAMMAR, "evspec.grammar"), (EVSPEC, "evspec"))
KERNEL_SIDE = tuple(f"evspec.loader.{p}" for p in ("kernel", "load", "attach", "output", "session", "verify"))
NO_SYSCALL_SIDE = tuple(f"evspec.loader.{p}" for p in ("abi", "asm", "object", "btf", "sections", "externs",
                                                        "lint", "user_cache"))
# what the loader may not call up into: the stages above it and the command line
FRONT_END_STAGES = tuple(f"evspec.{p}" for p in ("parser", "compiler", "render", "printer", "rules", "dialect",
                                                  "check", "cli"))
MAX_MODULES = 12
# Folders over the limit today, which may not grow: the command line (the thin-CLI work of issue 23
# reshapes it).
OVER_THE_LIMIT = {"evspec.cli": 13}
# The command line's cycles and private names (app.py shares helpers with the commands it imports)
# are what the thin-CLI work of issue 23 removes; nowhere else is either allowed.
CLI = "evspec.cli"


def _module_name(path: Path) -> str:
    root, prefix = next((r, p) for r, p in ROOTS if r == path.parent or r in path.parents)
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((prefix, *parts))


def _modules() -> dict[str, Path]:
    files = {p for root, _ in ROOTS for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    return {_module_name(p): p for p in sorted(files)}


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _package(path: Path, module: str) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _base(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def _type_only(tree: ast.Module) -> set[int]:
    """The nodes inside ``if TYPE_CHECKING:`` blocks (never run)."""
    return {id(n) for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for stmt in node.body for n in ast.walk(stmt)}


def _imports(path: Path, module: str) -> set[str]:
    """Every module ``path`` imports anywhere (top level or inside functions, for the type checker
    too), as absolute names."""
    out: set[str] = set()
    package = _package(path, module)
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(node, package)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(
            r"evspec(\.\w+)+(:\w+)?", node.value
        ):
            out.add(node.value.partition(":")[0])  # a lazily imported "module:Class" (KIND_ATTACHERS)
    return out


def _runtime_edges(path: Path, module: str, modules: dict[str, Path]) -> set[str]:
    """The modules of the package ``path`` makes Python run when it runs (at import or in a
    function): ``from pkg import mod`` is an edge to ``mod``, ``from pkg import name`` to ``pkg``;
    the parent packages every import runs first are no edge of their own."""
    tree = _tree(path)
    skip = _type_only(tree)
    package = _package(path, module)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(node, package)
            out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(
            r"evspec(\.\w+)+:\w+", node.value
        ):
            out.add(node.value.partition(":")[0])
    return {m for m in out if m in modules and m != module}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _within(name: str, tops: tuple[str, ...]) -> bool:
    return any(name == t or name.startswith(t + ".") for t in tops)


def test_the_modules_are_found() -> None:
    modules = _modules()
    assert {"evspec.parser", "evspec.cli.app", "evspec.loader.kernel", "evspec.loader.object.reader",
            "evspec.loader.session", "evspec.loader.btf.core", "evspec.grammar.lalr"} <= set(modules)


def test_imports_inside_functions_and_lazy_names_are_seen() -> None:
    """What the rules below rely on: record's command imports the session inside a function, and
    the attacher names its kind attachers as "module:Class" strings."""
    modules = _modules()
    assert "evspec.loader.session" in _imports(modules["evspec.cli.record"], "evspec.cli.record")
    attacher = "evspec.loader.attach.attacher"
    assert "evspec.loader.attach.probes" in _imports(modules[attacher], attacher)
    assert "evspec.loader.attach.probes" in _runtime_edges(modules[attacher], attacher, modules)


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_anywhere() -> None:
    modules = _modules()
    graph = {m: _runtime_edges(p, m, modules) for m, p in modules.items()}
    wrong = [" <-> ".join(c) for c in _cycles(graph)]
    assert not wrong, "\n".join(wrong)


def _private_imports(path: Path, module: str, modules: dict[str, Path]) -> Iterator[str]:
    tree = _tree(path)
    package = _package(path, module)
    bound: dict[str, str] = {}  # local name -> one of our modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _base(node, package)
            for a in node.names:
                if f"{base}.{a.name}" in modules:
                    bound[a.asname or a.name] = f"{base}.{a.name}"
                elif a.name.startswith("_") and not a.name.startswith("__") and base in modules and base != module:
                    yield f"{module} imports {base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in modules:
                    bound[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__") and bound[node.value.id] != module):
            yield f"{module} uses {bound[node.value.id]}.{node.attr}"


def test_no_module_takes_another_modules_private_names() -> None:
    modules = _modules()
    wrong = [w for m, p in modules.items() for w in _private_imports(p, m, modules)]
    assert not wrong, "\n".join(wrong)


def test_the_private_name_rule_sees_both_forms(tmp_path: Path) -> None:
    modules = {"evspec.a": tmp_path / "a.py", "evspec.b": tmp_path / "b.py"}
    source = tmp_path / "c.py"
    source.write_text("from evspec.a import _x, y\nfrom evspec import b\nb._z()\nb.ok()\n")
    assert list(_private_imports(source, "evspec.c", modules)) == ["evspec.c imports evspec.a._x",
                                                                   "evspec.c uses evspec.b._z"]


def test_the_no_syscall_side_imports_nothing_of_the_kernel_side() -> None:
    wrong = [f"{m} imports {i}" for m, p in _modules().items() if _within(m, NO_SYSCALL_SIDE)
             for i in sorted(_imports(p, m)) if _within(i, KERNEL_SIDE)]
    assert not wrong, "\n".join(wrong)


def test_the_front_end_imports_nothing_of_the_kernel_side() -> None:
    wrong = [f"{m} imports {i}" for m, p in _modules().items()
             if not _within(m, ("evspec.loader", "evspec.cli"))
             for i in sorted(_imports(p, m)) if _within(i, KERNEL_SIDE)]
    assert not wrong, "\n".join(wrong)


def test_the_loader_calls_nothing_up_in_the_front_end() -> None:
    """The loader takes what the parser and compiler made as data; it imports neither them nor a
    renderer nor a command, not even for the type checker."""
    wrong = [f"{m} imports {i}" for m, p in _modules().items() if _within(m, ("evspec.loader",))
             for i in sorted(_imports(p, m)) if _within(i, FRONT_END_STAGES)]
    assert not wrong, "\n".join(wrong)


def test_the_grammar_runtime_belongs_to_neither_side() -> None:
    wrong = [f"{m} imports {i}" for m, p in _modules().items() if _within(m, ("evspec.grammar",))
             for i in sorted(_imports(p, m))
             if i.startswith("evspec") and not _within(i, ("evspec.grammar",))]
    assert not wrong, "\n".join(wrong)


def test_no_folder_holds_a_family_of_modules_named_alike() -> None:
    """Three modules named word_* (or *_word) in one folder are a package waiting to be made."""
    wrong = []
    for folder in {p.parent for p in _modules().values()}:
        names = [p.stem for p in folder.glob("*.py") if p.stem != "__init__" and "_" in p.stem]
        for where, count in (Counter(n.split("_")[0] + "_*" for n in names)
                             + Counter("*_" + n.split("_")[-1] for n in names)).items():
            if count >= 3:
                wrong.append(f"{folder.name}/: {count} modules {where}")
    assert not wrong, wrong


def _folder_modules(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__"))


def test_no_folder_holds_more_than_twelve_modules() -> None:
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        if path.name != "__init__.py":
            continue
        held = _folder_modules(path.parent)
        limit = OVER_THE_LIMIT.get(name, MAX_MODULES)
        if len(held) > limit:
            wrong.append(f"{name}: {len(held)} modules (at most {limit}): {', '.join(held)}")
    assert not wrong, "\n".join(wrong)


def test_the_top_folders_stay_small() -> None:
    assert len(_folder_modules(LOADER)) <= 6, _folder_modules(LOADER)
    assert len(_folder_modules(EVSPEC)) <= 12, _folder_modules(EVSPEC)


def test_the_front_end_has_no_import_cycle_and_takes_no_private_name() -> None:
    """Among the modules of the evspec/ folder (the front end and its command line): no import
    cycle, counting imports inside functions and the "module:function" names of the command table
    (imports for the type checker alone run nothing and are left out), and no module imports
    another module's ``_private`` name, neither as ``from m import _x`` nor as ``m._x``."""
    files = {p for p in EVSPEC.rglob("*.py") if "__pycache__" not in p.parts}
    modules = {_module_name(p): p for p in files}

    def runtime_imports(module: str, path: Path) -> tuple[set[str], list[str]]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = {id(n) for node in ast.walk(tree)
                     if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                     and node.test.id == "TYPE_CHECKING" for stmt in node.body for n in ast.walk(stmt)}
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        private: list[str] = []
        bound: dict[str, str] = {}  # local name -> the module of ours it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if id(node) not in type_only:
                        edges.add(a.name)
                    if a.asname and a.name in modules:
                        bound[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for a in node.names:
                    full = f"{base}.{a.name}"
                    if full in modules:
                        bound[a.asname or a.name] = full
                    elif a.name.startswith("_") and not a.name.startswith("__") and base.startswith("evspec") \
                            and base != module:
                        private.append(f"{module} imports {base}.{a.name}")
                    if id(node) not in type_only:
                        edges.add(full if full in modules else base)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"evspec(\.\w+)+:\w+", node.value):
                edges.add(node.value.partition(":")[0])
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and bound[node.value.id] != module):
                private.append(f"{module} uses {bound[node.value.id]}.{node.attr}")
        return {e for e in edges if e in modules and e != module}, private

    graph: dict[str, set[str]] = {}
    private: list[str] = []
    for module, path in modules.items():
        graph[module], found = runtime_imports(module, path)
        private += found
    # what the rules rely on: a lazy import inside a function, and the command table's names
    assert "evspec.check" in graph["evspec.cli.check"] and "evspec.cli.check" in graph["evspec.cli"]

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    cycles = sorted(f"{m} -> {n} -> ... -> {m}" for m in graph for n in graph[m] if reaches(n, m))
    assert not cycles, "\n".join(cycles)
    assert not private, "\n".join(private)
