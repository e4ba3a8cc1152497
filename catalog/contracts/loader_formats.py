"""How each NeMo-RL release opens a data path: the one table every data rule reads.

NeMo-RL's dataset classes open `data_path` with `load_dataset_from_path`
(nemo_rl/data/datasets/utils.py): a local file goes by its extension (exact, case-sensitive)
to a Hugging Face builder, anything else is a hub name or a local folder (`load_dataset`), and
from 0.5.0 a `save_to_disk` folder (`load_from_disk`, tried when `load_dataset` says so). A
local file's DatasetDict has one split, `train`; `subset` is for hub datasets only (0.6.0+
asserts it is None for a file). From 0.7.0 a dotted `dataset_name` is a user class
(`resolve_external_dataset_class`, imported from PYTHONPATH) that opens its data itself.

`data_open` says what NeMo-RL will open for one data config block, for our rules and for the
upstream judge (which reads the first rows through NeMo-RL itself when it is importable).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.record_file import read_json

# Hugging Face builder -> what it reads, as findings say it.
BUILDERS: dict[str, str] = {
    "json": "JSON Lines (one object per line) or one JSON array of objects",
    "csv": "CSV with a header row; column types inferred as pandas does (an all-integer "
    "column is int, a column with a decimal number float)",
    "parquet": "Parquet (columns as the file's schema types them)",
    "arrow": "Arrow IPC (a `save_to_disk` shard or any Arrow stream/file)",
    "text": "plain text: one row {text: LINE} per line",
}
_JSON_ONLY = {".json": "json", ".jsonl": "json"}
_FULL_TABLE = _JSON_ONLY | {".arrow": "arrow", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}


@dataclass(frozen=True)
class LoaderRelease:
    """`load_dataset_from_path` of one NeMo-RL release (`source`: where it was read)."""

    label: str
    suffixes: Mapping[str, str]  # extension -> Hugging Face builder
    save_to_disk: bool  # a save_to_disk folder opens (load_from_disk fallback)
    subset: bool  # takes data_subset (hub datasets only; a file asserts it is None)
    dotted_classes: bool  # a dotted dataset_name is a user class (resolve_external_...)
    source: str


RELEASES: dict[str, LoaderRelease] = {
    "0.4.0": LoaderRelease("0.4.0", _JSON_ONLY, False, False, False, "utils.py:64-84"),
    "0.5.0": LoaderRelease("0.5.0", _JSON_ONLY, True, False, False, "utils.py:64-89"),
    "0.6.0": LoaderRelease("0.6.0", _FULL_TABLE, True, True, False, "utils.py:67-112"),
    "0.7.0": LoaderRelease("0.7.0", _FULL_TABLE, True, True, True, "utils.py:81-128,131"),
    "pin": LoaderRelease("pin", _FULL_TABLE, True, True, True, "utils.py:97-144,147"),
}
# Dataset class -> its DataOpen.reader: "path" opens data_path through load_dataset_from_path
# (0.6.0+ response_dataset.py:61, binary_preference_dataset.py:62, preference_dataset.py:59);
# NemoGymDataset reads the file's raw lines itself (nemogym_dataset.py:35).
CLASS_READERS = dict.fromkeys(
    ("ResponseDataset", "BinaryPreferenceDataset", "PreferenceDataset"), "path"
) | {"NemoGymDataset": "lines"}
LOCAL_SPLIT = "train"


def loader_release(version: Any = None) -> LoaderRelease:
    """The loader of a NeMo-RL version (a `NemoRLVersion`, a label, or None for the pin); a
    version between releases takes the newest release at or before it."""
    if version is None:
        return RELEASES["pin"]
    if isinstance(version, str):
        return RELEASES.get(version, RELEASES["pin"])
    if getattr(version, "stage", 0) == 2:  # PIN
        return RELEASES["pin"]
    release = tuple(getattr(version, "release", (0, 7, 0)))
    best = RELEASES["0.4.0"]
    for label, entry in RELEASES.items():
        if label != "pin" and tuple(int(p) for p in label.split(".")) <= release:
            best = entry
    return best


def builder_for(path: str, release: LoaderRelease | None = None) -> str | None:
    """The Hugging Face builder NeMo-RL opens `path` with (by its exact extension), or None
    when it takes the path as a hub name or a folder."""
    release = release or RELEASES["pin"]
    return release.suffixes.get(os.path.splitext(path)[1])


def is_dotted_class(name: Any) -> bool:
    """A `dataset_name` NeMo-RL 0.7.0+ imports as `module.Class` (built-in names have no dot)."""
    return isinstance(name, str) and "." in name.strip(".")


@dataclass(frozen=True)
class DataOpen:
    """What NeMo-RL opens for one data config block (`key`, e.g. `data.train`).

    `reader`: "path" (load_dataset_from_path(data_path, subset, split)), "lines" (raw JSONL
    lines), "class" (a user class: it decides), "builtin" (a named dataset that downloads its
    own data) or "none" (no dataset_name)."""

    key: str
    dataset_name: str | None
    data_path: str | None
    split: str | None
    subset: str | None
    builder: str | None
    reader: str
    release: str


def data_block(config: dict, key: str) -> dict:
    """The options NeMo-RL gives the dataset class of block `key` (`data.train`,
    `data.train.0`): the block's own keys over data.default's (update_single_dataset_config)."""
    own: Any = config
    for part in key.split("."):
        if isinstance(own, list) and part.isdigit() and int(part) < len(own):
            own = own[int(part)]
        else:
            own = own.get(part) if isinstance(own, dict) else None
    data = config.get("data") if isinstance(config, dict) else None
    default = data.get("default") if isinstance(data, dict) else None
    merged = dict(default) if isinstance(default, dict) else {}
    if isinstance(own, dict):
        merged.update(own)
    return merged


def block_of(config_key: str) -> str:
    """`data.train.data_path` -> `data.train`; `data.train.0.data_path` -> `data.train.0`."""
    return config_key.rsplit(".", 1)[0] if config_key.startswith("data.") else "data.train"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def data_open(config: dict, key: str, version: Any = None) -> DataOpen:
    """What NeMo-RL `version` opens for data block `key` (see DataOpen)."""
    release = loader_release(version)
    opts = data_block(config, key)
    name = _text(opts.get("dataset_name"))
    path = _text(opts.get("data_path"))
    if name is None:
        reader = "none"
    else:
        reader = CLASS_READERS.get(name) or ("class" if is_dotted_class(name) else "builtin")
    return DataOpen(
        key=key,
        dataset_name=name,
        data_path=path,
        split=_text(opts.get("split")),
        subset=_text(opts.get("subset")),
        builder=builder_for(path, release) if path else None,
        reader=reader,
        release=release.label,
    )


USER_CLASS = "W-DATA-CLASS"
USER_CLASS_FIX = (
    "check its rows with the class itself (the upstream judge reads its first rows when "
    "NeMo-RL is importable where the run starts)"
)


def user_class_message(opened: DataOpen) -> str:
    """Why the built-in row rules do not judge a user dataset class's data (W-DATA-CLASS)."""
    return (
        f"{opened.dataset_name!r} is a user dataset class: it reads its data and decides its "
        "columns, so the built-in row rules were not applied to " + (opened.data_path or "its data")
    )


def data_blocks(config: dict) -> list[str]:
    """The data blocks a 0.6.0+ config trains and validates on: `data.train`, `data.train.0`..."""
    data = config.get("data")
    if not isinstance(data, dict):
        return []
    keys: list[str] = []
    for split in ("train", "validation"):
        block = data.get(split)
        if isinstance(block, dict):
            keys.append(f"data.{split}")
        elif isinstance(block, list):
            keys += [f"data.{split}.{i}" for i, b in enumerate(block) if isinstance(b, dict)]
    return keys


def save_to_disk_files(folder: Path, split: str = LOCAL_SPLIT) -> list[Path] | None:
    """Arrow files of a `save_to_disk` folder (a Dataset, or a DatasetDict's `split`), None
    when the folder is not one."""

    if (folder / "dataset_dict.json").is_file():
        sub = folder / split
        return save_to_disk_files(sub, split) if sub.is_dir() else []
    state = folder / "state.json"
    if not state.is_file():
        return None
    try:
        names = [f["filename"] for f in read_json(state)["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError):
        names = [p.name for p in sorted(folder.glob("*.arrow"))]
    return [folder / n for n in names]


def streamed_as_jsonl(path: Path) -> bool:
    """A file the streaming JSONL scanner reads (every line): `.jsonl`, and a `.json` that is
    not one JSON array; any other name too (its extension is the data_loader rule's concern)."""
    builder = builder_for(str(path))
    if builder is None or path.suffix == ".jsonl":
        return True
    if builder != "json":
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return True  # the scanner reports it
    return not head.startswith(b"[")
