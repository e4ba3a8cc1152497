"""Reading a NeMo-RL log and printing the CPU oracle's confusion table (bench/oracle_cpu.py).

Why apart: what counts as the GPU boundary and how a verdict reads are the oracle's judgement;
running variants is plumbing. `python bench/oracle_cpu_report.py RESULTS.json [...]` reprints
the table of earlier runs (logs re-read; for one id, the later file wins).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# The GPU boundary: the first CUDA/NCCL need, after the driver's whole setup. Each marker is
# printed only once the worker that needs a GPU has been placed and started.
BOUNDARY = {
    "nccl-init": r"ProcessGroupNCCL is only supported with GPUs",  # DTensor worker __init__
    "vllm-import": r"No module named 'vllm'",  # vLLM worker: GPU-only package, not installed
    "megatron-import": r"No module named 'megatron'",  # Megatron worker: mcore extra (CUDA)
    "automodel-import": r"No module named 'nemo_automodel'",  # DTensor V2 worker: automodel extra
}

STAGES = ("Loaded configuration from", "Applied CLI overrides", "Using log directory",
          "Setting up compute cluster", "Ray cluster initialized", "Setting up model",
          "Initializing DTensorPolicyWorker", "SETUP COMPLETE")  # fmt: skip
ERR_LINE = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|InterpolationType)|StopIteration)(?::\s?(.*))?$"
)
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
# A driver or worker the kernel or Ray's memory monitor killed: no verdict on the config.
OOM = re.compile(
    r"OutOfMemoryError|killed due to (?:the node running low on )?memory|"
    r"Out of memory: Killed process|oom-kill",
    re.I,
)
NOISE = re.compile(r"\x1b\[[0-9;]*m|^\(\w+ pid=\d+(?:, ip=[^)]*)?\)\s?")


def first_error(text: str) -> dict[str, str | None]:
    """The exception that ended the driver and the deepest NeMo-RL frame above it."""
    lines = []
    for raw in text.splitlines():
        line = NOISE.sub("", NOISE.sub("", raw))
        if line.startswith("Exception ignored in"):
            break  # interpreter shutdown noise after the real error
        lines.append(line)
    for i in range(len(lines) - 1, -1, -1):
        if not lines[i].startswith(" ") and ERR_LINE.match(lines[i].strip()):
            frame = None
            for j in range(i, -1, -1):
                m = FRAME.search(lines[j])
                if m and ("nemo_rl" in m.group(1) or "examples/" in m.group(1)):
                    rel = re.sub(r"^.*?/(?=(?:nemo_rl|examples)/)", "", m.group(1), count=1)
                    frame = f"{rel}:{m.group(2)} in {m.group(3)}"
                    break
            return {"error": lines[i].strip()[:400], "frame": frame}
    return {"error": None, "frame": None}


def killed(nres: dict) -> bool:
    """NeMo-RL (or a worker it waited on) was killed for memory, not refused by the config: a
    SIGKILL that was not our timeout's, or an out-of-memory line in its log."""
    if nres.get("boundary"):
        return False
    sigkill = nres.get("rc") in (-9, 137) and not nres.get("timed_out")
    return sigkill or bool(nres.get("oom"))


def classify(
    flags: bool, nemo_ok: bool | None, fails_after: str = "", was_killed: bool = False
) -> str:
    """The verdict. `fails_after`: the variant is known to fail just past the boundary (on a
    GPU), so a refusal there is right and silence is a miss after the boundary. A run killed
    for memory before the boundary is `not_judged`, never a miss or a true positive."""
    if nemo_ok is None:
        return "not_run"
    if was_killed and not nemo_ok:
        return "not_judged"
    if nemo_ok and fails_after:
        return "true_positive_after" if flags else "missed_after"
    return {(False, True): "both_ok", (True, False): "true_positive",
            (True, True): "false_error", (False, False): "missed"}[(flags, nemo_ok)]  # fmt: skip


def describe(r: dict) -> tuple[str, str]:
    s, n = r["steps"], r["nemo"]
    if s is None:
        return "not run", str(r.get("detail") or "not run")
    ours = ", ".join(dict.fromkeys(s["codes"])) or "clean"
    if s["rc"] not in (0, 1):
        ours += f" (exit {s['rc']})"
    if n is None:
        return ours, "not run"
    if n["boundary"]:
        return ours, f"boundary ({n['boundary']}, {n['seconds']}s)"
    tail = " (timeout)" if n["timed_out"] else " (killed for memory)" if n.get("killed") else ""
    return ours, f"{n['error'] or 'no error line'} @ {n['frame']}{tail}"[:220]


def table(results: list[dict]) -> str:
    rows = ["| id | steps (config errors) | NeMo-RL on CPU | verdict |", "|---|---|---|---|"]
    for r in results:
        ours, theirs = describe(r)
        rows.append(f"| {r['id']} | {ours} | {theirs.replace('|', '/')} | {r['verdict']} |")
    counts: dict[str, int] = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    rows.append("\ntotals: " + ", ".join(f"{k} {counts[k]}" for k in sorted(counts))
                + f" (of {len(results)})")  # fmt: skip
    return "\n".join(rows)


def read_log(text: str) -> dict:
    """The boundary the run reached (a BOUNDARY name or None), its last setup stage, its error."""
    reached = next((name for name, pat in BOUNDARY.items() if re.search(pat, text)), None)
    stages = [s for s in STAGES if s in text]
    return {"boundary": reached, "last_stage": stages[-1] if stages else None,
            "oom": bool(OOM.search(text)), **first_error(text)}  # fmt: skip


def main(paths: list[str]) -> int:
    """Reprint the table of one or more results.json, re-reading each NeMo-RL log."""
    results = []
    for path in paths:
        for r in json.loads(Path(path).read_text())["results"]:
            n = r.get("nemo")
            if n and Path(n["log"]).is_file():
                n.update(read_log(Path(n["log"]).read_text(errors="replace")))
                ok = n["boundary"] is not None
                r["verdict"] = classify(r["steps"]["flags"], ok, r.get("fails_after", ""),
                                        killed(n))  # fmt: skip
            results = [x for x in results if x["id"] != r["id"]] + [r]  # a later file wins
    print(table(results))
    return 1 if any(r["verdict"] in ("false_error", "missed") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
