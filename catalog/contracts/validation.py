"""Validate one artifact by its type's contract: dispatch, parallel JSONL scan, one report."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from catalog.contracts.builder_rows import CODES, UNCHECKED
from catalog.contracts.builder_scan import builder_files, scan_builder_files
from catalog.contracts.input_access import denied
from catalog.contracts.json_text import compressed
from catalog.contracts.jsonl import (
    PARALLEL_MIN_BYTES,
    ScanResult,
    Source,
    resolve_sources,
    scan_range,
)
from catalog.contracts.registry import CHECKPOINT_CONTRACTS, ROW_CONTRACTS, get_row_contract
from catalog.errors import Finding, StepsError
from catalog.file_digest import file_digests

TYPES_TOML = Path(__file__).parent.parent / "types.toml"  # catalog.types.TYPES_PATH


@dataclass
class ValidationReport:
    """What `validate` prints: findings (the first max_errors errors and as many warnings),
    counts of all, the resolved path."""

    type_name: str
    contract: str
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: int = 0
    warnings: int = 0
    rows: int | None = None
    bad_rows: int = 0
    bad_by_code: dict[str, int] = field(default_factory=dict)
    files: int = 0
    bytes: int = 0
    resolved: str | None = None
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def to_dict(self) -> dict:
        return {
            "type": self.type_name,
            "contract": self.contract,
            "path": self.path,
            "ok": self.ok,
            "errors": self.errors,
            "warnings": self.warnings,
            "rows": self.rows,
            "bad_rows": self.bad_rows,
            "bad_rows_by_code": self.bad_by_code,
            "files": self.files,
            "bytes": self.bytes,
            "resolved": self.resolved,
            "note": self.note,
            "findings": [f.to_dict() for f in self.findings],
        }


# Work unit: (file, start, end, contract, options, max_errors); top-level so it pickles.
def _scan_unit(unit: tuple) -> ScanResult:
    path, start, end, contract, options, max_errors = unit
    return _scan_file(Path(path), _bind(contract, options), max_errors, start, end)


def _scan_file(
    path: Path,
    bound: dict[str, Any],
    max_errors: int,
    start: int = 0,
    end: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> ScanResult:
    """`scan_range` of one file or range with the contract `_bind` gave; unreadable, one error."""
    try:
        return scan_range(
            path, start=start, end=end, max_errors=max_errors, progress=progress, **bound
        )
    except OSError as exc:
        res = ScanResult()
        said = f"cannot read ({exc.strerror or exc})"
        fix = "check that this user may read the file"
        res.add(Finding("E-JSONL", said, str(path), fix=fix), max_errors)
        return res


def _bind(contract: str, options: dict[str, Any]) -> dict[str, Any]:
    """`scan_range`'s contract arguments: the row check and its fast pre-filter (none for bare
    JSONL), and whether a blank line is an error."""
    if contract == "jsonl":
        return {"check": None}
    bound = get_row_contract(contract, **options)
    return {"check": bound.check, "accept": bound.accept, "blank_is_error": bound.blank_is_error}


def _units(
    sources: list[Source], workers: int, chunk_bytes: int | None = None
) -> list[tuple[Path, int, int | None]]:
    """Byte ranges of about total/(4 x workers), never below 8 MiB; small files whole, and
    compressed ones (their first range reports them, the others would be noise)."""
    total = sum(_size(s.path) for s in sources)
    target = chunk_bytes or max(8 << 20, total // max(1, workers * 4))
    out: list[tuple[Path, int, int | None]] = []
    for s in sources:
        size = _size(s.path)
        if size <= target or _compressed(s.path):
            out.append((s.path, 0, None))
            continue
        starts = list(range(0, size, target))
        for i, start in enumerate(starts):
            out.append((s.path, start, starts[i + 1] if i + 1 < len(starts) else None))
    return out


def _compressed(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return compressed(f.read(8)) is not None
    except OSError:
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def scan_jsonl(
    sources: list[Source],
    contract: str,
    options: dict[str, Any],
    *,
    max_errors: int = 20,
    progress: Callable[[int], None] | None = None,
    workers: int | None = None,
    chunk_bytes: int | None = None,
) -> ScanResult:
    """Scan every source through the row contract; large inputs in worker processes. The
    findings: the first `max_errors` errors in input order, a row violation repeated over
    rows as one finding per cause (rows.py)."""
    bound = _bind(contract, options)
    total = sum(_size(s.path) for s in sources)
    if workers is None:
        workers = os.cpu_count() or 1 if total >= PARALLEL_MIN_BYTES else 1
    result = ScanResult()
    line_base: dict[Path, int] = {}
    rows_seen: dict[Path, int] = {}

    def take(path: Path, part: ScanResult) -> None:
        result.merge(part, max_errors, line_base.get(path, 0))
        line_base[path] = line_base.get(path, 0) + part.lines
        rows_seen[path] = rows_seen.get(path, 0) + part.rows

    if workers <= 1:
        for s in sources:
            take(s.path, _scan_file(s.path, bound, max_errors, progress=progress))
    else:
        from concurrent.futures import ProcessPoolExecutor

        units = _units(sources, workers, chunk_bytes)
        jobs = [(str(p), a, b, contract, options, max_errors) for p, a, b in units]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for (path, _, _), part in zip(units, pool.map(_scan_unit, jobs), strict=True):
                take(path, part)
                if progress is not None:
                    progress(part.bytes)
    for s in sources:
        seen = rows_seen.get(s.path)
        if s.expected_rows is not None and seen is not None and seen != s.expected_rows:
            message = f"manifest says {s.expected_rows} rows, the shard has {seen}"
            fix = "the shard changed after rl_prep wrote it: re-run rl_prep"
            result.add(Finding("E-JSONL", message, str(s.path), fix=fix), max_errors)
    result.findings = _in_input_order(result, sources, max_errors)
    return result


def _in_input_order(scan: ScanResult, sources: list[Source], max_errors: int) -> list[Finding]:
    """The scan's findings and one finding per row cause, by first location, at most
    `max_errors` errors (and as many warnings)."""
    order = {str(s.path): i for i, s in enumerate(sources)}
    merged = sorted(
        scan.findings + scan.causes.findings(),
        key=lambda f: (order.get(f.path or "", len(order)), f.line or 0),
    )
    kept: list[Finding] = []
    shown = {True: 0, False: 0}
    for f in merged:
        if shown[f.is_error] < max_errors:
            shown[f.is_error] += 1
            kept.append(f)
    return kept


def resolve_contract(type_name: str, graph: Any = None) -> str:
    """The contract name of an artifact type (StepsError with did-you-mean if unknown)."""
    if graph is None:
        contract = _builtin_contract(type_name)
        if contract is not None:
            return contract
    from catalog.types import load_types, require_type

    graph = graph if graph is not None else load_types()
    return require_type(graph, type_name).contract


@cache
def _builtin_contract(type_name: str) -> str | None:
    """The validator a built-in type's table names, read from types.toml with tomllib alone:
    the type graph (catalog.types) builds pydantic models, which costs a `validate` of a large
    file about a tenth of its time. None (the graph decides) for anything else."""
    from catalog.record_file import read_toml

    try:
        table = read_toml(TYPES_TOML).get(type_name)
    except (OSError, ValueError):
        return None
    contract = table.get("contract") if isinstance(table, dict) else None
    known = contract in ROW_CONTRACTS or contract in CHECKPOINT_CONTRACTS
    return contract if isinstance(contract, str) and known else None


def validate_artifact(
    type_name: str,
    path: Any,
    *,
    options: dict[str, Any] | None = None,
    max_errors: int = 20,
    progress: Callable[[int], None] | None = None,
    allow_hub_id: bool = False,
    graph: Any = None,
    workers: int | None = None,
    expected_rows: int | None = None,
) -> ValidationReport:
    """Validate the artifact at `path` as `type_name` (a types.toml type); `expected_rows` is
    the row count an rl_prep manifest records for a single shard file."""
    contract = resolve_contract(type_name, graph)
    path = Path(path)
    report = ValidationReport(type_name, contract, str(path))
    options = {k: v for k, v in (options or {}).items() if v is not None}
    try:
        if contract in ROW_CONTRACTS:
            return _rows(report, path, options, max_errors, progress, workers, expected_rows)
        if contract in CHECKPOINT_CONTRACTS:
            return _checkpoint(report, path, allow_hub_id)
    except PermissionError as exc:  # a folder on the way that this user may not search
        raise denied(Path(exc.filename or path)) from None
    said = f"type {type_name!r} has contract {contract!r}, which `validate` cannot check"
    fix = f"types with a contract: {', '.join(sorted([*ROW_CONTRACTS, *CHECKPOINT_CONTRACTS]))}"
    raise StepsError("E-CONTRACT-UNKNOWN", said, fix=fix, exit_code=2)


def _rows(
    report: ValidationReport,
    path: Path,
    options: dict[str, Any],
    max_errors: int,
    progress: Callable[[int], None] | None,
    workers: int | None,
    expected_rows: int | None,
) -> ValidationReport:
    contract = report.contract
    bound = get_row_contract(contract, **options)  # bad options fail here, before any work
    # NemoGymDataset reads raw lines whatever the extension: Gym rows stay JSON Lines.
    built = builder_files(path) if contract != "nemo_gym_rows" else None
    if built is not None:  # read as NeMo-RL's builder reads it (builder_rows.py)
        check = bound.check if contract != "jsonl" else None
        sources, found = [Source(p) for p, _ in built], list[Finding]()
        scan = scan_builder_files(built, check, max_errors)
    else:
        sources, found = resolve_sources(path)
        if expected_rows is not None and len(sources) == 1 and sources[0].path == path:
            sources = [replace(sources[0], expected_rows=expected_rows)]
        scan = scan_jsonl(
            sources, contract, options, max_errors=max_errors, progress=progress, workers=workers
        )
    found += _digest_findings(sources, path)
    report.findings = found + scan.findings
    report.errors = sum(1 for f in found if f.is_error) + scan.errors
    report.warnings = sum(1 for f in found if not f.is_error) + scan.warnings
    report.rows = scan.rows
    report.bad_rows = scan.bad_rows
    report.bad_by_code = dict(sorted(scan.bad_by_code.items()))
    report.files = len(sources)
    report.bytes = scan.bytes
    unread = any(f.code == UNCHECKED for f in scan.findings)  # no pyarrow: rows not read
    if sources and scan.rows == 0 and scan.errors == 0 and not unread:
        code = CODES[built[0][1]] if built else "E-JSONL"
        said = "no rows (the input is empty)"
        report.findings.append(Finding(code, said, str(path), fix="give rows"))
        report.errors += 1
    return report


def _digest_findings(sources: list[Source], path: Path) -> list[Finding]:
    """E-SHARD-DIGEST for each shard whose content is not the digest its rl_prep manifest
    records (a damaged shard of the right size and valid rows still differs from what was
    written): xxh3_128 where recorded, else sha256 (older manifests). Both catch accidental
    change; neither can stop someone who may rewrite the manifest too."""
    base = path if path.is_dir() else path.parent
    out = []
    for s in sources:
        if s.digest is None:
            continue
        name, recorded = s.digest
        try:
            found = file_digests(s.path, (name,))[name]
        except OSError:
            continue
        if found != recorded:
            out.append(
                Finding(
                    "E-SHARD-DIGEST",
                    f"shard {s.path.relative_to(base)} differs from what rl_prep wrote: "
                    f"{name} {found[:16]}..., the manifest records {recorded[:16]}...",
                    str(s.path),
                    fix="the shard was damaged or edited after rl_prep wrote it: run rl_prep "
                    "again (force=true) to rebuild the output",
                )
            )
    return out


def _checkpoint(report: ValidationReport, path: Path, allow_hub_id: bool) -> ValidationReport:
    from catalog.contracts import checkpoints

    contract = report.contract
    if contract == "hf_checkpoint":
        res = checkpoints.check_hf(path, allow_hub_id=allow_hub_id)
    elif contract == "megatron_checkpoint":
        res = checkpoints.check_megatron(path)
    else:  # nemo_rl_checkpoint (any backend), nemo_rl_{megatron,dcp}_checkpoint
        res = checkpoints.check_nemo_rl(path, checkpoints.CONTRACT_BACKENDS[contract])
    report.findings = res.findings
    report.errors = sum(1 for f in res.findings if f.is_error)
    report.warnings = len(res.findings) - report.errors
    report.resolved = str(res.resolved) if res.resolved else None
    report.note = res.note
    return report
