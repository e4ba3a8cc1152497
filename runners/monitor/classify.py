"""Naming why a job ended: the FIRST error in time across its logs, as a kind of
catalog/failures.py, weighed against the scheduler's own verdict (TIMEOUT, PREEMPTED, ...).

First, not loudest: one rank's NCCL timeout or OOM makes every other rank report actor deaths.
Across files, timestamps decide; where one lacks them, a cause kind ranks before a consequence.
An error followed by training progress was survived; lines after a SIGTERM are its consequences.
Tracebacks are followed per Ray actor (`(Actor pid=N)`), so interleaved actors do not mix.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from catalog.failures import (
    BY_NAME,
    KINDS,
    PROGRESS,
    TERMINATED,
    TRACEBACK,
    kind_for_state,
    oom_fix,
)
from runners.monitor.terminal import terminal_safe

PREFIX = re.compile(r"^\(([^()]{1,160})\)\s")
# A traceback's final line: a class named ...Error/Exception/Interrupt/Exit/Mismatch, or any
# class in a module named errors/exceptions (omegaconf.errors.UnsupportedInterpolationType).
EXCEPTION = re.compile(
    r"^(?:(?:[A-Za-z_]\w*\.)*(?:errors|exceptions)\.[A-Z]\w*"
    r"|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Mismatch))"
    r"(?:\((?P<inner>[\w.]+)\))?(?::\s*(?P<message>.*))?$"
)
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
METHOD = re.compile(r"ray::(?P<method>[\w.]+)\(")
STAMP = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")
EPOCH_STAMP = re.compile(r"\btime=(\d{9,11})\b")
_BULLET = "•".encode()
_STEP_DONE = PROGRESS[0].encode()
_SIGNATURES = [(k.name, s.keyword, s.regex) for k in KINDS for s in k.signatures]
# Slurm states that name the cause by themselves: the logs then hold only its consequences.
EXTERNAL = {"PREEMPTED", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY"}
TIME_LIMIT = {"TIMEOUT", "DEADLINE"}


@dataclass
class Evidence:
    """A line that shows the failure: file and line number (None for the scheduler's state)."""

    path: str
    line: int | None
    text: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.text}" if self.line else f"{self.path}: {self.text}"


@dataclass
class Event:
    """One error line: its kind, where it is, and what its traceback said (frame, message)."""

    kind: str
    path: str
    line: int
    text: str
    order: int
    stamp: float | None
    method: str | None = None
    frame: str | None = None
    message: str | None = None
    traceback_line: int | None = None


@dataclass
class FileScan:
    """What one log file showed: its first unsurvived error, its end, its actor methods."""

    path: str
    order: int
    first: Event | None = None
    terminated: Evidence | None = None
    last_stamp: float | None = None
    methods: list[tuple[int, str]] = field(default_factory=list)


def _stamp(text: str) -> float | None:
    m = STAMP.search(text)
    if m:
        try:
            when = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}")
        except ValueError:
            return None
        return when.replace(tzinfo=timezone.utc).timestamp()
    m = EPOCH_STAMP.search(text)
    return float(m.group(1)) if m else None


def kind_of_line(body: str) -> str | None:
    """The first kind (table order) whose signature the line matches."""
    for name, keyword, regex in _SIGNATURES:
        if keyword in body and regex.search(body):
            return name
    return None


class LogClassifier:
    """Fed candidate lines file by file (in line order); `files` holds what each showed."""

    def __init__(self) -> None:
        self.files: dict[str, FileScan] = {}
        self._tb: dict[tuple[str, str], dict] = {}
        self._open: dict[tuple[str, str], Event] = {}

    def _file(self, path: str) -> FileScan:
        if path not in self.files:
            self.files[path] = FileScan(path, len(self.files))
        return self.files[path]

    def feed(self, path: str, line_no: int, raw: bytes | str) -> None:
        if isinstance(raw, bytes):
            if _STEP_DONE in raw:
                self._progress(path)
                return
            if raw.lstrip()[:3] == _BULLET:  # NeMo-RL's metric prints ("Generation KL Error")
                return
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        text = terminal_safe(text.rstrip("\r\n"), cr=" ")
        scan = self._file(path)
        if scan.terminated is not None:
            return
        actor, body = "", text
        m = PREFIX.match(text)
        if m:
            actor, body = m.group(1), text[m.end() :]
        stripped = body.strip()
        if stripped.startswith("•"):  # NeMo-RL's metric prints ("Generation KL Error: 0.01")
            return
        if any(p in stripped for p in PROGRESS):
            self._progress(path)
            return
        stamp = _stamp(body)
        if stamp is not None:
            scan.last_stamp = stamp
        if TERMINATED in body:
            scan.terminated = Evidence(path, line_no, stripped)
            return
        key = (path, actor)
        if TRACEBACK in body:
            self._tb[key] = {"start": line_no, "frame": None}
            return
        fm = FRAME.match(body)
        if fm:
            if key in self._tb:
                self._tb[key]["frame"] = f"{fm['file']}:{fm['line']} in {fm['func']}"
            return
        mm = METHOD.search(body)
        method = mm.group("method") if mm else None
        if method:
            scan.methods.append((line_no, method))
        em = EXCEPTION.match(stripped)
        kind = kind_of_line(body)
        if em is None and kind is None:
            return
        opened = self._open.pop(key, None)
        if em is not None and opened is not None:  # the wrapped exception's own line
            self._refine(opened, em, kind, key)
            return
        event = Event(
            kind or "python_exception", path, line_no, stripped[:500], scan.order,
            stamp if stamp is not None else scan.last_stamp, method,
        )  # fmt: skip
        if em is not None:
            event.message = stripped[:500]
            tb = self._tb.pop(key, None)
            if tb:
                event.frame, event.traceback_line = tb["frame"], tb["start"]
            if em.group("inner") or (em.group("message") or "").startswith("ray::"):
                self._open[key] = event  # a Ray wrapper: the actor's traceback follows
                self._tb[key] = {"start": line_no, "frame": None}
        if scan.first is None:
            scan.first = event

    def _progress(self, path: str) -> None:
        """A finished training step: the errors before it in this file were survived."""
        scan = self._file(path)
        if scan.terminated is None:
            scan.first = None
            self._open = {k: v for k, v in self._open.items() if k[0] != path}

    def _refine(self, event: Event, em: re.Match, kind: str | None, key: tuple) -> None:
        """A Ray wrapper's inner exception names the real message and the actor's last frame."""
        tb = self._tb.pop(key, None)
        if tb and tb["frame"]:
            event.frame = tb["frame"]
        event.message = em.group(0)[:500]
        if event.kind == "python_exception" and kind:
            event.kind = kind

    def first_event(self) -> Event | None:
        """The first error in time across the files (see the module docstring)."""
        firsts = [f.first for f in self.files.values() if f.first is not None]
        if not firsts:
            return None
        if len(firsts) > 1 and all(e.stamp is not None for e in firsts):
            return min(firsts, key=lambda e: (e.stamp, BY_NAME[e.kind].rank, e.order))
        return min(firsts, key=lambda e: (BY_NAME[e.kind].rank, e.order, e.line))

    def method_near(self, event: Event) -> str | None:
        """The Ray actor method named nearest the event in its file (within 400 lines)."""
        if event.method:
            return event.method
        near = [
            (abs(line - event.line), m)
            for line, m in self.files[event.path].methods
            if abs(line - event.line) <= 400
        ]
        return min(near)[1] if near else None


@dataclass
class Diagnosis:
    """Why a job ended, for people (`render`) and for a chain deciding whether to retry."""

    kind: str | None  # None: no failure (finished, or running with no error so far)
    title: str
    retryable: bool
    state: str | None = None
    exit_code: int | None = None
    step: int | None = None
    method: str | None = None
    message: str | None = None
    fix: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    later: list[str] = field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def diagnose(
    classifier: LogClassifier, state: str | None, exit_code: int | None, state_source: str
) -> Diagnosis:
    """Combine the scheduler's state with the first log error (see the module docstring)."""
    event = classifier.first_event()
    state_line = Evidence(state_source, None, f"state {state}, exit code {exit_code}")
    implied = kind_for_state(state)
    if state in EXTERNAL or (state in TIME_LIMIT and not _hang_cause(event)):
        same = event is not None and event.kind == implied.name
        return _verdict(implied.name, classifier, event if same else None, state, exit_code,
                        state_line)  # fmt: skip
    if state in ("CANCELLED", "STOPPED"):
        if event is not None and event.kind in ("time_limit", "preemption", "node_failure"):
            return _verdict(event.kind, classifier, event, state, exit_code, state_line)
        return _verdict("cancelled", classifier, None, state, exit_code, state_line)
    if event is None:
        if state in ("COMPLETED", "SUCCEEDED") and not exit_code:
            return Diagnosis(None, "no failure: the job completed", False, state, exit_code)
        if state in (None, "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "UNKNOWN"):
            return Diagnosis(None, "no error in the logs so far", False, state, exit_code)
        return _verdict("unknown", classifier, None, state, exit_code, state_line)
    diagnosis = _verdict(event.kind, classifier, event, state, exit_code, state_line)
    if state in TIME_LIMIT:
        diagnosis.note = "then the job sat until its time limit (no training step after it)"
    elif state in ("COMPLETED", "SUCCEEDED") and not exit_code:
        diagnosis.note = "the job completed (exit 0) after this error"
    return diagnosis


def _hang_cause(event: Event | None) -> bool:
    """A specific error no training step followed: the likely reason a job sat until its limit."""
    return event is not None and event.kind not in (
        "time_limit", "preemption", "node_failure", "cancelled", "python_exception"
    )  # fmt: skip


def _verdict(
    name: str,
    classifier: LogClassifier,
    event: Event | None,
    state: str | None,
    exit_code: int | None,
    state_line: Evidence,
) -> Diagnosis:
    kind = BY_NAME[name]
    evidence: list[Evidence] = []
    method = message = None
    fix = kind.fix
    if event is not None:
        if event.traceback_line and event.traceback_line != event.line:
            evidence.append(Evidence(event.path, event.traceback_line, TRACEBACK + ":"))
        evidence.append(Evidence(event.path, event.line, event.text))
        method = classifier.method_near(event) if event.kind == "gpu_oom" else event.method
        message = event.message
        if event.frame:
            evidence.append(Evidence(event.path, None, f"last frame: {event.frame}"))
        if event.kind == "gpu_oom":
            fix = oom_fix(method.rsplit(".", 1)[-1] if method else None)
    if state is not None:
        evidence.append(state_line)
    later = []
    for scan in classifier.files.values():
        if scan.first is not None and scan.first is not event:
            later.append(f"{scan.first.kind} ({scan.path}:{scan.first.line})")
        if scan.terminated is not None:
            later.append(f"terminated ({scan.terminated.render()})")
    return Diagnosis(
        name, kind.title, kind.retryable, state, exit_code, None, method, message, fix,
        evidence, later,
    )  # fmt: skip
