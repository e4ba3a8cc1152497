"""What a NeMo-RL checkout pins for the packages it refuses or breaks on, from its pyproject.toml.

NeMo-RL asserts some versions at import (0.7.0 refuses transformers >= 5.12 at
`nemo_rl/models/policy/__init__.py:52`), so the interpreter must hold what the checkout that
will run pins (v0.6.0 `transformers==5.3.0`, v0.7.0 `>=5.5.0,<5.9.0`). As uv does: a
`[tool.uv] override-dependencies` entry replaces every other requirement on its package, else
`[project] dependencies` plus the named extras apply; a wheel URL pins its file name's version.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from catalog.model_errors import dotted, error_from, line_of
from catalog.tomlfile import load_toml

# Always compared; `vllm` joins when generation uses it (NeMo-RL's `vllm` extra).
CORE_PACKAGES = ("torch", "transformers", "ray")
VLLM = "vllm"


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Project(_Loose):
    requires_python: str | None = Field(None, alias="requires-python")
    dependencies: list[str] = []
    optional_dependencies: dict[str, list[str]] = Field({}, alias="optional-dependencies")


class _Uv(_Loose):
    override_dependencies: list[str] = Field([], alias="override-dependencies")


class _Tool(_Loose):
    uv: _Uv = _Uv()


class PyProject(_Loose):
    """The parts of NeMo-RL's pyproject.toml that say which versions it needs."""

    project: _Project = _Project()
    tool: _Tool = _Tool()


@dataclass(frozen=True)
class Pin:
    """One requirement on a package, as the checkout writes it and where."""

    package: str
    specifier: SpecifierSet
    text: str
    path: Path
    line: int | None

    @property
    def shown(self) -> str:
        """`transformers>=5.5.0,<5.9.0` as written; a wheel URL as `vllm==0.20.0`."""
        head = self.text.split(";", 1)[0].strip()
        return f"{self.package}{self.specifier}" if "@" in head else head

    def allows(self, version: str) -> bool:
        try:
            return self.specifier.contains(Version(version), prereleases=True)
        except InvalidVersion:
            return False


def read_pyproject(checkout: Path) -> tuple[PyProject, Path, list[str]] | None:
    """The checkout's pyproject.toml, its path and lines (None without one), read once."""
    path = checkout / "pyproject.toml"
    try:
        st = path.stat()
    except OSError:
        return None
    return _read_pyproject(path, st.st_mtime_ns, st.st_size) if path.is_file() else None


@functools.lru_cache(maxsize=8)
def _read_pyproject(path: Path, mtime_ns: int, size: int) -> tuple[PyProject, Path, list[str]]:
    data = load_toml(path, code="E-PACKAGE-VERSION")
    try:
        return PyProject.model_validate(data), path, _lines(path)
    except ValidationError as exc:
        raise error_from(
            exc,
            code="E-PACKAGE-VERSION",
            path=path,
            data=data,
            locate=lambda loc: line_of(path, *loc),
            message=lambda err, loc: f"cannot read the package pins: {dotted(loc)}: {err['msg']}",
            fix="use the NeMo-RL checkout's own pyproject.toml",
            exit_code=2,
        ) from None


def _version_spec(req: Requirement) -> SpecifierSet | None:
    if req.url:
        try:
            _, version, _, _ = parse_wheel_filename(req.url.rsplit("/", 1)[-1])
        except InvalidWheelFilename:
            return None  # a git or sdist URL names no version
        return SpecifierSet(f"=={version}")
    return req.specifier if str(req.specifier) else None


def _applies(req: Requirement, markers: Mapping[str, str] | None) -> bool:
    if req.marker is None:
        return True
    try:
        return req.marker.evaluate({**(markers or {}), "extra": ""})
    except Exception:  # a marker this environment cannot evaluate: keep the pin
        return True


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _line(lines: list[str], text: str, after: str) -> int | None:
    """1-based line of the quoted requirement `text` at or after the first line that starts
    with `after` (the array's key)."""
    start = next((i for i, t in enumerate(lines) if t.lstrip().startswith(after)), 0)
    quoted = (f'"{text}"', f"'{text}'")
    return next(
        (i + 1 for i, t in enumerate(lines) if i >= start and any(q in t for q in quoted)), None
    )


def _pins_in(
    entries: Iterable[str],
    section: str,
    packages: set[str],
    path: Path,
    lines: list[str],
    markers: Mapping[str, str] | None,
) -> list[Pin]:
    out: list[Pin] = []
    for text in entries:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        spec = _version_spec(req)
        if name in packages and spec is not None and _applies(req, markers):
            out.append(Pin(name, spec, text, path, _line(lines, text, section)))
    return out


def python_pin(checkout: Path) -> Pin | None:
    """The checkout's `requires-python` (0.7.0: `>=3.13.13,<3.14`), None when it names none."""
    read = read_pyproject(checkout)
    if read is None or not read[0].project.requires_python:
        return None
    doc, path, lines = read
    text = doc.project.requires_python
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        return None
    line = next((i + 1 for i, t in enumerate(lines) if t.startswith("requires-python")), None)
    return Pin("python", spec, text, path, line)


def pins(
    checkout: Path,
    packages: Iterable[str],
    extras: Iterable[str] = (),
    markers: Mapping[str, str] | None = None,
) -> dict[str, list[Pin]]:
    """Package -> the pins that apply to it in `checkout` for these extras, evaluated for the
    interpreter whose marker environment is `markers` (this one when None)."""
    read = read_pyproject(checkout)
    if read is None:
        return {}
    doc, path, lines = read
    wanted = {canonicalize_name(p) for p in packages}
    overrides = _pins_in(
        doc.tool.uv.override_dependencies, "override-dependencies", wanted, path, lines, markers
    )
    rest = _pins_in(doc.project.dependencies, "dependencies", wanted, path, lines, markers)
    for extra in extras:
        entries = doc.project.optional_dependencies.get(extra, [])
        rest += _pins_in(entries, extra, wanted, path, lines, markers)
    overridden = {p.package for p in overrides}
    out: dict[str, list[Pin]] = {}
    for pin in [*overrides, *(p for p in rest if p.package not in overridden)]:
        out.setdefault(pin.package, []).append(pin)
    return out
