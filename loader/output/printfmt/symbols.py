"""Kernel addresses named as perf script names them for libtraceevent's ``%pS``/``%ps``: by the
machine's kernel symbols (kallsyms, text and data, each symbol ending where the next begins)."""

from __future__ import annotations

import bisect
from collections.abc import Callable

Resolver = Callable[[int], "tuple[str, int] | None"]  # kernel address -> (symbol, its start)


def kernel_symbols(path: str = "/proc/kallsyms") -> Resolver:
    """A resolver over ``path``, read on its first use; a file that cannot be read (or whose
    addresses are hidden: all zero) resolves nothing."""
    table: list[tuple[int, str]] = []
    loaded = False

    def resolve(address: int) -> tuple[str, int] | None:
        nonlocal loaded
        if not loaded:
            loaded = True
            from evspec.loader.externs.resolve import kallsyms_entries

            try:
                table.extend(sorted((addr, name) for addr, letter, name in kallsyms_entries(path)
                                    if letter.upper() in "TWDB" and addr))
            except OSError:
                pass
        at = bisect.bisect_right(table, (address, "\U0010ffff")) - 1
        if at < 0 or (at + 1 == len(table) and address != table[at][0]):
            return None
        return table[at][1], table[at][0]

    return resolve
