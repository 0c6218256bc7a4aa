"""The job's data files: which modules and tests (mutation.toml), which surviving mutants are
equivalent and why (equivalent.toml), which tests pin which mutants (pins.toml), and why the
known survivors that are not equivalent still live (survivors.toml; they count as survived)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


class ConfigError(Exception):
    """A data file of the job names something that is not there or is malformed."""


@dataclass(frozen=True)
class Module:
    name: str
    path: str
    import_name: str
    tests: tuple[str, ...]
    deselect: tuple[str, ...]
    sample: int
    max_seconds: float

    @property
    def file(self) -> Path:
        return REPO / self.path


@dataclass(frozen=True)
class Equivalent:
    mutation: str
    reason: str


@dataclass
class Config:
    seed: int
    timeout_factor: float
    timeout_min: float
    modules: dict[str, Module]
    equivalents: dict[str, dict[str, Equivalent]] = field(default_factory=dict)
    pins: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    notes: dict[str, dict[str, str]] = field(default_factory=dict)


def _load(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path.relative_to(REPO)}: {e}") from None


def _require(table: dict, key: str, kind: type, where: str):  # noqa: ANN202
    value = table.get(key)
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: '{key}' must be a {kind.__name__}, got {value!r}")
    return value


def load_config(directory: Path = HERE) -> Config:
    raw = _load(directory / "mutation.toml")
    job = raw.get("job", {})
    modules: dict[str, Module] = {}
    for name, table in raw.get("modules", {}).items():
        where = f"mutation.toml [modules.{name}]"
        tests = tuple(_require(table, "tests", list, where))
        module = Module(
            name=name,
            path=_require(table, "path", str, where),
            import_name=_require(table, "import", str, where),
            tests=tests,
            deselect=tuple(table.get("deselect", ())),
            sample=int(table.get("sample", job.get("sample", 60))),
            max_seconds=float(table.get("max_seconds", job.get("max_seconds", 1800))),
        )
        if not module.file.is_file():
            raise ConfigError(f"{where}: path {module.path} is no file")
        for test in tests:
            if not (REPO / test).is_file():
                raise ConfigError(f"{where}: test file {test} is no file")
        modules[name] = module
    if not modules:
        raise ConfigError("mutation.toml names no [modules.NAME]")
    config = Config(
        seed=int(job.get("seed", 0)),
        timeout_factor=float(job.get("timeout_factor", 5.0)),
        timeout_min=float(job.get("timeout_min", 30.0)),
        modules=modules,
    )
    for name, entries in _load(directory / "equivalent.toml").items():
        if name not in modules:
            raise ConfigError(f"equivalent.toml: [{name}] is no module of mutation.toml")
        config.equivalents[name] = {
            mid: Equivalent(
                mutation=_require(e, "mutation", str, f"equivalent.toml [{name}] {mid}"),
                reason=_require(e, "reason", str, f"equivalent.toml [{name}] {mid}"),
            )
            for mid, e in entries.items()
        }
    for name, entries in _load(directory / "pins.toml").items():
        if name not in modules:
            raise ConfigError(f"pins.toml: [{name}] is no module of mutation.toml")
        config.pins[name] = {mid: list(tests) for mid, tests in entries.items()}
    for name, entries in _load(directory / "survivors.toml").items():
        if name not in modules:
            raise ConfigError(f"survivors.toml: [{name}] is no module of mutation.toml")
        config.notes[name] = {mid: _require(e, "reason", str, f"survivors.toml [{name}] {mid}")
                              for mid, e in entries.items()}  # fmt: skip
    return config
