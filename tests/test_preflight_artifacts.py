"""Preflight rule artifact_contracts: every bound input is checked by its type's contract.

Driven as a user drives it: `python -m steps run <shipped step> -c tiny ...` (in-process, or in
a subprocess where a launch could exec), against a fake NeMo-RL checkout (and its Gym
submodule) and inputs written to tmp_path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pipeline_toys import steps_main
from preflight_fixtures import GYM_ROW, gym_root
from run_fixtures import RECORD_VAR, REPO, clean_env, fake_checkout, only_run_dir, steps_run
from test_contracts_checkpoints import hf_folder, megatron_iter
from unreadable import unreadable

STEPS = REPO / "steps"
DPO_DATA = STEPS / "rl/nemo_rl/dpo/data/tiny_train.jsonl"
GYM_DATA = STEPS / "rl/nemo_rl/rlvr/data/tiny_gym_train.jsonl"
# Every code the rule (through the contracts) can yield; a crash in it becomes E-RULE-CRASH.
RULE_CODES = {
    "E-JSONL",
    "W-JSONL-BLANK",
    "E-DPO-ROW",
    "W-DPO-EMPTY-RESPONSE",
    "E-RLVR-ROW",
    "E-GYM-ROW",
    "E-GYM-AGENT-REF",
    "E-GYM-AGENT",
    "E-GYM-TASK-FIELD",
    "E-HF-CHECKPOINT",
    "W-HF-HUB-ID",
    "E-MEGATRON-CHECKPOINT",
    "E-NEMO-RL-CHECKPOINT",
    "E-RULE-CRASH",
}
PAIR = {"prompt": "2+2?", "chosen": "4", "rejected": "5"}
DROP = ("NEMO_RL_HOME", "STEPS_RUNS_DIR", RECORD_VAR)  # what would point the runner elsewhere


def _run(tmp_path: Path, step: str, *argv: str, gym: bool = True, dry: bool = True, **env: str):
    """`steps run <step> ...` with a fake checkout (with its Gym submodule unless gym=False)."""
    checkout = tmp_path / "nemo-rl"
    if not checkout.is_dir():
        fake_checkout(checkout)
        if gym:
            gym_root(checkout / "3rdparty" / "Gym-workspace")
    flags = ["--dry-run", "--json"] if dry else []
    args = [step, "--nemo-rl", str(checkout), "--runs-dir", str(tmp_path / "runs"), *flags]
    extra = {"STEPS_CACHE_DIR": str(tmp_path / "cache"), "STEPS_OUTPUT": str(tmp_path / "out")}
    if dry or step == "data_prep/rl_prep":
        return steps_main("run", *args, *argv, cwd=tmp_path, env={**extra, **env}, drop=DROP)
    # a launch that passed preflight would exec: keep it out of the test process
    environ = clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"), **env)
    return steps_run(*args, *argv, cwd=tmp_path, env=environ)


def _findings(proc) -> list[dict]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)["findings"]


def _rule_findings(proc) -> list[dict]:
    return [f for f in _findings(proc) if f["code"] in RULE_CODES]


def _errors(findings: list[dict], code: str) -> list[dict]:
    return [f for f in findings if f["code"] == code and f.get("severity", "error") == "error"]


def _rows(path: Path, rows: list[dict], extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + extra, encoding="utf-8")
    return path


def _shipped_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- DPO preference rows -------------------------------------------------------------------


def test_dpo_row_with_chosen_equal_to_rejected_stops_the_run_before_exec(tmp_path: Path) -> None:
    rows = [*_shipped_rows(DPO_DATA)[:3], {"prompt": "p", "chosen": "same", "rejected": "same"}]
    train = _rows(tmp_path / "pairs.jsonl", rows)
    record = tmp_path / "record.json"
    proc = _run(
        tmp_path,
        "rl/nemo_rl/dpo",
        "-c",
        "tiny",
        f"data.train.data_path={train}",
        dry=False,
        **{RECORD_VAR: str(record)},
    )
    assert proc.returncode == 1
    assert f"{train}:4: E-DPO-ROW rejected: 'chosen' and 'rejected' are identical" in proc.stderr, (
        proc.stderr
    )
    assert "Fix: drop the row or give two different responses" in proc.stderr
    assert "preflight failed" in proc.stderr and "Traceback" not in proc.stderr
    assert not record.exists()  # the upstream script never started
    run_dir = only_run_dir(tmp_path / "runs", "rl/nemo_rl/dpo")
    assert not (run_dir / "inputs").exists()  # no derived inputs written for a failed preflight


def test_dpo_row_missing_rejected_is_reported_at_its_line_with_the_key(tmp_path: Path) -> None:
    rows = [PAIR, PAIR, {"prompt": "p", "chosen": "c"}, PAIR]
    val = _rows(tmp_path / "val.jsonl", rows)
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.validation.data_path={val}")
    assert proc.returncode == 1
    [f] = _errors(_findings(proc), "E-DPO-ROW")
    assert (f["path"], f["line"], f["key"]) == (str(val), 3, "rejected")
    assert "missing 'rejected'" in f["message"]


def test_dpo_rows_are_read_with_the_split_s_configured_keys(tmp_path: Path) -> None:
    rows = [{"prompt": "p", "chosen": "good", "worse": "bad"}] * 3
    train = _rows(tmp_path / "renamed.jsonl", rows)
    base = ["-c", "tiny", f"data.train.data_path={train}"]
    proc = _run(tmp_path, "rl/nemo_rl/dpo", *base)
    [f] = _errors(_findings(proc), "E-DPO-ROW")  # one cause over three rows: one finding
    assert f["line"] == 1 and f["message"].startswith("3 rows: rejected: ")
    proc = _run(tmp_path, "rl/nemo_rl/dpo", *base, "++data.train.rejected_key=worse")
    assert _rule_findings(proc) == []


def test_more_bad_rows_than_the_cap_end_with_one_error_summary(tmp_path: Path) -> None:
    bad = [{"prompt": "p", "chosen": "x", "rejected": "x", "extra": i} for i in range(2)]
    train = _rows(tmp_path / "bad.jsonl", bad, extra="{\n" * 25 + "\n")  # 25 lines not JSON
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.train.data_path={train}")
    found = [f for f in _findings(proc) if f.get("path") == str(train)]
    [rows] = [f for f in found if f.get("line") is not None and f["code"] == "E-DPO-ROW"]
    assert rows["line"] == 1 and rows["message"].startswith("2 rows: ")  # one cause, one finding
    lines = [f["line"] for f in found if f.get("line") is not None and f["code"] == "E-JSONL"]
    assert lines == list(range(3, 22))
    [summary] = [f for f in found if "errors in total" in f["message"]]
    assert summary["code"] == "E-JSONL" and summary.get("severity", "error") == "error"
    assert "26 errors in total, first 20 shown; 27 of 27 rows bad" in summary["message"]
    assert f"steps validate preference_jsonl {train}" in summary["fix"]
    assert any(f["code"] == "W-JSONL-BLANK" and f["line"] == 28 for f in found)


def test_finding_without_its_own_fix_shows_the_usual_fix(tmp_path: Path) -> None:
    """dpo's manifest says nothing of its own about E-HF-CHECKPOINT: the registry's fix."""
    from catalog.codes import registry

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\0" * 16)
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"policy.model_name={weights}")
    [f] = _errors(_findings(proc), "E-HF-CHECKPOINT")
    assert f["path"] == str(weights) and "expected a model folder, got a file" in f["message"]
    assert f["fix"] == registry().get("E-HF-CHECKPOINT").fix


# --- RLVR with NeMo-Gym rows ----------------------------------------------------------------


def _gym(tmp_path: Path, rows: list[dict], *argv: str, gym: bool = True):
    train = _rows(tmp_path / "gym.jsonl", rows)
    proc = _run(
        tmp_path,
        "rl/nemo_rl/rlvr",
        "-c",
        "nemo_gym_tiny",
        f"data.train.data_path={train}",
        *argv,
        gym=gym,
    )
    return train, proc


def _without_agent_ref() -> dict:
    return {k: v for k, v in GYM_ROW.items() if k != "agent_ref"}


def test_gym_row_without_agent_ref_and_no_default_is_e_gym_agent_ref(tmp_path: Path) -> None:
    train, proc = _gym(tmp_path, [GYM_ROW, _without_agent_ref()], "run.default_agent_ref=null")
    assert proc.returncode == 1
    [f] = _errors(_findings(proc), "E-GYM-AGENT-REF")
    assert (f["path"], f["line"], f["key"]) == (str(train), 2, "agent_ref")
    assert "run.default_agent_ref" in f["fix"]


def test_gym_row_without_agent_ref_passes_when_a_default_is_configured(tmp_path: Path) -> None:
    _, proc = _gym(tmp_path, [GYM_ROW, _without_agent_ref()] * 2)  # nemo_gym.yaml: the default
    assert proc.returncode == 0, proc.stdout
    assert _rule_findings(proc) == []


def _misnamed(name: str) -> dict:
    return {**GYM_ROW, "agent_ref": {"type": "responses_api_agents", "name": name}}


def test_gym_agent_not_in_the_gym_configs_is_one_e_gym_agent_with_did_you_mean(
    tmp_path: Path,
) -> None:
    train, proc = _gym(tmp_path, [GYM_ROW, GYM_ROW, _misnamed("math_with_judge_simple_agnt")])
    assert proc.returncode == 1
    assert not _errors(_findings(proc), "E-GYM-AGENT-REF")
    [f] = _errors(_findings(proc), "E-GYM-AGENT")
    assert (f["path"], f["line"], f["key"]) == (str(train), 3, "agent_ref.name")
    assert "'math_with_judge_simple_agnt'" in f["message"]
    assert f["fix"] == "did you mean `math_with_judge_simple_agent`?"


def test_gym_agents_are_read_from_the_configured_run_gym_root(tmp_path: Path) -> None:
    root = gym_root(tmp_path / "elsewhere")  # not inside the NeMo-RL checkout
    _, proc = _gym(
        tmp_path, [_misnamed("math_with_judge_simple_agnt")], f"+run.gym_root={root}", gym=False
    )
    assert [f["line"] for f in _errors(_findings(proc), "E-GYM-AGENT")] == [1]


def test_gym_unknown_responses_create_params_key_is_e_gym_row(tmp_path: Path) -> None:
    row = {**GYM_ROW, "responses_create_params": {**GYM_ROW["responses_create_params"]}}
    row["responses_create_params"]["max_tokens"] = 64
    train, proc = _gym(tmp_path, [GYM_ROW, row])
    assert proc.returncode == 1
    [f] = _errors(_findings(proc), "E-GYM-ROW")
    assert (f["path"], f["line"]) == (str(train), 2)
    assert f["key"] == "responses_create_params.max_tokens"
    assert "did you mean `max_output_tokens`?" in f["fix"]


# --- inputs that pass ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "step,config,gym",
    [
        ("rl/nemo_rl/dpo", "tiny", False),
        ("rl/nemo_rl/rlhf", "tiny", False),  # its GenRM server is not in the fake Gym
        ("rl/nemo_rl/rlvr", "tiny", False),
        ("rl/nemo_rl/rlvr", "nemo_gym_tiny", True),
        ("data_prep/rl_prep", "tiny", False),  # its data_blend input has no contract to run
    ],
)
def test_shipped_tiny_inputs_pass_without_a_finding_from_the_rule(
    tmp_path: Path, step: str, config: str, gym: bool
) -> None:
    proc = _run(tmp_path, step, "-c", config, gym=gym)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _rule_findings(proc) == []


def test_local_hf_policy_folder_passes_and_a_broken_one_is_named(tmp_path: Path) -> None:
    policy = hf_folder(tmp_path / "policy")
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"policy.model_name={policy}")
    assert proc.returncode == 0 and _rule_findings(proc) == []
    (policy / "tokenizer.json").unlink()
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"policy.model_name={policy}")
    [f] = _errors(_findings(proc), "E-HF-CHECKPOINT")
    assert f["path"] == str(policy) and "no tokenizer files" in f["message"]


# --- missing and empty inputs -------------------------------------------------------------


def test_missing_data_path_is_reported_once_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "train.jsonl"
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.train.data_path={missing}")
    assert proc.returncode == 1
    naming = [
        f for f in _findings(proc) if str(missing) in f["message"] or f.get("path") == str(missing)
    ]
    assert [f["code"] for f in naming] == ["E-INPUT-MISSING"]  # inputs_exist's, not repeated


def test_empty_data_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.train.data_path={empty}")
    assert proc.returncode == 1
    [f] = _errors(_findings(proc), "E-JSONL")
    assert f["path"] == str(empty) and "no rows" in f["message"]


def test_unreadable_data_file_says_so_once_without_a_garbled_summary(tmp_path: Path) -> None:
    train = _rows(tmp_path / "pairs.jsonl", [PAIR])
    with unreadable(train):
        proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.train.data_path={train}")
    assert proc.returncode == 1
    [f] = [f for f in _findings(proc) if f.get("path") == str(train)]
    assert (f["code"], f["message"]) == ("E-JSONL", "input cannot be read (Permission denied)")
    assert "rows bad" not in proc.stdout and "no rows" not in proc.stdout


def test_folder_without_jsonl_shards_is_an_error_naming_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a shard\n")
    _rows(folder / ".staging" / "part.jsonl", [PAIR])  # hidden folders are not read
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.train.data_path={folder}")
    assert proc.returncode == 1
    [f] = _errors(_findings(proc), "E-JSONL")
    assert f["path"] == str(folder) and "holds no *.jsonl shards" in f["message"]


def test_folder_of_shards_is_read_shard_by_shard_with_lines_per_shard(tmp_path: Path) -> None:
    folder = tmp_path / "shards"
    _rows(folder / "a.jsonl", [PAIR, PAIR])
    bad = _rows(folder / "b.jsonl", [PAIR, {"prompt": "p", "chosen": "c"}])
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.train.data_path={folder}")
    [f] = _errors(_findings(proc), "E-DPO-ROW")
    assert (f["path"], f["line"], f["key"]) == (str(bad), 2, "rejected")


# --- Megatron checkpoints (convert/megatron_to_hf) ------------------------------------------


def _convert(tmp_path: Path, megatron: Path):
    bridge = tmp_path / "bridge" / "scripts" / "conversion" / "run_conversion.py"
    bridge.parent.mkdir(parents=True, exist_ok=True)
    bridge.write_text("raise SystemExit(0)\n")
    return _run(
        tmp_path,
        "convert/megatron_to_hf",
        "-c",
        "tiny",
        f"megatron_path={megatron}",
        f"megatron_bridge.root={tmp_path / 'bridge'}",
    )


def test_folder_without_iters_or_metadata_is_e_megatron_checkpoint(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "run_config.yaml").write_text("model: {}\n")
    proc = _convert(tmp_path, folder)
    assert proc.returncode == 1
    [f] = _errors(_findings(proc), "E-MEGATRON-CHECKPOINT")
    assert f["path"] == str(folder) and "no iter_* folders" in f["message"]


def test_valid_megatron_checkpoint_passes_and_its_latest_iter_is_exported(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    megatron_iter(folder / "iter_0000020")
    megatron_iter(folder / "iter_0000100")
    proc = _convert(tmp_path, folder)
    assert proc.returncode == 0, proc.stdout
    assert _rule_findings(proc) == []
    command = json.loads(proc.stdout)["command"]
    assert command[command.index("--megatron-path") + 1] == str(folder / "iter_0000100")


def test_latest_iter_without_torch_dist_metadata_is_reported_at_that_iter(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    megatron_iter(folder / "iter_0000020")
    megatron_iter(folder / "iter_0000100")
    (folder / "iter_0000100" / ".metadata").unlink()
    [f] = _errors(_findings(_convert(tmp_path, folder)), "E-MEGATRON-CHECKPOINT")
    assert f["path"] == str(folder / "iter_0000100") and ".metadata" in f["message"]


# --- hub ids ----------------------------------------------------------------------------------


def test_hub_id_policy_is_not_checked_as_a_local_path(tmp_path: Path) -> None:
    proc = _run(
        tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", "--keep", "policy.model_name=Qwen/Qwen3-0.6B"
    )
    assert proc.returncode == 0, proc.stdout
    codes = {f["code"] for f in _findings(proc)}
    assert not codes & {"E-HF-CHECKPOINT", "E-INPUT-MISSING", "W-HF-HUB-ID"}
    record = json.loads((Path(json.loads(proc.stdout)["run_dir"]) / "run.json").read_text())
    [policy] = [a for a in record["inputs"] if a["name"] == "policy"]
    assert policy["value"] == "Qwen/Qwen3-0.6B" and policy["is_path"] is False


def test_hub_id_shaped_name_that_exists_locally_is_checked_as_a_folder(tmp_path: Path) -> None:
    (tmp_path / "Qwen" / "Qwen3-0.6B").mkdir(parents=True)  # relative to the current directory
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", "policy.model_name=Qwen/Qwen3-0.6B")
    assert proc.returncode == 1
    found = _errors(_findings(proc), "E-HF-CHECKPOINT")
    assert {f["path"] for f in found} == {str(tmp_path / "Qwen" / "Qwen3-0.6B")}
    assert any("config.json is missing" in f["message"] for f in found)


# --- rl_prep output bound as data -------------------------------------------------------------


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    """Preference shards written by the shipped rl_prep step (tiny_dpo blend, 4 KB shards)."""
    out = tmp_path / "prep"
    proc = _run(tmp_path, "data_prep/rl_prep", "-c", "tiny_dpo", f"output_dir={out}", dry=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.rmtree(tmp_path / "runs")
    return out


def _shards(prepared: Path, split: str) -> list[Path]:
    manifest = json.loads((prepared / "manifest.json").read_text())
    return [prepared / s["path"] for s in manifest["splits"][split]["shards"]]


def test_rl_prep_output_bound_as_data_validates_each_shard(tmp_path: Path, prepared) -> None:
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", "--keep", "--input", f"train={prepared}")
    assert proc.returncode == 0, proc.stdout
    assert _rule_findings(proc) == []
    record = json.loads((Path(json.loads(proc.stdout)["run_dir"]) / "run.json").read_text())
    bound = {a["name"]: [] for a in record["inputs"]}
    for a in record["inputs"]:
        bound[a["name"]].append(a["value"])
    assert bound["train"] == [str(p) for p in _shards(prepared, "train")]
    assert bound["validation"] == [str(p) for p in _shards(prepared, "val")]
    assert len(bound["train"]) > 1  # several shards, each one checked


def test_shard_edited_after_rl_prep_is_reported_at_its_line(tmp_path: Path, prepared) -> None:
    shard = _shards(prepared, "train")[-1]
    lines = shard.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = '{"prompt": "p", "chosen": \n'
    shard.write_text("".join(lines), encoding="utf-8")
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", "--input", f"train={prepared}")
    assert proc.returncode == 1
    [f] = _errors(_findings(proc), "E-JSONL")
    assert (f["path"], f["line"]) == (str(shard), 2) and "invalid JSON" in f["message"]


def test_shard_whose_row_count_changed_after_rl_prep_is_reported(tmp_path: Path, prepared) -> None:
    shard = _shards(prepared, "train")[-1]
    with shard.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(PAIR) + "\n")  # a valid row the manifest does not count
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", "--input", f"train={prepared}")
    assert any("manifest says" in f["message"] for f in _errors(_findings(proc), "E-JSONL"))
