"""NeMo-RL checkpoint_dir contracts, by the training backend that wrote the weights.

NeMo-RL writes `checkpoint_dir/step_N/` (via `tmp_step_N/`, renamed when complete) with
`training_info.json`, `config.yaml` and `policy/weights/`; it resumes from the highest
`step_N`. What `policy/weights/` holds depends on the policy backend:
- Megatron (`policy.megatron_cfg.enabled`): Megatron-Bridge `iter_*` folders (torch_dist),
  exported with Megatron-Bridge (convert/megatron_to_hf);
- DTensor (`policy.dtensor_cfg.enabled`): one torch DCP checkpoint, `.metadata` plus `*.distcp`
  shards, in `policy/weights/` (DTensor v1 worker) or `policy/weights/model/` (v2), exported
  with NeMo-RL's own `examples/converters/convert_dcp_to_hf.py` (convert/dcp_to_hf).
The layout is read from the folder, so `validate` names the backend and a typed contract
refuses the other one with the reason.
"""

from __future__ import annotations

from pathlib import Path

from catalog.contracts.checkpoints import (
    NEMO_RL,
    STEP,
    CheckpointResult,
    check_megatron,
    dcp_folder,
    numbered,
)

MEGATRON, DCP = "megatron", "dcp"
CONVERTERS = {MEGATRON: "convert/megatron_to_hf", DCP: "convert/dcp_to_hf"}
BACKENDS = {MEGATRON: "Megatron (iter_* torch_dist)", DCP: "DTensor (torch DCP)"}
TYPES = {MEGATRON: "nemo_rl_megatron_checkpoint", DCP: "nemo_rl_dcp_checkpoint"}
CONTRACT_BACKENDS: dict[str, str | None] = {"nemo_rl_checkpoint": None} | {
    t: b for b, t in TYPES.items()
}


def weights_backend(weights: Path) -> str | None:
    """`megatron` or `dcp` from the layout of a step's policy/weights, None if neither."""
    if dcp_folder(weights) is not None:
        return DCP
    if any(numbered(weights, "iter")) or (weights / "metadata.json").is_file():
        return MEGATRON
    if (weights / "latest_checkpointed_iteration.txt").is_file():
        return MEGATRON
    return None


def _step(res: CheckpointResult, path: Path) -> Path | None:
    """The step folder a consumer loads: `path` itself, or the highest complete step_N."""
    if not path.is_dir():
        res.error(NEMO_RL, "folder does not exist" if not path.exists() else "not a folder", path)
        return None
    if STEP.match(path.name) and (path / "training_info.json").exists():
        return path
    steps = numbered(path, "step")
    if not steps:
        partial = sorted(p.name for p in path.glob("tmp_step_*"))
        res.error(
            NEMO_RL,
            "no completed step_N folders"
            + (f" (only unfinished {', '.join(partial)})" if partial else ""),
            path,
            fix="point at the run's checkpointing.checkpoint_dir after a save completed",
        )
        return None
    return steps[-1][1]


def check_nemo_rl(path: Path, backend: str | None = None) -> CheckpointResult:
    """checkpoint_dir with step_N/ (tmp_step_* ignored), or one step_N folder; with `backend`,
    the weights must have been written by that backend (`megatron` or `dcp`)."""
    res = CheckpointResult()
    step = _step(res, path)
    if step is None:
        return res
    res.json_object(NEMO_RL, step / "training_info.json")
    if not (step / "config.yaml").is_file():
        res.error(NEMO_RL, "config.yaml is missing", step)
    res.resolved = step
    weights = step / "policy" / "weights"
    if not weights.is_dir() or not any(weights.iterdir()):
        res.error(NEMO_RL, "policy/weights is missing or empty", step)
        return res
    found = weights_backend(weights)
    if found is None:
        res.error(
            NEMO_RL,
            "policy/weights holds neither Megatron iter_* folders nor a torch DCP checkpoint "
            "(.metadata with *.distcp, in weights/ or weights/model/)",
            weights,
            fix="point at a checkpoint_dir NeMo-RL wrote, after the save completed",
        )
        return res
    res.note = f"step {step.name}, {BACKENDS[found]}"
    if backend is not None and found != backend:
        want, got = TYPES[backend], TYPES[found]
        name = "Megatron" if found == MEGATRON else "DTensor"
        res.error(
            NEMO_RL,
            f"policy/weights is a {BACKENDS[found]} checkpoint, not {BACKENDS[backend]}: the run "
            f"used the {name} policy backend, so it is a {got}, not a {want}",
            weights,
            fix=f"validate it as {got} and export it with {CONVERTERS[found]}",
        )
        return res
    if found == MEGATRON and backend == MEGATRON:
        iteration = check_megatron(step)
        res.findings.extend(iteration.findings)
    return res
