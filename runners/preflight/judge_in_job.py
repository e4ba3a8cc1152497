"""Inside the upstream judge's job (issue 38): `local_interpreter` and `upstream_judge` run on a
CPU node in the user's own container before the GPU job, on the run dir's resolved config, from
the copy of our code staged with it. Same rules, same findings as a local dry run; they end the
job's log as one marked JSON line, and an error exits 1, holding the GPU job back.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from catalog.discovery import CACHE_VAR
from catalog.errors import ERROR, WARNING, Finding, has_errors
from catalog.record_file import read_json

if TYPE_CHECKING:
    from runners.launch.local import LocalLaunch
    from runners.preflight import PreflightContext

RULES = ("local_interpreter", "upstream_judge")
MARK = "STEPS-UPSTREAM-FINDINGS "
CONFIG = "config.yaml"  # what the GPU job runs: findings point at its lines
RESOLVED = "resolved.yaml"  # the same config resolved (secrets redacted): what is judged
NO_ANSWER = "W-UPSTREAM-JUDGE"
IMPORT = "E-UPSTREAM-IMPORT"


def _located(found: Finding, config: Path) -> Finding:
    """A finding at a key of config.yaml, with its line there (the line is a courtesy)."""
    if found.path != str(config) or not found.key or found.line is not None:
        return found
    from catalog.yamlfile import file_key

    try:
        line, _ = file_key(config, found.key.split("."))
    except Exception:  # a list index or an odd key: the file alone still says where
        return found
    return replace(found, line=line)


def judge_job_dir(job_dir: Path, launcher: str, env: Mapping[str, str]) -> list[Finding]:
    """The image's verdict on the run dir's config (RULES, located in config.yaml), run from
    the checkout as the GPU job is; answers cached in the job dir."""
    from catalog.yamlfile import read_data
    from runners.launch.local import Launcher, LocalLaunch
    from runners.preflight import PreflightContext, preflight

    checkout = Path.cwd()
    launch = LocalLaunch(Launcher(tuple(shlex.split(launcher)), "the profile's launcher"),
                         checkout, {**env, CACHE_VAR: str(job_dir / ".steps-cache")})  # fmt: skip
    config_file = job_dir / CONFIG
    ctx = PreflightContext(
        step_id=str(read_json(job_dir / "run.json").get("step")),
        manifest=None,  # the algorithm is read from the config's own section (grpo, dpo)
        config={k: v for k, v in (read_data(job_dir / RESOLVED) or {}).items() if k != "run"},
        config_file=config_file,
        nemo_rl_dir=checkout,
        run_dir=job_dir,
        local_launch=launch,
    )
    found = [_located(f, config_file) for f in preflight(ctx, only=RULES)]
    if not has_errors(found) and NO_ANSWER not in {f.code for f in found}:
        found += _import_findings(ctx, launch)
    return found


def _import_findings(ctx: PreflightContext, launch: LocalLaunch) -> list[Finding]:
    """E-UPSTREAM-IMPORT: the launcher's Python cannot import NeMo-RL's algorithm module (a
    warning when it is a `uv run` that installs the lock first, which the judge does not)."""
    from runners.launch.local import ProbeFailure
    from runners.preflight.topology import algorithm
    from runners.preflight.upstream_judge import ask_upstream, judge_seconds

    facts, algo = launch.probe(), algorithm(ctx)
    if isinstance(facts, ProbeFailure) or algo is None:
        return []  # E-LAUNCHER said it, or no algorithm to import
    answer = ask_upstream(launch, facts, algo, ctx.config, judge_seconds(launch.env))  # no `run`
    if answer.get("status") not in ("absent", "unavailable"):
        return []
    said = answer.get("detail") or "no module named 'nemo_rl'"
    syncs = launch.launcher.syncs(launch.env)
    return [
        Finding(
            IMPORT,
            f"`{launch.launcher.text}` in this image cannot import nemo_rl.algorithms.{algo} "
            f"({said}): the GPU job's script would stop there"
            + (" (unless `uv run` installs what is missing first)" if syncs else ""),
            fix="use an image whose Python imports NeMo-RL (try `LAUNCHER -c 'import "
            f"nemo_rl.algorithms.{algo}'` in it), or fix the profile's launcher and env "
            "(PYTHONPATH)",
            severity=WARNING if syncs else ERROR,
        )
    ]


def report(findings: list[Finding]) -> str:
    """The findings as the job's log ends: each rendered, then the marked JSON line."""
    lines = [f.render() for f in findings] or ["NeMo-RL in this image accepts the config"]
    doc = {"ok": not has_errors(findings), "findings": [f.to_dict() for f in findings]}
    return "\n".join([*lines, MARK + json.dumps(doc)]) + "\n"


def read_report(log: str) -> dict | None:
    """The last marked line of a judge job's log: {ok, findings: [dict]}; None when absent."""
    from runners.preflight.upstream_judge import marked_json

    return marked_json(log, MARK)
