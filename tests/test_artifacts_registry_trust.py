"""The artifact registry is as trustworthy as a run record, and reading it is bounded (issue 39,
cases 1-3): a registry someone else can write, or whose version no longer holds what was
registered, decides no input; a registry that is a device, huge, not UTF-8 or nested without end
is one finding (exit 2) in `lineage`, `--input NAME` and a registering run, never a traceback.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from run_fixtures import clean_env

from catalog.errors import StepsError
from runners.artifacts.registry import Output, Provenance, register, registry_path
from runners.artifacts.resolve import resolve_inputs
from runners.digest import DigestMemo

NAME = "DataBlendsArtifact-rl"
PORTS = {"train": "training_jsonl"}


def _registered(tmp_path: Path) -> tuple[Path, Path]:
    root, data = tmp_path / "runs", tmp_path / "data"
    data.mkdir()
    (data / "rows.jsonl").write_text('{"x": 1}\n', encoding="utf-8")
    made = Provenance(step="data_prep/rl_prep", run_dir=str(root / "r"))
    register(root, [Output(NAME, "training_jsonl", str(data), "data")], made,
             DigestMemo(tmp_path / "memo.json"))  # fmt: skip
    return root, data


def _resolve(root: Path, tmp_path: Path) -> StepsError:
    with pytest.raises(StepsError) as err:
        resolve_inputs({"train": f"{NAME}:latest"}, PORTS, root, tmp_path)
    return err.value


def _finding(proc) -> dict:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    [f] = json.loads(proc.stdout)["findings"]
    return f


@pytest.mark.parametrize("writable", ["registry", "folder"])
def test_a_registry_others_can_write_decides_no_input(tmp_path, writable):
    root, _ = _registered(tmp_path)
    target = registry_path(root) if writable == "registry" else root
    target.chmod(target.stat().st_mode | 0o002)
    err = _resolve(root, tmp_path)
    assert (err.finding.code, err.exit_code) == ("E-RECORD-UNTRUSTED", 2)
    assert "writable by others" in err.finding.message and "chmod go-w" in err.finding.fix


def test_a_version_whose_content_changed_is_refused_naming_both_digests(tmp_path):
    root, data = _registered(tmp_path)
    recorded = json.loads(registry_path(root).read_text())["artifacts"][NAME]["versions"][0]
    (data / "rows.jsonl").write_text('{"x": 2}\n', encoding="utf-8")
    err = _resolve(root, tmp_path)
    assert (err.finding.code, err.exit_code) == ("E-ARTIFACT-DIGEST", 2)
    assert recorded["digest"] in err.finding.message
    assert err.finding.message.count("xxh3_128:") == 2
    assert "running the step that makes it again" in err.finding.fix


def test_a_registry_edited_to_point_at_other_data_is_refused(tmp_path):
    root, _ = _registered(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "rows.jsonl").write_text('{"evil": 1}\n', encoding="utf-8")
    doc = json.loads(registry_path(root).read_text())
    doc["artifacts"][NAME]["versions"][0]["path"] = str(other)
    registry_path(root).write_text(json.dumps(doc))
    assert _resolve(root, tmp_path).finding.code == "E-ARTIFACT-DIGEST"


def test_an_unchanged_version_still_resolves(tmp_path):
    root, data = _registered(tmp_path)
    out, [hit] = resolve_inputs({"train": f"{NAME}:latest"}, PORTS, root, tmp_path)
    assert out == {"train": str(data)} and hit.version == "v0"


def _bad_registries(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Registries that once made `lineage` exit 70 or grow without bound."""
    cases = {}
    for case, write in {
        "not_utf8": lambda p: p.write_bytes(b'{"artifacts": {"\xff": {}}}'),
        "nested": lambda p: p.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        "huge": lambda p: p.write_text('{"artifacts": {}, "pad": "' + "x" * (64 << 20) + '"}'),
        "dev_zero": lambda p: p.symlink_to("/dev/zero"),
    }.items():
        root = tmp_path / case / "runs"
        root.mkdir(parents=True)
        path = registry_path(root)
        write(path)
        cases[case] = (root, case)
    return cases


@pytest.mark.parametrize("case", ["not_utf8", "nested", "huge", "dev_zero"])
def test_a_registry_that_cannot_be_read_is_one_finding_in_lineage_and_input(
    tmp_path, case, steps_in_process
):
    root, _ = _bad_registries(tmp_path)[case]
    env = clean_env(tmp_path, STEPS_RUNS_DIR=str(root))
    start = time.monotonic()
    f = _finding(steps_in_process("lineage", f"{NAME}:latest", "--json", cwd=tmp_path, env=env))
    assert time.monotonic() - start < 30
    expected = "E-RECORD-UNTRUSTED" if case == "dev_zero" else "E-ARTIFACT-REGISTRY"
    assert f["code"] == expected and f["path"] == str(registry_path(root))
    with pytest.raises(StepsError) as err:
        resolve_inputs({"train": f"{NAME}:latest"}, PORTS, root, tmp_path)
    assert (err.value.finding.code, err.value.exit_code) == (expected, 2)


def test_a_registering_run_refuses_a_damaged_registry_before_any_work(tmp_path, steps_in_process):
    root, _ = _bad_registries(tmp_path)["not_utf8"]
    out = tmp_path / "out"
    env = clean_env(tmp_path, STEPS_OUTPUT=str(out), STEPS_RUNS_DIR=str(root))
    proc = steps_in_process(
        "run", "data_prep/rl_prep", "-c", "tiny", "--json", cwd=tmp_path, env=env
    )
    assert proc.returncode in (1, 2), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    codes = [f["code"] for f in json.loads(proc.stdout)["findings"]]
    assert "E-ARTIFACT-REGISTRY" in codes
    assert not out.exists()  # refused before the data was prepared


def test_lineage_of_a_deeply_nested_run_json_is_a_finding(tmp_path, steps_in_process):
    run_dir = tmp_path / "runs" / "data_prep" / "rl_prep" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    proc = steps_in_process(
        "lineage", str(run_dir), "--json", cwd=tmp_path, env=clean_env(tmp_path)
    )
    f = _finding(proc)
    assert f["code"] == "E-RUN-RECORD"


def test_lineage_of_a_name_too_long_for_a_path_is_a_finding(tmp_path, steps_in_process):
    env = clean_env(tmp_path, STEPS_RUNS_DIR=str(tmp_path / "runs"))
    f = _finding(steps_in_process("lineage", "A" * 5000, "--json", cwd=tmp_path, env=env))
    assert f["code"] == "E-ARTIFACT-UNKNOWN"
