"""env.toml profiles and the remote preflight rules, checked by `run --dry-run` (no cluster needed).

The probe runs for real (`bash -s` on this machine); where a rule needs the partition's GRES the
test uses the real one-node Slurm. The probe also checks that sbatch exists where the job is
submitted: these dry runs put tests/cluster/dry-run-bin first on PATH, whose sbatch fails if it
ever runs, so they pass on a machine without Slurm and prove that a dry run submits nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cluster_fixtures import PYTHON, dry_run_env, slurm, stand_in_checkout  # noqa: F401
from run_fixtures import REPO, clean_env, steps_cli

from catalog.errors import StepsError
from runners.launch.profiles.env_file import find_env_file
from runners.launch.profiles.env_toml import load_profile
from runners.launch.request import RemoteFacts
from runners.preflight import BoundArtifact, PreflightContext
from runners.preflight.remote import remote_inputs

BASE = """[base]
executor = "slurm"
partition = "debug"
container_image = "img"
mounts = ["/data:/data"]
remote_dir = "{root}/shared"
nemo_rl_dir = "{root}/RL"
launcher = "{python}"
secrets = ["WANDB_API_KEY"]
env = {{ A = "1", B = "2" }}
sbatch_args = ["--qos=normal"]

[child]
extends = "base"
mounts = ["{root}:{root}", "{repo}:{repo}"]
secrets = ["HF_TOKEN"]
env = {{ B = "3" }}
sbatch_args = ["--qos=high"]
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_extends_merges_tables_appends_mounts_and_secrets_and_replaces_other_lists(tmp_path):
    f = write(tmp_path / "env.toml", BASE.format(root=tmp_path, python=PYTHON, repo=REPO))
    p = load_profile(f, "child")
    assert p.mounts == ["/data:/data", f"{tmp_path}:{tmp_path}", f"{REPO}:{REPO}"]
    assert p.secrets == ["WANDB_API_KEY", "HF_TOKEN"]
    assert p.env == {"A": "1", "B": "3"}
    assert p.sbatch_args == ["--qos=high"]
    assert p.partition == "debug" and p.extends == "base"


@pytest.mark.parametrize(
    ("text", "needle", "line"),
    [
        ('[a]\nexecutor = "slurm"\nremote_dir = "/x"\npartiton = "p"\n',
         "did you mean 'partition'", 4),
        ('[a]\nexecutor = "slurm"\nextends = "b"\nremote_dir = "/x"\n[b]\nextends = "a"\n',
         "extends cycle: a -> b -> a", 3),
        ('[a]\nexecutor = "pbs"\n', "executor 'pbs' is not one of local, ray, slurm", 2),
        ('[a]\nexecutor = "slurm"\nnodes = 0\nremote_dir = "/x"\n', "nodes", 3),
        ('[a]\nexecutor = "slurm"\n', "remote_dir", None),
        ('[a]\nexecutor = "slurm"\nremote_dir = "/x"\nsecrets = ["MY TOKEN"]\n', "secrets", 4),
    ],
)  # fmt: skip
def test_a_bad_profile_is_e_profile_at_its_line(tmp_path, text, needle, line):
    f = write(tmp_path / "env.toml", text)
    with pytest.raises(StepsError) as err:
        load_profile(f, "a")
    finding = err.value.finding
    assert err.value.exit_code == 2 and finding.code == "E-PROFILE"
    assert needle in finding.message and finding.path == str(f)
    if line:
        assert finding.line == line


def test_an_unknown_profile_names_the_known_ones(tmp_path):
    f = write(tmp_path / "env.toml", BASE.format(root=tmp_path, python=PYTHON, repo=REPO))
    with pytest.raises(StepsError) as err:
        load_profile(f, "chlid")
    assert "did you mean [child]" in err.value.finding.message
    assert err.value.finding.fix == "use one of: base, child"


def test_env_file_is_found_in_the_documented_order(tmp_path):
    deep = tmp_path / "proj" / "sub"
    deep.mkdir(parents=True)
    home = tmp_path / "home"
    user = write(
        (home / ".config" / "steps").mkdir(parents=True) or home / ".config/steps/env.toml", ""
    )
    env = {"HOME": str(home)}
    assert find_env_file(None, env, deep) == user
    parent = write(tmp_path / "proj" / "env.toml", "")
    assert find_env_file(None, env, deep) == parent
    named = write(tmp_path / "named.toml", "")
    assert find_env_file(None, {**env, "STEPS_ENV_FILE": str(named)}, deep) == named
    explicit = write(tmp_path / "x.toml", "")
    assert find_env_file(str(explicit), {**env, "STEPS_ENV_FILE": str(named)}, deep) == explicit
    with pytest.raises(StepsError) as err:
        find_env_file(None, {"HOME": str(tmp_path / "nobody")}, tmp_path / "home")
    assert err.value.finding.code == "E-PROFILE" and err.value.exit_code == 2


@pytest.fixture
def dry(tmp_path, monkeypatch, capsys):
    """`run rl/nemo_rl/dpo -c tiny --batch lab --dry-run --json` against a written env.toml."""
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    env = dry_run_env(tmp_path, WANDB_API_KEY="w" * 8, STEPS_OUTPUT=str(tmp_path / "out"))

    def call(profile: str, *overrides: str, step: str = "rl/nemo_rl/dpo", extra_env=None):
        write(
            work / "env.toml",
            "[lab]\n" + profile.replace("{root}", str(tmp_path)).replace("{repo}", str(REPO)),
        )
        res = steps_cli(
            monkeypatch, capsys, "run", step, "-c", "tiny", "--batch", "lab", "--dry-run",
            "--json", *overrides, cwd=work, env={**env, **(extra_env or {})},
        )  # fmt: skip
        doc = json.loads(res.stdout)
        return res.returncode, {f["code"]: f for f in doc["findings"]}, doc

    return call


GOOD = """executor = "slurm"
container_image = "img"
mounts = ["{root}:{root}", "{repo}:{repo}"]
remote_dir = "{root}/shared"
nemo_rl_dir = "{root}/RL"
secrets = ["WANDB_API_KEY"]
"""


def test_a_clean_profile_dry_run_shows_the_submission_and_exits_0(dry, tmp_path):
    code, findings, doc = dry(GOOD)
    assert code == 0, findings
    launch = doc["launch"]
    assert launch["sbatch"][0] == "sbatch" and launch["sbatch"][-1] == "ray.sub"
    assert "--nodes=1" in launch["sbatch"] and any(
        a.startswith("--job-name=steps-dpo-") for a in launch["sbatch"]
    )
    assert launch["submit_cwd"] == f"{tmp_path}/RL"
    assert launch["command"].endswith(
        f"examples/run_dpo.py --config {launch['job_dir']}/config.yaml"
    )
    assert launch["env_names"] == [
        "BASE_LOG_DIR",
        "COMMAND",
        "CONTAINER",
        "GPUS_PER_NODE",
        "MOUNTS",
    ]
    assert launch["secret_names"] == ["WANDB_API_KEY"]
    assert doc["run_dir"] is None and not (tmp_path / "shared").exists()


@pytest.mark.parametrize(
    ("profile_extra", "overrides", "code"),
    [
        ('nodes = 2\n', [], "E-REMOTE-NODES"),
        ('nodes = 1\nenv = { DEDICATED_RAY_HEAD = "1" }\n', [], "E-REMOTE-NODES"),
        ('gpus_per_node = 2\n', [], "E-REMOTE-GPUS"),
        ('env = { HF_TOKEN = "hf_abcdefghijklmnopqrst" }\n', [], "E-REMOTE-SECRET-INLINE"),
        ('env = { UV_CACHE_DIR = "/scratch/uv" }\n', [], "W-REMOTE-UV-CACHE"),
        ("", [], "E-REMOTE-SECRET-MISSING"),
        ("", ["++logger.hf_token=${oc.env:HF_TOKEN,none}"], "E-REMOTE-SECRET-MISSING"),
        ("", ["checkpointing.checkpoint_dir=/elsewhere/ckpt"], "E-REMOTE-MOUNT"),
    ],
)  # fmt: skip
def test_each_remote_rule_catches_its_planted_defect(dry, profile_extra, overrides, code):
    unset = {"WANDB_API_KEY": ""} if code == "E-REMOTE-SECRET-MISSING" and not overrides else None
    exit_code, findings, _ = dry(GOOD + profile_extra, *overrides, extra_env=unset)
    assert code in findings, sorted(findings)
    assert exit_code == (0 if code.startswith("W-") else 1)
    if code != "E-REMOTE-MOUNT":
        assert findings[code]["path"].endswith("env.toml") and findings[code].get("line")
    assert "hf_abcdefghijklmnopqrst" not in json.dumps(findings)
    if overrides and code == "E-REMOTE-SECRET-MISSING":
        assert "${oc.env:HF_TOKEN}" in findings[code]["message"]


def test_ray_sub_needs_a_container_and_a_checkout_with_ray_sub(dry, tmp_path):
    _, findings, _ = dry(GOOD.replace('container_image = "img"\n', ""))
    assert "E-REMOTE-CONTAINER" in findings
    (tmp_path / "RL" / "ray.sub").unlink()
    _, findings, _ = dry(GOOD)
    assert "E-REMOTE-NEMO-RL" in findings and "ray.sub" in findings["E-REMOTE-NEMO-RL"]["message"]


def test_a_home_mount_is_a_warning(dry, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    profile = GOOD.replace("mounts = [", f'mounts = ["{home}:/h", ')
    _, findings, _ = dry(profile, extra_env={"HOME": str(home)})
    assert "W-REMOTE-HOME-MOUNT" in findings


def test_the_partitions_gres_must_match_gpus_per_node(dry, slurm):  # noqa: F811
    _, findings, _ = dry(GOOD + 'partition = "debug"\n', "cluster.gpus_per_node=2",
                         extra_env={"SLURM_CONF": slurm["SLURM_CONF"]})  # fmt: skip
    assert "GRES gpu:1" in findings["E-REMOTE-GPUS"]["message"]


def test_an_input_seen_only_on_the_cluster_is_reported_unchecked(tmp_path):
    there = "/cluster/only/train.jsonl"
    ctx = PreflightContext(
        step_id="x", manifest=None, config={},
        inputs=[BoundArtifact("train", "preference_jsonl", "data.train.data_path", there),
                BoundArtifact("val", "preference_jsonl", "data.val.data_path", "/nowhere.jsonl")],
        remote=RemoteFacts("lab", None, "/shared/run",
                           exists={there: True, "/nowhere.jsonl": False}),
    )  # fmt: skip
    found = {f.code: f for f in remote_inputs(ctx)}
    assert (
        "python -m steps validate preference_jsonl /cluster/only/train.jsonl"
        in found["W-REMOTE-UNCHECKED"].fix
    )
    assert found["E-INPUT-MISSING"].key == "data.val.data_path"


def test_no_env_file_is_exit_2_with_the_places_tried(tmp_path, monkeypatch, capsys):
    env = clean_env(tmp_path, HOME=str(tmp_path / "home"))
    res = steps_cli(monkeypatch, capsys, "run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "x",
                    "--dry-run", cwd=tmp_path, env=env)  # fmt: skip
    assert res.returncode == 2 and "E-PROFILE no env.toml found" in res.stderr


def test_the_converters_megatron_bridge_is_probed_on_the_cluster(tmp_path, monkeypatch, capsys):
    stand_in_checkout(tmp_path / "RL")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "env.toml").write_text(
        "[lab]\n" + GOOD.replace("{root}", str(tmp_path)).replace("{repo}", str(REPO))
    )
    env = dry_run_env(tmp_path, WANDB_API_KEY="w" * 8, STEPS_OUTPUT=str(tmp_path / "out"))
    bridge = tmp_path / "bridge"

    def codes() -> set[str]:
        res = steps_cli(
            monkeypatch, capsys, "run", "convert/megatron_to_hf", "-c", "tiny", "--batch", "lab",
            "--dry-run", "--json", f"megatron_path={tmp_path}/ckpt",
            f"megatron_bridge.root={bridge}", cwd=tmp_path / "work", env=env,
        )  # fmt: skip
        return {f["code"] for f in json.loads(res.stdout)["findings"]}

    assert "E-MEGATRON-BRIDGE-NOT-FOUND" in codes()
    script = bridge / "scripts" / "conversion" / "run_conversion.py"
    script.parent.mkdir(parents=True)
    script.write_text("")
    assert "E-MEGATRON-BRIDGE-NOT-FOUND" not in codes()


def _found_above(tmp_path: Path, text: str = "") -> tuple[Path, Path]:
    """(env.toml two levels above the project folder, that folder); every folder 0755."""
    deep = tmp_path / "above" / "proj" / "sub"
    deep.mkdir(parents=True)
    for folder in (tmp_path, tmp_path / "above", deep.parent, deep):
        folder.chmod(0o755)
    found = write(tmp_path / "above" / "env.toml", text)
    found.chmod(0o644)
    return found, deep


def _refused(found: Path, cwd: Path) -> StepsError:
    with pytest.raises(StepsError) as err:
        find_env_file(None, {"HOME": str(cwd)}, cwd)
    assert err.value.exit_code == 2 and err.value.finding.path == str(found)
    assert f"--env-file {found}" in err.value.finding.fix
    return err.value


def test_an_env_toml_found_above_is_used_only_when_no_one_else_can_write_it(tmp_path):
    found, deep = _found_above(tmp_path)
    assert find_env_file(None, {"HOME": str(deep)}, deep) == found
    found.chmod(0o664)
    err = _refused(found, deep)
    assert f"not using {found} (found in a parent of {deep}): it is writable by group" in str(err)
    assert f"chmod go-w {found}" in err.finding.fix
    found.chmod(0o644)
    found.parent.chmod(0o757)
    err = _refused(found, deep)
    assert "its folder is writable by others" in err.finding.message
    assert f"chmod go-w {found.parent}" in err.finding.fix
    # Chosen by name, the same file is used: --env-file and $STEPS_ENV_FILE are your choice.
    assert find_env_file(str(found), {}, deep) == found
    assert find_env_file(None, {"STEPS_ENV_FILE": str(found)}, deep) == found


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_an_env_toml_found_above_that_another_user_owns_is_refused(tmp_path):
    found, deep = _found_above(tmp_path)
    os.chown(found, 4321, -1)
    err = _refused(found, deep)
    assert "is owned by uid 4321, not by you (uid 0)" in err.finding.message
    os.chown(found, 0, -1)
    os.chown(found.parent, 4321, -1)
    assert "its folder is owned by uid 4321" in _refused(found, deep).finding.message


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_planted_env_toml_runs_nothing_in_a_dry_run(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "proxy-command-ran"
    found, deep = _found_above(
        tmp_path,
        '[lab]\nexecutor = "slurm"\nhost = "login"\nremote_dir = "/x"\n'
        f'ssh_options = ["-o", "ProxyCommand=touch {marker}"]\n',
    )
    os.chown(found, 4321, -1)
    env = clean_env(tmp_path, HOME=str(deep))
    res = steps_cli(monkeypatch, capsys, "run", "data_prep/rl_prep", "-c", "tiny", "--batch",
                    "lab", "--dry-run", cwd=deep, env=env)  # fmt: skip
    assert res.returncode == 2 and f"E-PROFILE not using {found}" in res.stderr
    assert not marker.exists()


def test_the_env_file_used_is_printed_and_in_the_json(dry, tmp_path, monkeypatch, capsys):
    dry(GOOD)  # writes work/env.toml
    env = dry_run_env(tmp_path, WANDB_API_KEY="w" * 8, STEPS_OUTPUT=str(tmp_path / "out"))
    res = steps_cli(monkeypatch, capsys, "run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab",
                    "--dry-run", "--json", cwd=tmp_path / "work", env=env)  # fmt: skip
    used = tmp_path / "work" / "env.toml"
    assert f"profile [lab] from {used}" in res.stderr
    assert json.loads(res.stdout)["env_file"] == str(used)


@pytest.mark.parametrize(
    ("cluster_gpus", "expected"),
    [(0, "W-REMOTE-GPUS"), (1, "E-REMOTE-GPUS"), (4, None)],
)
def test_a_ray_cluster_without_gpus_warns_and_one_too_small_stops_the_run(cluster_gpus, expected):
    """0 GPUs on a Ray cluster may be an autoscaler's cluster: a warning; fewer than the config
    needs (2 nodes x 1 GPU) is an error; enough is silent."""
    from preflight_fixtures import manifest

    from runners.launch.profiles.env_toml import RayProfile
    from runners.preflight.remote import remote_ray

    ctx = PreflightContext(
        step_id="rl/test/dpo", manifest=manifest("dpo"), config={
            "cluster": {"num_nodes": 2, "gpus_per_node": 1}},
        remote=RemoteFacts("ray", RayProfile(executor="ray", address="http://127.0.0.1:8265"),
                           "/shared/run", cluster_gpus=cluster_gpus),
    )  # fmt: skip
    found = {f.code: f for f in remote_ray(ctx) if f.code.endswith("REMOTE-GPUS")}
    assert list(found) == ([expected] if expected else [])
    if expected == "W-REMOTE-GPUS":
        assert not found[expected].is_error and "ray status" in found[expected].fix
    if expected == "E-REMOTE-GPUS":
        assert found[expected].is_error and "needs 2 GPUs" in found[expected].message
