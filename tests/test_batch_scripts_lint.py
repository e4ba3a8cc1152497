"""Where bash stays (what sbatch, ray.sub and `bash -s` run), every script we generate is linted:
`bash -n`, and shellcheck when it is installed (Debian's `shellcheck`; .ci/run installs it).

The scripts are rendered for every runner kind and for a bare and a full profile (container,
mounts with a space, setup_command, secrets, a run dir and arguments with spaces and quotes).
Left out: SC1091 (the sourced secrets file exists only when the job runs) and SC2016 (a `$` in
a value shlex quoted stays literal on purpose).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from runners.chain.segment_program import CLEAN_ENV
from runners.chain.submit import segment_script
from runners.kinds import kind_for, known
from runners.launch.profiles.env_toml import SlurmProfile
from runners.launch.request import LaunchRequest
from runners.launch.slurm.backend import SlurmBackend
from runners.run.judge import VERDICT

PROFILES = {
    "bare": {},
    "full": {
        "container_image": "nvcr.io/nvidia/nemo-rl:v0.6.0",
        "mounts": ["/lustre:/lustre", "/data sets:/data:ro"],
        "setup_command": "module load cuda; export NCCL_DEBUG=WARN",
        "steps_launcher": "/opt/venv/bin/python -m steps",
        "account": "acct",
        "partition": "batch",
        "gpus_per_node": 8,
    },
}
ENV = {"PATH": "/usr/bin:/bin", "HF_TOKEN": "hf_0123456789abcdef", "my.token": "x1234"}


def _scripts(kind: str, variant: str, root: Path) -> dict[str, str]:
    """Every bash text a run of `kind` on this profile generates, by name."""
    profile = SlurmProfile(executor="slurm", remote_dir="/shared/runs", **PROFILES[variant])
    ray_sub = kind_for(kind).ray_program
    secrets = ["WANDB_API_KEY"] if variant == "full" else []
    job_dir = "/shared/runs/rl/x/run 1"
    req = LaunchRequest(
        step_id="rl/x", runner=kind, run_dir=root, job_dir=job_dir,
        command=["python3", "-m", "steps", "a b", "it's", "$HOME"], cwd="/opt/Nemo RL",
        env={"NOTE": "x y"}, secret_names=secrets, uses_ray_sub=ray_sub,
    )  # fmt: skip
    backend = SlurmBackend("lab", profile, env=ENV)
    values = {n: "v'1 $x" for n in secrets}
    out = {"submit (bash -s)": backend.submit_script(req, "steps-x-run", values)}
    if ray_sub:
        command = backend.job_env(req)["COMMAND"]
        out["ray.sub COMMAND"] = f"#!/bin/bash\n{command}\n"
        out["chain.sbatch"] = segment_script(job_dir, "/opt/Nemo RL/ray.sub")
        out["chain's sbatch environment"] = f"#!/bin/bash\n{CLEAN_ENV}"
        judge = replace(req, command=["bash", "-c", VERDICT, "judge", "python3", "it's"],
                        uses_ray_sub=False, secret_names=[], name_suffix="-judge")  # fmt: skip
        out["job-judge.sbatch"] = backend._batch_script(judge)  # the upstream judge's job
        out["the judge's verdict (bash -c)"] = f"#!/bin/bash\n{VERDICT}\n"
    else:
        out["job.sbatch"] = backend._batch_script(req)
    return out


CASES = [(kind, variant) for kind in known() for variant in PROFILES]


def _written(tmp_path: Path, kind: str, variant: str) -> list[Path]:
    paths = []
    for i, text in enumerate(_scripts(kind, variant, tmp_path).values()):
        path = tmp_path / f"{kind}-{variant}-{i}.sh"
        path.write_text(text if text.startswith("#!") else "#!/bin/bash\n" + text)
        paths.append(path)
    return paths


@pytest.mark.parametrize(("kind", "variant"), CASES)
def test_every_generated_script_parses_under_bash_n(tmp_path, kind, variant):
    for path in _written(tmp_path, kind, variant):
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{path.name}: {proc.stderr}\n{path.read_text()}"


@pytest.mark.skipif(
    shutil.which("shellcheck") is None, reason="shellcheck is not installed (apt: shellcheck)"
)
@pytest.mark.parametrize(("kind", "variant"), CASES)
def test_every_generated_script_is_clean_under_shellcheck(tmp_path, kind, variant):
    paths = [str(p) for p in _written(tmp_path, kind, variant)]
    argv = ["shellcheck", "--shell=bash", "--severity=style", "--exclude=SC1091,SC2016", *paths]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_submit_script_names_the_variables_it_drops_and_tests_no_name_itself(tmp_path):
    """The secret-name test runs once, in Python: the script holds a literal list (env -u)."""
    text = _scripts("rl_prep", "full", tmp_path)["submit (bash -s)"]
    assert "exec env -u HF_TOKEN -u my.token sbatch " in text
    assert "compgen" not in text and "BASH_REMATCH" not in text
    assert ENV["HF_TOKEN"] not in text
