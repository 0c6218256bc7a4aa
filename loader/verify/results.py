"""What ``verify`` finds of one object: per program whether it loaded (instructions, CO-RE
relocations applied and poisoned) or why not, per map whether it was created, and the notes on
what evspec loads differently from libbpf; as records with their JSON form."""

from __future__ import annotations

from evspec.span import Slotted, set_field


class ProgramResult(Slotted, frozen=False):
    __slots__ = ("object", "name", "section", "loaded", "insns", "xlated", "verifier", "error", "errno",
                 "relocations", "poisoned", "attach_target")
    object: str
    name: str
    section: str
    loaded: bool
    insns: int
    xlated: int | None  # instructions as the kernel reports them once loaded
    verifier: str | None  # the verifier's summary, when it refused the program
    error: str | None  # any other reason it was not loaded
    errno: str | None  # the kernel's errno (its name), when the kernel refused the load
    relocations: int  # CO-RE relocations applied to the program and the functions it calls
    poisoned: list[dict[str, object]]
    attach_target: str | None  # ``MODULE:NAME`` of a BTF target only a module's BTF has

    def __init__(
        self, object: str, name: str, section: str, loaded: bool = False, insns: int = 0,
        xlated: int | None = None, verifier: str | None = None, error: str | None = None,
        errno: str | None = None, relocations: int = 0, poisoned: list[dict[str, object]] | None = None,
        attach_target: str | None = None,
    ) -> None:
        set_field(self, "object", object)
        set_field(self, "name", name)
        set_field(self, "section", section)
        set_field(self, "loaded", loaded)
        set_field(self, "insns", insns)
        set_field(self, "xlated", xlated)
        set_field(self, "verifier", verifier)
        set_field(self, "error", error)
        set_field(self, "errno", errno)
        set_field(self, "relocations", relocations)
        set_field(self, "poisoned", [] if poisoned is None else poisoned)
        set_field(self, "attach_target", attach_target)

    def to_json(self) -> dict[str, object]:
        return {"object": self.object, "name": self.name, "section": self.section, "loaded": self.loaded,
                "insns": self.insns, "xlated": self.xlated, "verifier": self.verifier, "error": self.error,
                "errno": self.errno, "relocations": self.relocations, "poisoned": self.poisoned,
                "attach_target": self.attach_target}


class MapResult(Slotted, frozen=False):
    object: str
    name: str
    type: str
    created: bool = False
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"object": self.object, "name": self.name, "type": self.type, "created": self.created,
                "error": self.error}


class ObjectResult(Slotted, frozen=False):
    __slots__ = ("path", "error", "programs", "maps", "notes")
    path: str
    error: str | None  # the object could not be read or relocated at all
    programs: list[ProgramResult]
    maps: list[MapResult]
    notes: list[str]  # what evspec loads on purpose differently from libbpf

    def __init__(
        self, path: str, error: str | None = None, programs: list[ProgramResult] | None = None,
        maps: list[MapResult] | None = None, notes: list[str] | None = None,
    ) -> None:
        set_field(self, "path", path)
        set_field(self, "error", error)
        set_field(self, "programs", [] if programs is None else programs)
        set_field(self, "maps", [] if maps is None else maps)
        set_field(self, "notes", [] if notes is None else notes)
