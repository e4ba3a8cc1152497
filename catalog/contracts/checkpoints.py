"""Checkpoint contracts: Hugging Face folders, Megatron torch_dist iters, NeMo-RL checkpoint_dirs.

A Megatron distributed checkpoint is an `iter_NNNNNNN/` folder holding `metadata.json`
(Megatron's dist-checkpoint marker) and, for the torch_dist backend, torch DCP's `.metadata`
plus `*.distcp` shards; its parent may hold `latest_checkpointed_iteration.txt` (an iteration
number or `release`).

NeMo-RL writes `checkpoint_dir/step_N/` (via `tmp_step_N/`, renamed when complete) with
`training_info.json`, `config.yaml` and `policy/weights/`; it resumes from the highest `step_N`.
`policy/weights/` depends on the policy backend:
- Megatron (`policy.megatron_cfg.enabled`): Megatron-Bridge `iter_*` folders (torch_dist),
  exported with Megatron-Bridge (convert/megatron_to_hf);
- DTensor (`policy.dtensor_cfg.enabled`): one bare torch DCP checkpoint (`.metadata` plus
  `*.distcp`, no `metadata.json`) in `policy/weights/` (v1 worker) or `policy/weights/model/`
  (v2), exported with NeMo-RL's `examples/converters/convert_dcp_to_hf.py` (convert/dcp_to_hf).
The layout is read from the folder, so `validate` names the backend and a typed contract refuses
the other one with the reason.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from catalog.artifact_paths import HUB_ID
from catalog.errors import WARNING, Finding
from catalog.record_file import read_json

HF = "E-HF-CHECKPOINT"
MEGATRON = "E-MEGATRON-CHECKPOINT"
NEMO_RL = "E-NEMO-RL-CHECKPOINT"
TRACKER = "latest_checkpointed_iteration.txt"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model")
_ITER = re.compile(r"^iter_(\d+)$")
STEP = re.compile(r"^step_(\d+)$")


@dataclass
class CheckpointResult:
    """Findings, and the folder a consumer will actually load (e.g. the latest iter)."""

    findings: list[Finding] = field(default_factory=list)
    resolved: Path | None = None
    note: str | None = None

    def error(self, code: str, message: str, path: Path, fix: str | None = None) -> None:
        self.findings.append(Finding(code, message, str(path), fix=fix))

    def json_object(self, code: str, file: Path, fix: str | None = None) -> None:
        """An error when `file` (one the loader reads) is missing or not a JSON object."""
        if not file.is_file():
            return self.error(code, f"{file.name} is missing", file.parent, fix=fix)
        try:
            if not isinstance(read_json(file), dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            self.error(code, f"{file.name} is not valid JSON ({exc})", file)


def _safetensors_ok(path: Path) -> str | None:
    """Why a .safetensors file is unreadable (truncated header), or None; reads 8 bytes + size."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if len(head) < 8:
        return "is truncated (no header)"
    (header_len,) = struct.unpack("<Q", head)
    if header_len + 8 > size:
        return "is truncated (header longer than the file)"
    return None


def _check_index(res: CheckpointResult, folder: Path, index: Path, suffix: str) -> None:
    try:
        weight_map = read_json(index)["weight_map"]
        named = set(weight_map.values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        res.error(HF, f"{index.name} is not a valid weight index ({exc})", index)
        return
    present = {p.name for p in folder.glob(f"*{suffix}")}
    for name in sorted(named - present):
        fix = "copy the missing shard (an interrupted download or save?)"
        res.error(HF, f"{index.name} names shard {name}, which is missing", folder, fix=fix)
    stem = index.name.split(".")[0]  # model / pytorch_model
    sharded = re.compile(rf"^{re.escape(stem)}-\d+-of-\d+{re.escape(suffix)}$")
    for name in sorted(n for n in present - named if sharded.match(n)):
        fix = "remove stale shards from an earlier save, or re-save the model"
        res.error(HF, f"shard {name} is not named in {index.name}", folder, fix=fix)


def check_hf(path: Path, allow_hub_id: bool = False) -> CheckpointResult:
    """config.json, weights (safetensors or bin) consistent with their index, tokenizer files."""
    res = CheckpointResult(resolved=path)
    if not path.exists():
        if allow_hub_id and HUB_ID.match(str(path)):
            said = f"{path} is not a local folder; taken as a Hugging Face hub id (not checked)"
            res.findings.append(Finding("W-HF-HUB-ID", said, str(path), severity=WARNING))
            res.note = "hub id"
            return res
        res.error(HF, "folder does not exist", path, fix="check the path (or give a hub id)")
        return res
    if not path.is_dir():
        res.error(HF, "expected a model folder, got a file", path)
        return res
    res.json_object(HF, path / "config.json", fix="save with model.save_pretrained()")
    st = sorted(path.glob("*.safetensors"))
    bins = sorted(path.glob("pytorch_model*.bin"))
    if not st and not bins:
        fix = "save the weights beside config.json"
        res.error(HF, "no weights: expected *.safetensors or pytorch_model*.bin", path, fix=fix)
    for f in st:
        problem = _safetensors_ok(f)
        if problem:
            res.error(HF, f"{f.name} {problem}", f, fix="re-copy or re-save the shard")
    for index_name, suffix in (
        ("model.safetensors.index.json", ".safetensors"),
        ("pytorch_model.bin.index.json", ".bin"),
    ):
        if (path / index_name).is_file():
            _check_index(res, path, path / index_name, suffix)
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        fix = "save the tokenizer too: tokenizer.save_pretrained(folder)"
        res.error(HF, f"no tokenizer files (one of {', '.join(TOKENIZER_FILES)})", path, fix=fix)
    return res


def numbered(folder: Path, prefix: str) -> list[tuple[int, Path]]:
    """The `iter_N` or `step_N` folders directly in `folder`, lowest first."""
    pattern = _ITER if prefix == "iter" else STEP
    out = []
    for child in folder.iterdir() if folder.is_dir() else ():
        m = pattern.match(child.name)
        if m and child.is_dir():
            out.append((int(m.group(1)), child))
    return sorted(out)


def dcp_folder(weights: Path) -> Path | None:
    """The torch DCP checkpoint NeMo-RL's DTensor policy wrote under policy/weights: `.metadata`
    with `*.distcp` shards and no Megatron `metadata.json`, in weights/ (v1) or weights/model/
    (v2); None when there is none."""
    for folder in (weights, weights / "model"):
        if (
            (folder / ".metadata").is_file()
            and not (folder / "metadata.json").is_file()
            and any(folder.glob("*.distcp"))
        ):
            return folder
    return None


def _check_iter(res: CheckpointResult, it: Path) -> None:
    meta = it / "metadata.json"
    if not meta.is_file():
        legacy = any(it.glob("mp_rank_*"))
        res.error(
            MEGATRON,
            "not a distributed checkpoint: metadata.json is missing"
            + (" (legacy mp_rank_* layout)" if legacy else ""),
            it,
            fix="save with --ckpt-format torch_dist (or convert the legacy checkpoint)",
        )
        return
    try:
        backend = read_json(meta).get("sharded_backend")
    except (OSError, ValueError, AttributeError) as exc:
        res.error(MEGATRON, f"metadata.json is not valid JSON ({exc})", meta)
        return
    if backend == "torch_dist" and not (it / ".metadata").is_file():
        said = "torch_dist checkpoint without its .metadata file (incomplete save?)"
        res.error(MEGATRON, said, it, fix="use an earlier iter, or re-save")


def _latest_iter(res: CheckpointResult, folder: Path) -> Path | None:
    iters = numbered(folder, "iter")
    tracker = folder / TRACKER
    if tracker.is_file():
        text = tracker.read_text(errors="replace").strip()
        chosen = folder / "release" if text == "release" else None
        if text.isdigit():
            chosen = folder / f"iter_{int(text):07d}"
        if chosen is None or not chosen.is_dir():
            said = f"{TRACKER} says {text!r} but that iter folder is missing"
            fix = "fix the tracker file or restore the iter folder"
            res.error(MEGATRON, said, tracker, fix=fix)
            return None
        return chosen
    return iters[-1][1] if iters else None


def check_megatron(path: Path) -> CheckpointResult:
    """A folder of iter_* (the latest is chosen), one iter, or a NeMo-RL run's weights."""
    res = CheckpointResult()
    if not path.is_dir():
        res.error(MEGATRON, "folder does not exist" if not path.exists() else "not a folder", path)
        return res
    folder = path
    steps = numbered(folder, "step")
    if steps:  # a NeMo-RL checkpoint_dir: the latest step's weights
        folder = steps[-1][1]
    if (folder / "policy" / "weights").is_dir():
        folder = folder / "policy" / "weights"
    it = folder if (folder / "metadata.json").is_file() else _latest_iter(res, folder)
    if it is None:
        if res.findings:
            return res
        if dcp_folder(folder) is not None:
            res.error(
                MEGATRON,
                "a torch DCP checkpoint (.metadata + *.distcp, no iter_*): NeMo-RL's DTensor "
                "policy wrote it, not Megatron, so Megatron-Bridge cannot load it",
                folder,
                fix="validate it as nemo_rl_dcp_checkpoint; export it with convert/dcp_to_hf",
            )
        else:
            said = "no iter_* folders and no dist-checkpoint metadata.json"
            fix = "point at the Megatron checkpoint folder (the one holding iter_*)"
            res.error(MEGATRON, said, folder, fix=fix)
        return res
    _check_iter(res, it)
    res.resolved = it
    res.note = f"iteration {it.name}"
    return res


CONVERTERS = {"megatron": "convert/megatron_to_hf", "dcp": "convert/dcp_to_hf"}
BACKENDS = {"megatron": "Megatron (iter_* torch_dist)", "dcp": "DTensor (torch DCP)"}
TYPES = {"megatron": "nemo_rl_megatron_checkpoint", "dcp": "nemo_rl_dcp_checkpoint"}
CONTRACT_BACKENDS: dict[str, str | None] = {"nemo_rl_checkpoint": None} | {
    t: b for b, t in TYPES.items()
}


def weights_backend(weights: Path) -> str | None:
    """`megatron` or `dcp` from the layout of a step's policy/weights, None if neither."""
    if dcp_folder(weights) is not None:
        return "dcp"
    megatron = ("metadata.json", TRACKER)
    if any(numbered(weights, "iter")) or any((weights / n).is_file() for n in megatron):
        return "megatron"
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
        name = "Megatron" if found == "megatron" else "DTensor"
        res.error(
            NEMO_RL,
            f"policy/weights is a {BACKENDS[found]} checkpoint, not {BACKENDS[backend]}: the run "
            f"used the {name} policy backend, so it is a {got}, not a {want}",
            weights,
            fix=f"validate it as {got} and export it with {CONVERTERS[found]}",
        )
        return res
    if found == "megatron" and backend == "megatron":
        res.findings.extend(check_megatron(step).findings)
    return res
