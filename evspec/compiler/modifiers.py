"""Event and group modifiers (``cycles:uk``, ``{...}:S``) as perf applies them to an evsel.

An event's own modifiers start from a clean state; a group's start from each member's current
state (perf's ``parse_events__modifier_list``, 6.1's ``get_event_modifier``). perf 6.1 and 6.12
also set ``exclude_guest`` for ``u`` and ``p`` (a host profiler: 6.1 for a ``p`` only before any
``G``/``H`` decided guest and host, 6.12 for any ``p``); perf 7.2 and later leave guest and host
to ``G`` and ``H``.
"""

from __future__ import annotations

from typing import Protocol

from evspec.compiler.releases import Release


class ModifierTarget(Protocol):
    """The evsel state modifiers change (``compile._Evsel``)."""

    attr: dict[str, int]
    exclude_gh: bool
    sample_read: bool
    precise_max: bool
    weak: bool
    bpf_counter: bool
    retire_lat: bool
    dont_regroup: bool

    @property
    def is_leader(self) -> bool: ...


#: the modifier letters that set an evsel flag (not an attr field)
_FLAGS = {"P": "precise_max", "S": "sample_read", "W": "weak", "b": "bpf_counter", "R": "retire_lat",
          "X": "dont_regroup"}


def apply_modifiers(ev: ModifierTarget, letters: str, *, group: bool, release: Release) -> None:
    """Apply modifier ``letters`` to ``ev`` (``group``: they are its group's)."""
    a = ev.attr
    eu = a.get("exclude_user", 0) if group else 0
    ek = a.get("exclude_kernel", 0) if group else 0
    eh = a.get("exclude_hv", 0) if group else 0
    e_host = a.get("exclude_host", 0) if group else 0
    e_guest = a.get("exclude_guest", 0) if group else 0
    exclude_gh = ev.exclude_gh if group else False
    exclude = eu | ek | eh
    host_profiler = release.exclude_guest_default  # 6.1, 6.12: u and p exclude the guest
    if release.precise_excludes_guest == "always" and "p" in letters:
        e_guest = 1
    for letter in letters:
        if letter == "p" and release.precise_excludes_guest == "in-order" and not exclude_gh:
            e_guest = 1
        if letter in "ukh":
            if not exclude:
                exclude = eu = ek = eh = 1
            if letter == "u":
                if host_profiler and not exclude_gh:
                    e_guest = 1
                eu = 0
            elif letter == "k":
                ek = 0
            else:
                eh = 0
        elif letter in "GH":
            if not exclude_gh:
                exclude_gh = True
                e_guest = e_host = 1
            if letter == "G":
                e_guest = 0
            else:
                e_host = 0
    a.update(exclude_user=eu, exclude_kernel=ek, exclude_hv=eh, exclude_host=e_host, exclude_guest=e_guest)
    ev.exclude_gh = exclude_gh
    precise = letters.count("p")
    if precise:
        a["precise_ip"] = (a.get("precise_ip", 0) if group else 0) + precise
    if "I" in letters:
        a["exclude_idle"] = 1
    for letter, flag in _FLAGS.items():
        if letter in letters:
            setattr(ev, flag, True)
        elif release.modifiers_overwrite_flags and letter in "PSWb":  # perf 6.1 copies these set or not
            setattr(ev, flag, False)
    if ev.is_leader:
        if "D" in letters:
            a["pinned"] = 1
        if "e" in letters:
            a["exclusive"] = 1
