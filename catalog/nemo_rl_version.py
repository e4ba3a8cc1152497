"""Which NeMo-RL a run targets (it decides the config schema, the rules and the script names).

Releases order by number; a commit after a release on its branch just after it; the pin (main
after the r0.7.0 branch point) and its descendants after 0.7.0 and its branch. Ranges are
written `all`, `0.7.0+`, `pin` (the pin and newer) or `<0.6.0`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catalog.errors import StepsError
from catalog.upstream import (
    NEMO_RL_COMMIT,
    NEMO_RL_OLDEST,
    NEMO_RL_PIN_AFTER,
    NEMO_RL_PIN_LABEL,
    NEMO_RL_RELEASES,
)

VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?((?:rc|a|b)\d+)?(?:\.dev\d*)?(?:\+\S*)?$")
PRE, RELEASE, BRANCH, PIN = -1, 0, 1, 2  # stage: the 4th element of the ordering key


def parse_release(text: str) -> tuple[tuple[int, int, int], str] | None:
    """`0.7.0`, `v0.6.0`, `0.5.0rc0`, `0.6.0+abc` -> ((0, 7, 0), pre); None if not a version."""
    m = VERSION_RE.match(text.strip())
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)), m.group(4) or ""


def _release(text: str) -> tuple[int, int, int]:
    parsed = parse_release(text)
    assert parsed is not None, text
    return parsed[0]


@dataclass(frozen=True)
class NemoRLVersion:
    """A NeMo-RL version and where it was read; `key` orders versions, `label` names them."""

    release: tuple[int, int, int]
    pre: str = ""
    stage: int = RELEASE  # PRE, RELEASE, BRANCH (commits after the release) or PIN
    commit: str | None = None
    source: str = ""  # how it was read: "git tag v0.7.0", "nemo_rl/package_info.py", ...
    named: bool = False  # given by name (a cluster profile), not read from a checkout

    @property
    def key(self) -> tuple[int, int, int, int]:
        return (*self.release, PRE if self.pre and self.stage == RELEASE else self.stage)

    @property
    def number(self) -> str:
        return ".".join(map(str, self.release)) + self.pre

    @property
    def label(self) -> str:
        """What users read: `0.7.0`, `0.7.0+` (its branch), `main@7ea279ab (pin or newer)`."""
        if self.stage == PIN:
            short = (self.commit or NEMO_RL_COMMIT)[:8]
            exact = self.commit in (None, NEMO_RL_COMMIT)
            return f"main@{short} ({'the pin' if exact else 'newer than the pin'})"
        return self.number + ("+" if self.stage == BRANCH else "")

    @property
    def shipped(self) -> str | None:
        """The folder of the shipped schema that is exactly this version, if there is one."""
        if self.stage == PIN and self.commit in (None, NEMO_RL_COMMIT):
            return NEMO_RL_PIN_LABEL
        if self.stage == RELEASE and not self.pre and self.number in NEMO_RL_RELEASES:
            commit = NEMO_RL_RELEASES[self.number]
            return self.number if self.commit in (None, commit) else None
        return None

    @property
    def supported(self) -> bool:
        return self.release >= _release(NEMO_RL_OLDEST)

    def at(self, commit: str) -> NemoRLVersion:
        return NemoRLVersion(self.release, self.pre, self.stage, commit, self.source, self.named)

    def to_dict(self) -> dict:
        return {"version": self.label, "commit": self.commit, "source": self.source}


def pin_version(commit: str | None = None, source: str = "", named: bool = False) -> NemoRLVersion:
    release = _release(NEMO_RL_PIN_AFTER)
    return NemoRLVersion(release, stage=PIN, commit=commit, source=source, named=named)


def parse_version(text: str, source: str = "", named: bool = False) -> NemoRLVersion:
    """A version by name (a cluster profile's `nemo_rl_version`): a release number or `pin`."""
    if text.strip().lower() in {NEMO_RL_PIN_LABEL, "main", NEMO_RL_COMMIT[:8]}:
        return pin_version(source=source, named=named)
    parsed = parse_release(text)
    if parsed is None:
        raise StepsError(
            "E-NEMO-RL-VERSION",
            f"{text!r} is not a NeMo-RL version",
            fix=f"give a release number such as {NEMO_RL_OLDEST} or 'pin' ({supported_text()})",
            exit_code=2,
        )
    return NemoRLVersion(parsed[0], parsed[1], source=source, named=named)


def supported_text() -> str:
    """`0.6.0, 0.7.0 and main@7ea279ab (the pin)`, for messages."""
    return f"{', '.join(NEMO_RL_RELEASES)} and {pin_version().label}"


def in_range(version: NemoRLVersion | None, spec: str) -> bool:
    """Whether `version` falls in `spec`; an unknown version (None) is in every range."""
    if version is None or spec == "all":
        return True
    if spec == NEMO_RL_PIN_LABEL:
        return version.key >= pin_version().key
    if spec.startswith("<"):
        return version.key < (*_release(spec[1:]), PRE)
    if spec.endswith("+"):
        return version.key >= (*_release(spec[:-1]), RELEASE)
    raise ValueError(f"bad version range {spec!r}")


def check_range(spec: str) -> bool:
    """Whether `spec` is a range `in_range` understands (for the rule table's own test)."""
    if spec in {"all", NEMO_RL_PIN_LABEL}:
        return True
    body = spec[1:] if spec.startswith("<") else spec[:-1] if spec.endswith("+") else None
    return body is not None and parse_release(body) is not None
