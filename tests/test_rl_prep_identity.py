"""What makes an rl_prep output up to date: its inputs' content (not their size and mtime) and
shards that still hold what was written; `validate` checks the shards' recorded digests.

Edits are made the way `cp -p`, `rsync -a` and `tar x` deliver a corrected file: same size,
and the old mtime set back (`os.utime`, as `touch -d` does).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from catalog.errors import EXIT_FINDINGS, EXIT_OK
from catalog.file_digest import SHA256, XXH3
from runners.digest import DigestMemo
from tests.run_fixtures import REPO
from tests.test_rl_prep import gym_row, prep, read_split, write_blend, write_jsonl


def edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Replace `old` by `new` (same length) and set the mtime back, as `cp -p` would leave it."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    """A blend of one dataset and its prepared output."""
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(200)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    out = tmp_path / "out"
    assert prep(blend, out)["reused"] is False
    return blend, out


def damage(shard: Path) -> None:
    """Change the first expected answer's first digit: every row stays valid."""
    at = shard.read_bytes().index(b'"expected_answer": "') + len(b'"expected_answer": "')
    digit = shard.read_bytes()[at : at + 1]
    edit_in_place(
        shard,
        b'"expected_answer": "' + digit,
        b'"expected_answer": "' + (b"1" if digit != b"1" else b"2"),
    )


def first_shard(out: Path) -> Path:
    manifest = json.loads((out / "manifest.json").read_text())
    return out / manifest["splits"]["train"]["shards"][0]["path"]


def test_an_input_edited_in_place_keeping_size_and_mtime_is_prepared_again(built):
    blend, out = built
    edit_in_place(
        blend.parent / "a.jsonl", b'"question": "What is 7 + 7?"', b'"question": "What is 7 - 7?"'
    )
    summary = prep(blend, out)
    assert summary["reused"] is False
    questions = [
        r["question"] for split in ("train", "val", "test") for r in read_split(out, split)
    ]
    assert "What is 7 - 7?" in questions and "What is 7 + 7?" not in questions


def test_a_touched_input_with_the_same_bytes_reuses_the_output(built):
    blend, out = built
    os.utime(blend.parent / "a.jsonl", ns=(1, 1))
    assert prep(blend, out)["reused"] is True


def test_a_damaged_shard_of_the_same_size_is_rebuilt_not_reused(built):
    blend, out = built
    shard = first_shard(out)
    clean = shard.read_bytes()
    damage(shard)
    assert prep(blend, out)["reused"] is False
    assert first_shard(out).read_bytes() == clean


def test_the_manifest_records_each_shards_sha256_and_xxh3(built):
    _, out = built
    manifest = json.loads((out / "manifest.json").read_text())
    shard = manifest["splits"]["train"]["shards"][0]
    digests = DigestMemo(out / "unused.json")
    assert shard[XXH3] == digests.digest(out / shard["path"])
    assert len(shard[SHA256]) == 64


@pytest.mark.parametrize("recorded", [XXH3, SHA256], ids=["xxh3_128", "sha256-only manifest"])
def test_validate_of_an_rl_prep_folder_names_a_shard_whose_content_differs(
    built, recorded, steps_in_process
):
    def validate(path: Path):
        return steps_in_process("validate", "nemo_gym_jsonl", str(path), cwd=REPO)

    _, out = built
    manifest_path = out / "manifest.json"
    if recorded == SHA256:  # a manifest written before shards recorded xxh3_128
        manifest = json.loads(manifest_path.read_text())
        for split in manifest["splits"].values():
            for shard in split["shards"]:
                del shard[XXH3]
        manifest_path.write_text(json.dumps(manifest))
    assert validate(out).returncode == EXIT_OK
    shard = first_shard(out)
    damage(shard)  # rows stay valid: only the digest tells
    done = validate(out)
    assert done.returncode == EXIT_FINDINGS, done.stderr
    rel = shard.relative_to(out)
    assert f"{shard}: E-SHARD-DIGEST shard {rel} differs from what rl_prep wrote: {recorded}" in (
        done.stdout + done.stderr
    )
