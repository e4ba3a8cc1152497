"""FAILURES.md: the failure kinds `diagnose` names, rendered from catalog/failures.py."""

from __future__ import annotations

from catalog.codes import cell
from catalog.failures import KINDS, OOM_DEFAULT_FIX, OOM_FIXES, PROGRESS, TERMINATED


def _code(text: str) -> str:
    return "`` " + text.replace("|", "\\|") + " ``" if "`" in text else f"`{cell(text)}`"


def render_failures(generated: str) -> str:
    """The whole of FAILURES.md (`generated` is the do-not-edit marker line)."""
    out = [
        "# Failure kinds",
        "",
        generated,
        "",
        "`python -m steps diagnose RUN` reads a job's Slurm state (sacct, else scontrol) and its",
        "logs (ray.sub's `<jobid>-logs/ray-driver.log`, `ray-head.log`, `ray-worker-*.log`, and",
        "the batch output `slurm-<jobid>.out`), streamed through grep with every keyword below,",
        "and names the FIRST error in time as one of these kinds, with its evidence lines",
        "(file:line), whether a retry can help (a chain retries only those) and the setting that",
        "usually fixes it. The table is `catalog/failures.py`; signatures come from public",
        "reports (sources).",
        "",
        "How the first error is chosen:",
        "- within one file, line order is time; an error followed by a finished training step",
        f"  (NeMo-RL's `{PROGRESS[0]}` line) was survived and is ignored, and lines after",
        f"  `{TERMINATED}` are its consequences;",
        "- across files, lines that all carry timestamps are compared by time; otherwise the kind",
        "  of lower rank wins (a cause before its consequences: an NCCL timeout or OOM on one rank",
        "  makes the others report dead actors);",
        "- Slurm's PREEMPTED, NODE_FAIL, BOOT_FAIL and OUT_OF_MEMORY name the cause themselves;",
        "  TIMEOUT is the time limit unless an error no training step followed came first (the",
        "  job then hung on it); CANCELLED is a preemption, time limit or node failure when",
        "  slurmstepd says so, else a cancellation;",
        "- a job that completed with exit 0 has no failure; a failed job with no known line is",
        "  `unknown`.",
        "",
        "| kind | retry helps | rank | Slurm states | meaning | usual fix |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for k in KINDS:
        states = ", ".join(k.slurm_states) or "-"
        out.append(
            f"| `{k.name}` ({cell(k.title)}) | {'yes' if k.retryable else 'no'} | {k.rank} "
            f"| {states} | {cell(k.meaning)} | {cell(k.fix)} |"
        )
    out += ["", "## Signatures", "", "| kind | keyword | line must match | reported in |"]
    out.append("| --- | --- | --- | --- |")
    for k in KINDS:
        for s in k.signatures:
            pattern = _code(s.pattern) if s.pattern else "(the keyword)"
            out.append(f"| `{k.name}` | {_code(s.keyword)} | {pattern} | {cell(s.source)} |")
    out += [
        "",
        "A `python_exception` is any other traceback's final line (`Name: message`), reported",
        "with its last frame; Ray's `RayTaskError(X): ray::Actor.method()` names the actor",
        "method, and the wrapped exception's own line refines the message.",
        "",
        "## GPU out of memory: the setting, by the Ray actor method",
        "",
        "| method matches | usually fixed by |",
        "| --- | --- |",
    ]
    for pattern, fix in OOM_FIXES:
        out.append(f"| {_code(pattern)} | {cell(fix)} |")
    out.append(f"| anything else | {cell(OOM_DEFAULT_FIX)} |")
    out += ["", "## Sources", ""]
    for k in KINDS:
        if k.sources:
            out.append(f"- `{k.name}`: {', '.join(k.sources)}")
    return "\n".join(out) + "\n"
