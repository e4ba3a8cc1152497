"""What `--until-done` changes in the one config every segment runs, decided before submitting.

Each segment should end with a checkpoint, not a kill (SIGTERM at Slurm's time limit saves
nothing): `checkpointing.checkpoint_must_save_by` (DD:HH:MM:SS, counted after NeMo-RL's setup)
is the profile's `time` minus `save_margin` (NeMo-RL's own default of 3:45 for a 4-hour job is a
15-minute margin), unless the user set it. With W&B on, NeMo-RL passes `logger.wandb` to
`wandb.init` whole, so a stable `id` with `resume: allow` makes every segment log into one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.config_values import as_int, dotted_get
from catalog.errors import WARNING, Finding, StepsError
from runners.launch.profiles.values import slurm_seconds


@dataclass
class ChainOptions:
    """`--until-done [--max-segments N] [--gpu-hours H]`."""

    max_segments: int = 20
    gpu_hours: float | None = None


@dataclass
class ChainConfig:
    """What planning decided for the chain (recorded in run.json's `chain`)."""

    options: ChainOptions
    must_save_by: str | None
    must_save_by_from: str  # chain | user | unsupported | none (Ray: no time limit)
    wandb_id: str | None
    max_steps: int | None
    max_epochs: int | None
    checkpoint_dir: str | None


def nemo_rl_deadline(seconds: int) -> str:
    """NeMo-RL's DD:HH:MM:SS (nemo_rl/utils/timer.py convert_to_seconds)."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days:02d}:{hours:02d}:{minutes:02d}:{secs:02d}"


def deadline_seconds(value: str) -> int | None:
    """Seconds in NeMo-RL's DD:HH:MM:SS (None when it is not that shape)."""
    parts = str(value).strip().split(":")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return None
    days, hours, minutes, secs = map(int, parts)
    return ((days * 24 + hours) * 60 + minutes) * 60 + secs


def _late_deadline(user: str, profile: Any) -> Finding | None:
    """W-CHAIN-DEADLINE: the user's deadline is after the time limit minus the margin."""
    total = slurm_seconds(getattr(profile, "time", None) or "")
    margin = slurm_seconds(getattr(profile, "save_margin", None) or "0")
    asked = deadline_seconds(user)
    if total is None or margin is None or asked is None or asked <= total - margin:
        return None
    fits = nemo_rl_deadline(max(total - margin, 1))
    return Finding(
        "W-CHAIN-DEADLINE",
        f"checkpointing.checkpoint_must_save_by={user} (yours, kept) is later than the "
        f"profile's time {profile.time} minus save_margin {profile.save_margin}: Slurm kills "
        "each segment at its time limit before NeMo-RL saves, and the steps since the last "
        "save are trained again",
        key="checkpointing.checkpoint_must_save_by",
        fix=f"set it to {fits} or less, or drop it and --until-done sets it",
        severity=WARNING,
    )


def chain_overrides(
    resolved: dict,
    profile: Any,
    wandb_id: str,
    has_deadline_key: bool,
) -> tuple[list[str], list[Finding], str | None, str]:
    """(override tokens, findings, checkpoint_must_save_by, where it came from)."""
    findings: list[Finding] = []
    tokens: list[str] = []
    if dotted_get(resolved, "checkpointing.enabled") is not True:
        findings.append(
            Finding(
                "E-CHAIN-CHECKPOINTING",
                "--until-done needs checkpointing.enabled: true (each segment resumes from the "
                "latest checkpoint in checkpointing.checkpoint_dir)",
                key="checkpointing.enabled",
                fix="set checkpointing.enabled=true and a checkpoint_dir on shared storage",
            )
        )
    user = dotted_get(resolved, "checkpointing.checkpoint_must_save_by")
    deadline, source = (str(user), "user") if user else (None, "chain")
    if user and (late := _late_deadline(str(user), profile)) is not None:
        findings.append(late)
    if not user and getattr(profile, "time", None) is None:
        source = "none"  # a Ray job has no time limit: a segment ends at the end or a failure
    elif not user and not has_deadline_key:
        source = "unsupported"
        findings.append(
            Finding(
                "W-CHAIN-DEADLINE",
                "this NeMo-RL has no checkpointing.checkpoint_must_save_by: a segment saves only "
                "every checkpointing.save_period steps and loses the steps after the last save "
                "when Slurm's time limit kills it",
                key="checkpointing.save_period",
                fix="use NeMo-RL 0.6.0 or newer, or a save_period short enough to lose little",
                severity=WARNING,
            )
        )
    elif not user:
        total = slurm_seconds(profile.time)
        margin = slurm_seconds(profile.save_margin)
        if total is None or margin is None or total - margin < 1:
            findings.append(
                Finding(
                    "E-CHAIN-TIME",
                    f"profile time {profile.time!r} minus save_margin {profile.save_margin!r} "
                    "leaves no training time in a segment",
                    key="checkpointing.checkpoint_must_save_by",
                    fix="raise the profile's time, lower save_margin, or set "
                    "checkpointing.checkpoint_must_save_by yourself",
                )
            )
        else:
            deadline = nemo_rl_deadline(total - margin)
            tokens.append(f"++checkpointing.checkpoint_must_save_by={deadline}")
    if dotted_get(resolved, "logger.wandb_enabled") is True:
        if dotted_get(resolved, "logger.wandb.id") is None:
            tokens.append(f"++logger.wandb.id={wandb_id}")
        if dotted_get(resolved, "logger.wandb.resume") is None:
            tokens.append("++logger.wandb.resume=allow")
    return tokens, findings, deadline, source


def has_deadline_key(schema_doc: dict | None) -> bool:
    """Whether this NeMo-RL's config schema declares checkpoint_must_save_by (unknown: yes)."""
    if not schema_doc:
        return True
    classes = schema_doc.get("classes") or {}
    return any("checkpoint_must_save_by" in (c.get("fields") or {}) for c in classes.values())


def plan_chain(
    options: ChainOptions | None, s: Any, can_chain: bool, prepared: Any, run_dir: Path
) -> tuple[ChainConfig | None, list[Finding]]:
    """--until-done (`options`): the chain's keys set in the compiled config (as overrides, so
    findings name them: deadline, W&B id) and its findings. `s`, `prepared`: runners.kinds'."""
    from dataclasses import replace

    from runners.config.compiler import apply_overrides
    from runners.nemo_rl.schema.store import cached_schema_for

    if options is None:
        return None, []
    if not can_chain or s.target is None:
        raise StepsError(
            "E-CHAIN-STEP",
            f"--until-done chains NeMo-RL training on a cluster; {s.step_id} "
            + ("is not a NeMo-RL step" if not can_chain else "has no cluster profile"),
            fix="use --until-done with --batch SLURM_PROFILE or --run RAY_PROFILE on an "
            "rl/nemo_rl step",
            exit_code=2,
        )
    algorithm, nrl, compiled = s.manifest.run.algorithm or "", prepared.nrl, prepared.compiled
    found = cached_schema_for(algorithm, nrl.checkout, nrl.version) if nrl else None
    wandb_id = f"steps-{s.step_id.rsplit('/', 1)[-1]}-{run_dir.name}".lower()
    resolved = compiled.resolved()
    has_key = has_deadline_key(found.doc if found else None)
    tokens, findings, deadline, source = chain_overrides(
        resolved, s.target.profile, wandb_id, has_key
    )
    if tokens:
        apply_overrides(compiled.config, tokens)
        compiled.overrides = [*compiled.overrides, *tokens]
    located = []
    for f in findings:
        path, line = compiled.locate(f.key) if f.key else (None, None)
        located.append(replace(f, path=path, line=line))
    section = resolved.get(algorithm) if isinstance(resolved.get(algorithm), dict) else {}
    wandb_on = dotted_get(resolved, "logger.wandb_enabled") is True
    chain = ChainConfig(
        options=options,
        must_save_by=deadline,
        must_save_by_from=source,
        wandb_id=(dotted_get(resolved, "logger.wandb.id") or wandb_id) if wandb_on else None,
        max_steps=as_int(section.get("max_num_steps")),
        max_epochs=as_int(section.get("max_num_epochs")),
        checkpoint_dir=dotted_get(resolved, "checkpointing.checkpoint_dir"),
    )
    return chain, located
