"""A Nemotron user's env.toml works as it is: nemo-run's keys are read as ours, `[wandb]` stays
W&B's, and every problem a profile has is reported in one run (issue 31, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cluster_fixtures import dry_run_env, stand_in_checkout
from run_fixtures import steps_cli

from catalog.errors import StepsError
from runners.launch.profiles.env_toml import load_profile
from runners.run import wandb_settings

NEMOTRON = """[wandb]
project = "nano3-rl"
entity = "my-team"

[slurm_base]
executor = "slurm"
account = "my_account"
partition = "batch"
run_partition = "interactive"
batch_partition = "batch_long"
tunnel = "ssh"
host = "login.cluster.example.com"
user = "${oc.env:USER}"
identity = "~/.ssh/id_ed25519"
remote_job_dir = "{root}/shared"
time = "04:00:00"
nodes = 1
ntasks_per_node = 8
gpus_per_node = 8
cpus_per_task = 16
mem = "0"
exclusive = true
mounts = ["{root}:{root}"]
startup_commands = ["source /etc/profile", "module load cuda"]
env_vars = { HF_HOME = "{root}/hf", HF_TOKEN = "${oc.env:HF_TOKEN}", LOG = "${oc.env:NOPE,info}" }

[slurm_rl_nemo_rl_rlvr]
extends = "slurm_base"
container_image = "nvcr.io/nvidia/nemo-rl:v0.6.0"
nodes = 1
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "env.toml"
    path.write_text(text.replace("{root}", str(tmp_path)), encoding="utf-8")
    return path


def test_nemo_runs_keys_map_onto_ours_with_their_meaning(tmp_path):
    f = write(tmp_path, NEMOTRON)
    env = {"USER": "me", "HF_TOKEN": "hf_" + "x" * 20, "HOME": str(tmp_path)}
    p = load_profile(f, "slurm_rl_nemo_rl_rlvr", env, "batch")
    assert p.host == "me@login.cluster.example.com"
    assert p.ssh_options == ["-i", str(Path("~/.ssh/id_ed25519").expanduser())]
    assert p.partition == "batch_long" and p.account == "my_account"
    assert load_profile(f, "slurm_base", env, "run").partition == "interactive"
    assert p.remote_dir == f"{tmp_path}/shared" and p.gpus_per_node == 8
    assert p.sbatch_args == ["--cpus-per-task=16", "--mem=0", "--exclusive"]
    assert p.setup_command == "source /etc/profile\nmodule load cuda"
    assert p.env == {"HF_HOME": f"{tmp_path}/hf", "LOG": "info"}
    assert p.secrets == ["HF_TOKEN"]  # forwarded by name: the value is in no file
    assert "hf_" not in repr(p)


def test_the_wandb_table_is_w_and_b_settings_not_a_profile(tmp_path):
    f = write(tmp_path, NEMOTRON)
    with pytest.raises(StepsError) as err:
        load_profile(f, "wandb", {"USER": "me"})
    assert "not a profile" in err.value.finding.message
    assert "wandb" not in err.value.finding.fix and "slurm_base" in err.value.finding.fix
    wb = wandb_settings({}, str(f), {}, tmp_path)
    assert (wb.project, wb.entity) == ("nano3-rl", "my-team")


def test_a_secret_with_its_value_in_env_vars_is_refused_at_its_line(tmp_path):
    f = write(tmp_path, '[a]\nexecutor = "slurm"\nremote_dir = "/x"\n'
                        'env_vars = { WANDB_API_KEY = "abcd1234abcd" }\n')  # fmt: skip
    with pytest.raises(StepsError) as err:
        load_profile(f, "a", {})
    finding = err.value.finding
    assert finding.line == 4 and 'secrets = ["WANDB_API_KEY"]' in finding.fix
    assert "abcd1234abcd" not in finding.render()


def test_nemotron_s_generated_optional_secret_is_forwarded_when_set_and_never_written(tmp_path):
    """Nemotron's env_toml slurm.yaml writes `HF_TOKEN = "${oc.env:HF_TOKEN,''}"`: an optional
    secret (empty when unset), forwarded by name when set here, never a value in a file."""
    f = write(tmp_path, '[a]\nexecutor = "slurm"\nremote_dir = "/x"\nenv_vars = { '
                        "HF_TOKEN = \"${oc.env:HF_TOKEN,''}\", "
                        "WANDB_API_KEY = \"${oc.env:WANDB_API_KEY,''}\" }\n")  # fmt: skip
    profile = load_profile(f, "a", {"HF_TOKEN": "hf_abc123secret"})
    assert profile.secrets == ["HF_TOKEN"]
    assert "HF_TOKEN" not in profile.env and "WANDB_API_KEY" not in profile.env
    assert "hf_abc123secret" not in json.dumps(profile.model_dump())
    with pytest.raises(StepsError):  # a default that is a value stays refused
        load_profile(
            write(
                tmp_path,
                '[a]\nexecutor = "slurm"\nremote_dir = "/x"\nenv_vars = '
                '{ HF_TOKEN = "${oc.env:HF_TOKEN,hf_x}" }\n',
            ),
            "a",
            {},
        )


def test_five_problems_in_a_profile_are_five_findings_in_one_run(tmp_path):
    f = write(
        tmp_path,
        '[a]\nexecutor = "slurm"\n'  # no remote_dir: reported at the header, line 1
        "ntasks_per_node = 3\n"  # 3
        'tunnel = "kubernetes"\n'  # 4
        'env_vars = { HF_TOKEN = "hf_abcdefgh" }\n'  # 5
        'time = "soon"\n',  # 6
    )
    with pytest.raises(StepsError) as err:
        load_profile(f, "a", {}, "batch")
    text = err.value.finding.render()
    assert "has 5 problems" in text and err.value.exit_code == 2
    for line, needle in ((3, "ntasks_per_node = 3"), (4, "tunnel = 'kubernetes'"),
                         (5, "HF_TOKEN"), (6, "'soon' is not a Slurm time"),
                         (1, "needs `remote_dir`")):  # fmt: skip
        assert any(f"env.toml:{line}: E-PROFILE" in t and needle in t for t in text.splitlines())
    assert "remote_job_dir" in text and "hf_abcdefgh" not in text


def test_an_unset_oc_env_without_a_default_is_a_finding_naming_the_variable(tmp_path):
    f = write(tmp_path, '[a]\nexecutor = "slurm"\nremote_dir = "${oc.env:SCRATCH}/steps"\n')
    with pytest.raises(StepsError) as err:
        load_profile(f, "a", {})
    assert err.value.finding.line == 3 and "$SCRATCH is not set" in err.value.finding.message
    assert load_profile(f, "a", {"SCRATCH": "/scratch"}).remote_dir == "/scratch/steps"


def test_a_nemotron_env_toml_goes_through_the_rlvr_dry_run_with_no_edit_but_the_host(
    tmp_path, monkeypatch, capsys
):
    """`--batch` of an RL profile that extends slurm_base, the host line removed (submit from
    this machine) and nothing else edited: no key of the file is refused; the dry run reaches
    the remote rules, whose one finding is that steps needs the cluster's NeMo-RL checkout.
    With it named, the submission carries the mapped partition, account and sbatch flags."""
    stand_in_checkout(tmp_path / "RL")
    text = NEMOTRON.replace('host = "login.cluster.example.com"\n', "")
    (tmp_path / "shared").mkdir()
    token = "hf_" + "y" * 20
    env = dry_run_env(tmp_path, USER="me", HF_TOKEN=token, STEPS_OUTPUT=str(tmp_path / "out"))

    def dry(text: str) -> tuple[dict, str]:
        f = write(tmp_path, text)
        res = steps_cli(
            monkeypatch, capsys, "run", "rl/nemo_rl/rlvr", "-c", "tiny", "--batch",
            "slurm_rl_nemo_rl_rlvr", "--env-file", str(f), "--dry-run", "--json",
            cwd=tmp_path, env=env,
        )  # fmt: skip
        return json.loads(res.stdout), res.stdout + res.stderr

    doc, _ = dry(text)
    refused = [x for x in doc["findings"] if x["code"] == "E-PROFILE"]
    assert [x["message"] for x in refused] == [
        "profile [slurm_rl_nemo_rl_rlvr] has no nemo_rl_dir: the cluster's NeMo-RL checkout "
        "is needed to run a NeMo-RL step"
    ]
    doc, out = dry(text + f'nemo_rl_dir = "{tmp_path}/RL"\n')
    assert "E-PROFILE" not in [x["code"] for x in doc["findings"]], doc["findings"]
    env["NEMO_RL_HOME"] = str(tmp_path / "RL")  # the checkout here, at the same path there
    assert "E-PROFILE" not in [x["code"] for x in dry(text)[0]["findings"]]
    env.pop("NEMO_RL_HOME")
    sbatch = doc["launch"]["sbatch"]
    assert "--partition=batch_long" in sbatch and "--account=my_account" in sbatch
    assert "--exclusive" in sbatch, sbatch
    assert "HF_TOKEN" in str(doc["launch"]), doc["launch"]
    assert token not in out
