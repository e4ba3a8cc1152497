"""How far a NeMo-RL run got, read from what it writes (never by importing NeMo-RL).

Sources, in order of trust: the latest `step_N/training_info.json` (`total_steps`: the global
step), TensorBoard scalars, and the driver log's tail, where `===== Step k/M =====` counts k
within the epoch, so the global step comes from the epoch banner or a checkpoint/validation line.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass, field

BANNER = re.compile(r"^=+ (Step|Epoch) (\d+)/(\d+) =+\s*$")
GLOBAL_STEP = re.compile(r"(?:Saving checkpoint for step|Starting validation at step) (\d+)")
METRIC = re.compile(r"^\s*•\s+(?P<name>[^:]+):\s+(?P<value>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
STEP_TIME = re.compile(r"Total step time:\s+([\d.]+)s")
TIMEOUT_STOP = "Timeout has been reached, stopping training early"
END_STOP = "Max number of steps has been reached"
ALGORITHMS = ("grpo", "dpo", "sft", "rm", "distillation", "ppo")
SHOWN_METRICS = (("Avg Reward", "reward"), ("Loss", "loss"), ("loss", "loss"), ("accuracy", "acc"))


@dataclass
class LogProgress:
    """What the tail of a driver log says."""

    step: int | None = None  # global step of the last finished step, when known
    started: int | None = None  # global step of the last banner, when known
    steps_per_epoch: int | None = None
    step_times: list[float] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None  # "timeout" (checkpoint_must_save_by) | "end" (max steps)
    last_line: str | None = None


def parse_log_tail(text: str, partial: bool = False) -> LogProgress:
    """The latest facts of a driver log (`partial`: its tail, whose first line is cut)."""
    out = LogProgress()
    epoch = local = offset = None
    in_results = False
    metrics: dict[str, float] = {}
    lines = text.splitlines()
    for line in lines[1:] if partial else lines:
        stripped = line.strip()
        if not stripped:
            continue
        out.last_line = stripped[:300]
        if stripped[0] == "(":  # a Ray actor's line (vLLM, workers): never a NeMo-RL print
            continue
        m = BANNER.match(stripped)
        if m:
            n, total = int(m.group(2)), int(m.group(3))
            if m.group(1) == "Epoch":
                epoch, offset = n, None
                continue
            local, out.steps_per_epoch = n, total
            if epoch is not None:
                offset = (epoch - 1) * total
            out.started = None if offset is None else offset + n
            in_results = False
            continue
        m = GLOBAL_STEP.search(stripped)
        if m and local is not None:
            offset = int(m.group(1)) - local
            out.started = offset + local
            continue
        if "Training Results" in stripped:
            in_results, metrics = True, {}
            continue
        if in_results:
            mm = METRIC.match(stripped)
            if mm:
                metrics[mm.group("name")] = float(mm.group("value"))
                continue
        m = STEP_TIME.search(stripped)
        if m:
            in_results = False
            out.step_times.append(float(m.group(1)))
            if local is not None and offset is not None:
                out.step = offset + local
            if metrics:
                out.metrics = dict(metrics)
            continue
        if TIMEOUT_STOP in stripped:
            out.stopped = "timeout"
        elif END_STOP in stripped:
            out.stopped = "end"
    return out


def max_steps(config: dict) -> tuple[int | None, int | None]:
    """(max_num_steps, max_num_epochs) of the algorithm section the config has."""
    for name in ALGORITHMS:
        section = config.get(name)
        if isinstance(section, dict) and "max_num_steps" in section:
            steps, epochs = section.get("max_num_steps"), section.get("max_num_epochs")
            return (
                steps if isinstance(steps, int) else None,
                epochs if isinstance(epochs, int) else None,
            )
    return None, None


@dataclass
class Progress:
    """One run's progress as `status` and `jobs` show it (a chain adds its segment part)."""

    state: str | None = None
    step: int | None = None
    max_steps: int | None = None
    checkpoint_step: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    step_seconds: float | None = None
    eta_seconds: float | None = None
    gpu_hours: float | None = None
    stalled: bool = False
    quiet_seconds: float | None = None
    last_line: str | None = None
    stopped: str | None = None
    segment: str | None = None  # "segment k of at most N": filled by the chain layer

    def to_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        """One line: [segment] step s of max, latest metric, time/step, ETA, GPU-hours."""
        parts = [self.segment] if self.segment else []
        if self.step is not None or self.max_steps is not None:
            of = f" of {self.max_steps}" if self.max_steps is not None else ""
            parts.append(f"step {self.step if self.step is not None else '-'}{of}")
        for name, short in SHOWN_METRICS:
            if name in self.metrics:
                parts.append(f"{short} {self.metrics[name]:.4g}")
                break
        if self.step_seconds is not None:
            parts.append(f"{_duration(self.step_seconds)}/step")
        if self.eta_seconds is not None:
            parts.append(f"ETA {_duration(self.eta_seconds)}")
        if self.gpu_hours is not None:
            parts.append(f"{self.gpu_hours:.1f} GPU-h")
        if self.stopped:
            parts.append("stopped by checkpoint_must_save_by" if self.stopped == "timeout"
                         else "reached max steps")  # fmt: skip
        text = ", ".join(parts) or "no step yet"
        if self.stalled:
            text = f"STALLED ({_duration(self.quiet_seconds or 0)} quiet): {text}; last line: " + (
                self.last_line or "-"
            )
        return text


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def combine(
    log: LogProgress | None,
    checkpoint: dict | None,
    scalars: list,
    config: dict,
    *,
    state: str | None,
    gpu_hours: float | None,
    quiet_seconds: float | None,
    stall_factor: float,
) -> Progress:
    """Progress from the three sources; STALLED when a running job has been quiet for
    `stall_factor` times its median step time."""
    log = log or LogProgress()
    limit, epochs = max_steps(config)
    per_epoch = log.steps_per_epoch
    if limit is not None and epochs is not None and per_epoch and per_epoch < limit:
        limit = min(limit, epochs * per_epoch)
    ckpt_step = checkpoint.get("total_steps") if checkpoint else None
    ckpt_step = ckpt_step if isinstance(ckpt_step, int) else None
    tb_steps = sorted({s.step for s in scalars})
    step_candidates = [s for s in (ckpt_step, log.step, tb_steps[-1] if tb_steps else None) if s]
    step = max(step_candidates) if step_candidates else None
    times = list(log.step_times)
    if not times:
        times = [s.value for s in scalars if s.tag.endswith("total_step_time")]
    median = statistics.median(times[-50:]) if times else None
    metrics = dict(log.metrics)
    if not metrics and tb_steps:
        latest = [s for s in scalars if s.step == tb_steps[-1] and s.tag.startswith("train/")]
        named = {"train/loss": "Loss", "train/reward": "Avg Reward"}  # as the log names them
        metrics = {named.get(s.tag, s.tag.split("/", 1)[-1]): s.value for s in latest}
    eta = None
    if median is not None and limit is not None and step is not None and state != "COMPLETED":
        eta = max(limit - step, 0) * median
    stalled = bool(
        state == "RUNNING"
        and median
        and quiet_seconds is not None
        and quiet_seconds > max(stall_factor * median, 60)
    )
    return Progress(
        state, step, limit, ckpt_step, metrics, median, eta, gpu_hours, stalled,
        quiet_seconds, log.last_line, log.stopped,
    )  # fmt: skip
