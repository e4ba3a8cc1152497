"""`list`, `show` and id resolution, extra catalog roots, and what the light commands import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DPO = "rl/nemo_rl/dpo"
HEAVY = ("torch", "ray", "vllm", "wandb", "nemo_rl", "megatron")


def steps_cli(*argv: str, cache: Path, steps_path: str | None = None):
    env = {k: v for k, v in os.environ.items() if k != "STEPS_PATH"}
    env["STEPS_CACHE_DIR"] = str(cache)
    if steps_path:
        env["STEPS_PATH"] = steps_path
    return subprocess.run(
        [sys.executable, "-m", "steps", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


def _extra_root(tmp_path: Path, sid: str, manifest: str | None = None) -> Path:
    root = tmp_path / "mine"
    (root / sid).mkdir(parents=True)
    text = manifest or (
        f'[step]\nid = "{sid}"\nname = "Mine"\ncategory = "{sid.split("/")[0]}"\n'
        'description = "A user step."\nversion = "0.1.0"\n\n'
        '[[consumes]]\nname = "data"\ntype = "nemo_gym_jsonl"\ndescription = "rows"\n'
        'config_keys = ["data.path"]\n'
    )
    (root / sid / "step.toml").write_text(text, encoding="utf-8")
    return root


def test_list_prints_each_consumed_type_once(tmp_path):
    proc = steps_cli("list", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(DPO + " "))
    ins = line.split()[1].split(",")
    assert ins.count("preference_jsonl") == 1
    assert len(ins) == len(set(ins))


def test_list_type_filters_follow_is_a(tmp_path):
    def ids(*args: str) -> list[str]:
        proc = steps_cli("list", "--json", *args, cache=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return [s["id"] for s in json.loads(proc.stdout)]

    assert DPO in ids("--consumes", "preference_jsonl")
    assert DPO in ids("--consumes", "training_jsonl")  # preference_jsonl is_a training_jsonl
    assert DPO in ids("--produces", "megatron_checkpoint")  # nemo_rl_checkpoint is_a megatron
    assert DPO not in ids("--consumes", "nemo_gym_jsonl")
    assert ids("--category", "rl") and all(i.startswith("rl/") for i in ids("--category", "rl"))


def test_list_unknown_type_gives_did_you_mean_and_exit_2(tmp_path):
    proc = steps_cli("list", "--consumes", "preference_jsonll", cache=tmp_path)
    assert proc.returncode == 2
    assert "E-TYPE-UNKNOWN" in proc.stderr and "did you mean preference_jsonl" in proc.stderr


def test_show_resolves_a_unique_tail_and_lists_config_paths(tmp_path):
    proc = steps_cli("show", "dpo", "--json", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["id"] == DPO
    assert {"default", "tiny"} <= set(shown["configs"])
    assert all(Path(p).is_file() for p in shown["configs"].values())
    assert shown["step"]["category"] == "rl" and shown["consumes"]


def test_show_text_names_ports_configs_and_errors(tmp_path):
    proc = steps_cli("show", "nemo_rl/dpo", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(DPO)
    assert "consumes:" in out and "data.train.data_path" in out
    assert "default (default):" in out and "tiny:" in out
    assert "E-DPO-ROW" in out


def test_unknown_step_gives_did_you_mean_and_exit_2(tmp_path):
    proc = steps_cli("show", "dpoo", cache=tmp_path)
    assert proc.returncode == 2
    assert "E-STEP-UNKNOWN" in proc.stderr
    assert f"did you mean {DPO}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ambiguous_tail_across_roots_exits_2_naming_both(tmp_path):
    root = _extra_root(tmp_path, "mine/dpo")
    proc = steps_cli("show", "dpo", "--catalog", str(root), cache=tmp_path)
    assert proc.returncode == 2
    assert "E-STEP-AMBIGUOUS" in proc.stderr
    assert DPO in proc.stderr and "mine/dpo" in proc.stderr


def test_extra_roots_come_from_catalog_option_and_steps_path(tmp_path):
    root = _extra_root(tmp_path, "mine/gym_thing")
    by_option = steps_cli("list", "--json", "--catalog", str(root), cache=tmp_path)
    by_env = steps_cli("list", "--json", cache=tmp_path, steps_path=str(root))
    for proc in (by_option, by_env):
        assert proc.returncode == 0, proc.stderr
        assert "mine/gym_thing" in [s["id"] for s in json.loads(proc.stdout)]
    gym = steps_cli(
        "list", "--json", "--consumes", "training_jsonl", "--catalog", str(root), cache=tmp_path
    )
    assert "mine/gym_thing" in [s["id"] for s in json.loads(gym.stdout)]


def test_missing_catalog_root_is_an_error_not_a_traceback(tmp_path):
    proc = steps_cli("list", "--catalog", str(tmp_path / "nope"), cache=tmp_path)
    assert proc.returncode == 2
    assert "E-CATALOG-ROOT" in proc.stderr and "Traceback" not in proc.stderr


def test_malformed_manifest_in_list_names_file_and_line(tmp_path):
    root = _extra_root(tmp_path, "mine/bad", manifest='[step]\nid = "mine/bad"\nname = \n')
    proc = steps_cli("list", "--catalog", str(root), cache=tmp_path)
    assert proc.returncode == 1
    assert f"{root / 'mine/bad/step.toml'}:3: E-MANIFEST-TOML" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_edited_manifest_is_reread_despite_the_cache(tmp_path):
    root = _extra_root(tmp_path, "mine/thing")
    first = steps_cli("list", "--json", "--catalog", str(root), cache=tmp_path)
    assert "A user step." in first.stdout
    manifest = root / "mine/thing/step.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("A user step.", "Edited."), encoding="utf-8"
    )
    second = steps_cli("list", "--json", "--catalog", str(root), cache=tmp_path)
    assert "Edited." in second.stdout and "A user step." not in second.stdout


PROBE = """
import json, runpy, sys
before = set(sys.modules)
sys.argv = {argv!r}
code = 0
if sys.argv == ["import"]:
    import steps
else:
    try:
        runpy.run_module("steps", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
added = sorted(m for m in set(sys.modules) - before)
print(json.dumps({{"code": code, "added": added}}))
"""


def imported_by(argv: list[str], cache: Path) -> tuple[int, set[str]]:
    """Modules a command imports on top of what the interpreter (and any sitecustomize) had."""
    env = {k: v for k, v in os.environ.items() if k != "STEPS_PATH"}
    env["STEPS_CACHE_DIR"] = str(cache)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["code"], {m.split(".")[0] for m in out["added"]}


@pytest.mark.parametrize(
    "argv",
    [["import"], ["steps", "list"], ["steps", "show", "dpo"], ["steps", "check"]],
    ids=["import steps", "list", "show", "check"],
)
def test_light_commands_import_no_heavy_stack(argv, tmp_path):
    code, added = imported_by(argv, tmp_path)
    assert code in (0, 1, None)  # check may find problems; it must not crash
    assert sorted(added & set(HEAVY)) == []


@pytest.mark.parametrize(
    "argv", [["steps", "list"], ["steps", "show", "dpo"]], ids=["list", "show"]
)
def test_list_and_show_import_no_validation_libraries(argv, tmp_path):
    """Once the manifest cache is warm, not even the TOML parser or dataclasses load."""
    imported_by(argv, tmp_path)
    code, added = imported_by(argv, tmp_path)
    assert "tomllib" not in added and "tomli" not in added
    assert code in (0, None)
    assert sorted(added & {"pydantic", "yaml", "omegaconf", "hydra", "dataclasses"}) == []
