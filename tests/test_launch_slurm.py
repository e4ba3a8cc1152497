"""`run --batch/--run PROFILE` on a real one-node Slurm, and the job commands that follow a job.

NeMo-RL is a stand-in checkout (tests/cluster: ray.sub per its documented contract, a recording
example script); everything else is real: slurmctld/slurmd, sbatch/scontrol/scancel, bash, ssh.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401
    CLUSTER,
    NO_JUDGE,
    PYTHON,
    bare_python_bin,
    container_site,
    left_the_queue,
    log_says,
    slurm,
    sshd,
    stand_in_checkout,
    wait_for,
)
from run_fixtures import REPO, clean_env, steps_cli

SECRET = "wandb0123456789abcdef0123456789abcdef0123"


def write_env_toml(
    work: Path, root: Path, extra: str = "", container: bool = True, **env: str
) -> Path:
    """[lab]: the stand-in checkout, the shared dir and mounts covering tmp and the repo."""
    image = 'container_image = "nvcr.io/nvidia/nemo-rl:v0.7.0"' if container else ""
    env = {
        "FAKE_NEMO_RL_RECORD": f"{root}/record.json",
        "FAKE_EXPECT_SECRETS": "WANDB_API_KEY",
        **env,
    }
    plain = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    path = work / "env.toml"
    path.write_text(
        f"""[lab]
executor = "slurm"
partition = "debug"
time = "00:05:00"
gpus_per_node = 1
{image}
mounts = ["{root}:{root}", "{REPO}:{REPO}"]
remote_dir = "{root}/shared"
nemo_rl_dir = "{root}/RL"
launcher = "{PYTHON}"
secrets = ["WANDB_API_KEY"]
env = {{ {plain} }}
{extra}""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def lab(tmp_path, slurm, monkeypatch, capsys):  # noqa: F811
    """A workspace: stand-in NeMo-RL, shared remote_dir, a work dir with env.toml; `cli(...)`."""
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    write_env_toml(work, tmp_path)
    env = clean_env(
        tmp_path,
        SLURM_CONF=slurm["SLURM_CONF"],
        WANDB_API_KEY=SECRET,
        STEPS_OUTPUT=str(tmp_path / "out"),
        STEPS_POLL_SECONDS="1",  # a followed job is asked about each second, as a user would
    )
    job_env(env, tmp_path)

    def cli(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=work, env=env)

    return tmp_path, work, env, cli


def job_env(env: dict[str, str], root: Path) -> dict[str, str]:
    """What a user's cluster gives a job: a `python3` with nothing of ours and no pydantic first
    on PATH (jobs inherit the submitting PATH), pyxis (the stand-in) whose container steps get
    the image's packages, and no PYTHONPATH leading to this checkout."""
    bare = bare_python_bin(root / "bare-bin")
    env["PATH"] = f"{bare}:{CLUSTER / 'pyxis'}:{env['PATH']}"
    env["PYXIS_STAND_IN_SITE"] = container_site()
    env.pop("PYTHONPATH", None)
    env.update(NO_JUDGE)
    return env


def record_of(root: Path) -> dict:
    return json.loads((root / "record.json").read_text())


def test_batch_submits_ray_sub_from_the_checkout_and_status_logs_follow(lab):
    root, work, env, cli = lab
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    assert res.returncode == 0, res.stderr
    job_id, log = res.stdout.split()
    run_dir = next((work / "runs" / "rl" / "nemo_rl" / "dpo").iterdir())
    job_dir = root / "shared" / "rl" / "nemo_rl" / "dpo" / run_dir.name
    assert log == f"{job_dir}/{job_id}-logs/ray-driver.log"
    left_the_queue(env, job_id)
    wait_for(lambda: cli("status", "last", "--json").stdout.count('"COMPLETED"'), timeout=90)
    status = json.loads(cli("status", job_id, "--json").stdout)
    assert status["job"]["exit_code"] == 0 and status["run_dir"] == str(run_dir)
    rec = record_of(root)
    # What ran is the validated config from the run dir, from the checkout root (RL#1550).
    assert rec["argv"] == ["examples/run_dpo.py", "--config", f"{job_dir}/config.yaml"]
    assert rec["cwd"] == str(root / "RL")
    assert rec["config_text"] == (run_dir / "config.yaml").read_text()
    assert rec["secrets_present"] == {"WANDB_API_KEY": True}
    logs = cli("logs", str(run_dir))
    assert "driver started: run_dpo.py" in logs.stdout and "driver done" in logs.stdout
    head = (job_dir / f"{job_id}-logs" / "ray-head.log").read_text()
    assert "nodes=1 gpus_per_node=1 container=nvcr.io/nvidia/nemo-rl:v0.7.0" in head
    listing = cli("jobs", "--json")
    jobs = json.loads(listing.stdout)["jobs"]
    assert [j["job_id"] for j in jobs][:1] == [job_id] and jobs[0]["state"] == "COMPLETED"
    saved = json.loads((run_dir / "run.json").read_text())["job"]
    assert saved["state"] == "COMPLETED" and saved["exit_code"] == 0 and saved["profile"] == "lab"


def test_run_attached_streams_the_driver_log_and_returns_the_jobs_exit_code(lab):
    root, work, _env, cli = lab
    ok = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab")
    assert ok.returncode == 0, ok.stderr
    assert "driver started" in ok.stdout and "driver done" in ok.stdout
    write_env_toml(work, root, FAKE_EXIT="3")
    failed = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab")
    assert failed.returncode == 3, failed.stderr
    assert "ended: FAILED (exit code 3)" in failed.stderr
    assert json.loads(cli("status", "last", "--json").stdout)["job"]["state"] == "FAILED"


def test_cancel_stops_a_running_job(lab):
    root, work, env, cli = lab
    write_env_toml(work, root, FAKE_TICKS="300", FAKE_TICK_SECONDS="0.2")
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--json")
    doc = json.loads(res.stdout)  # one JSON document: the plan, the launch and the job
    job_id = doc["job"]["job_id"]
    assert doc["ok"] and doc["launch"]["executor"] == "slurm" and doc["run_dir"]
    wait_for(lambda: log_says(doc["job"]["log_path"], "tick 1"), timeout=90)
    wait_for(lambda: "tick 1" in cli("logs", job_id).stdout, timeout=90)
    res = cli("cancel", "last")
    assert res.returncode == 0 and job_id in res.stdout
    left_the_queue(env, job_id, timeout=60)
    wait_for(lambda: '"CANCELLED"' in cli("status", job_id, "--json").stdout, timeout=60)


def test_ctrl_c_detaches_and_the_job_keeps_running(lab):
    root, work, env, cli = lab
    write_env_toml(work, root, FAKE_TICKS="300", FAKE_TICK_SECONDS="0.2")
    env = {**env, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "steps", "run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab"],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("tick 1"):
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "detached" in err and "python -m steps cancel" in err and "Traceback" not in err
    assert json.loads(cli("status", "last", "--json").stdout)["job"]["state"] == "RUNNING"
    cli("cancel", "last")


def test_a_planted_secret_is_found_nowhere(lab, slurm):  # noqa: F811
    root, work, _env, cli = lab
    literal = "literal-pass-0123456789"  # a secret typed into an override reaches the job too
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab", f"++logger.password={literal}")
    assert res.returncode == 0, res.stderr
    rec = record_of(root)
    assert rec["secrets_present"] == {"WANDB_API_KEY": True}
    assert "password: ${oc.env:STEPS_SECRET_LOGGER_PASSWORD}" in rec["config_text"]
    assert "STEPS_SECRET_LOGGER_PASSWORD" in rec["env_names"]
    dry = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--dry-run", "--json")
    assert "WANDB_API_KEY" in dry.stdout
    for secret in (SECRET, literal):
        assert secret not in res.stdout + res.stderr + dry.stdout + dry.stderr
    lab_dir = Path(slurm["lab"])
    searched = 0
    # The run dirs, the job's logs (the stand-in ray.sub dumps its environment into ray-head.log,
    # as NeMo-RL's does) and Slurm's own state, where slurmctld keeps each job's submit env.
    for folder in (work, root / "shared", lab_dir):
        for path in folder.rglob("*"):
            if path.is_file():
                searched += 1
                data = path.read_bytes()
                assert SECRET.encode() not in data and literal.encode() not in data, path
    assert searched > 10 and next((lab_dir / "state").rglob("environment"))


def test_rl_prep_runs_our_staged_code_in_the_container_with_nothing_of_ours_installed(lab):
    root, _work, env, cli = lab
    # The job's python3 has neither steps nor pydantic; the container (the pyxis stand-in) has
    # NeMo-RL's packages; the profile names no steps_launcher.
    res = cli("run", "data_prep/rl_prep", "-c", "tiny", "--batch", "lab")
    assert res.returncode == 0, res.stdout + res.stderr
    left_the_queue(env, res.stdout.split()[0])
    wait_for(lambda: cli("status", "last", "--json").stdout.count('"COMPLETED"'), timeout=90)
    manifest = json.loads((root / "out" / "rl_prep" / "tiny" / "manifest.json").read_text())
    assert sum(s["rows"] for s in manifest["splits"]["train"]["shards"]) > 0
    status = json.loads(cli("status", "last", "--json").stdout)
    job = status["job"]
    assert job["log_path"].endswith(f"slurm-{job['job_id']}.out")
    job_dir = job["job_dir"]
    script = Path(job_dir, "job.sbatch").read_text()
    assert f" python3 {job_dir}/code run data_prep/rl_prep -c {job_dir}/config.yaml" in script
    assert "--container-image=nvcr.io/nvidia/nemo-rl:v0.7.0" in script
    code = Path(status["run_dir"], "code")  # as staged: sources and data, no caches, no tests
    assert (code / "__main__.py").is_file() and (code / "catalog" / "codes.toml").is_file()
    assert not list(code.rglob("__pycache__")) and not (code / "tests").exists()


def test_rl_prep_writes_the_same_under_each_omegaconf_release_a_container_may_have(lab):
    from omegaconf_sites import FETCH, RELEASES, site

    root, _work, env, cli = lab
    sites = {release: site(release) for release in RELEASES}
    if None in sites.values():
        pytest.skip(f"no omegaconf wheels for the lab: {FETCH}")
    written = {}
    for release, folder in sites.items():  # the container's site-packages: this release first
        env["PYXIS_STAND_IN_SITE"] = f"{folder}:{container_site()}"
        out = root / f"out-{release}"
        res = cli("run", "data_prep/rl_prep", "-c", "tiny", f"output_dir={out}", "--batch", "lab")
        assert res.returncode == 0, res.stdout + res.stderr
        left_the_queue(env, res.stdout.split()[0])
        wait_for(lambda: json.loads(cli("status", "last", "--json").stdout)["job"]["state"]
                 in ("COMPLETED", "FAILED"), timeout=90)  # fmt: skip
        job = json.loads(cli("status", "last", "--json").stdout)["job"]
        assert job["exit_code"] == 0, Path(job["log_path"]).read_text()
        manifest = json.loads((out / "manifest.json").read_text())
        shards = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("shard_*.jsonl")}
        written[release] = (manifest["splits"], manifest["options"], shards)
    assert written["2.2.3"] == written["2.3.0"] == written["2.4.0"]
    assert written["2.4.0"][2]  # shards were written
    old = root / "old-site" / "omegaconf-2.1.2.dist-info"  # a release outside the range
    old.mkdir(parents=True)
    (old / "METADATA").write_text("Metadata-Version: 2.1\nName: omegaconf\nVersion: 2.1.2\n")
    env["PYXIS_STAND_IN_SITE"] = f"{old.parent}:{container_site()}"
    res = cli("run", "data_prep/rl_prep", "-c", "tiny", f"output_dir={root}/out-old", "--batch",
              "lab")  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    left_the_queue(env, res.stdout.split()[0])
    wait_for(lambda: json.loads(cli("status", "last", "--json").stdout)["job"]["state"]
             in ("COMPLETED", "FAILED"), timeout=90)  # fmt: skip
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    log = Path(job["log_path"]).read_text()
    assert job["exit_code"] == 2 and "Traceback" not in log, log
    assert (
        "omegaconf 2.1.2 is not supported: steps staged with this job needs omegaconf>=2.2,<2.5"
        in log
    )


def test_a_cpu_only_job_asks_for_no_gpu(lab):
    _root, _work, _env, cli = lab
    dry = cli("run", "data_prep/rl_prep", "-c", "tiny", "--batch", "lab", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert not [a for a in json.loads(dry.stdout)["launch"]["sbatch"] if "gres" in a]
    dpo = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--dry-run", "--json")
    assert "--gres=gpu:1" in json.loads(dpo.stdout)["launch"]["sbatch"]


def test_force_and_sample_reach_an_rl_prep_job(lab):
    root, _work, _env, cli = lab
    argv = ("run", "data_prep/rl_prep", "-c", "tiny", "--sample", "2", "--run", "lab")
    first = cli(*argv)
    assert first.returncode == 0, first.stdout + first.stderr
    manifest = json.loads((root / "out" / "rl_prep" / "tiny" / "manifest.json").read_text())
    assert manifest["options"]["sample"] == 2
    again = cli(*argv, "--force")  # the same run key: only --force makes the job prepare again
    assert again.returncode == 0, again.stdout + again.stderr
    assert "rl_prep: wrote" in again.stdout + again.stderr, again.stdout + again.stderr


def test_submit_over_ssh_stages_the_run_dir_with_rsync(lab, sshd):  # noqa: F811
    root, work, _env, cli = lab
    host, options = sshd
    opts = ", ".join(f'"{o}"' for o in options)
    write_env_toml(work, root, extra=f'host = "{host}"\nssh_options = [{opts}]\n')
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab")
    assert res.returncode == 0, res.stderr
    assert "driver done" in res.stdout
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    assert job["host"] == host and job["state"] == "COMPLETED"
    assert Path(job["job_dir"], "config.yaml").is_file()  # staged by rsync over ssh
    assert record_of(root)["secrets_present"] == {"WANDB_API_KEY": True}


def test_over_ssh_our_code_goes_once_under_remote_dir_and_each_job_dir_links_it(lab, sshd):  # noqa: F811
    root, work, _env, cli = lab
    host, options = sshd
    opts = ", ".join(f'"{o}"' for o in options)
    write_env_toml(work, root, extra=f'host = "{host}"\nssh_options = [{opts}]\n')
    shared = root / "shared" / "_code"
    stale, fresh = shared / ".0123.99.partial", shared / ".4567.98.partial"  # killed copies
    for partial in (stale, fresh):
        (partial / "steps").mkdir(parents=True)
    os.utime(stale, (time.time() - 7 * 3600,) * 2)
    jobs = []
    for _ in range(2):
        res = cli("run", "data_prep/rl_prep", "-c", "tiny", "--batch", "lab", "--force")
        assert res.returncode == 0, res.stdout + res.stderr
        jobs.append(json.loads(cli("status", "last", "--json").stdout)["job"])
    links = [Path(job["job_dir"], "code") for job in jobs]
    assert jobs[0]["job_dir"] != jobs[1]["job_dir"] and all(p.is_symlink() for p in links)
    copies = {c.resolve() for c in shared.iterdir() if c != fresh}
    assert {p.resolve() for p in links} == copies  # one, whole
    assert fresh.is_dir() and not stale.exists()  # a leftover older than 6 h is swept
    assert (links[0] / "runners" / "chain" / "segment_program.py").is_file()


def test_an_unreachable_host_is_one_clear_error_exit_2(lab):
    root, work, _env, cli = lab
    port = "-p 1"
    write_env_toml(
        work, root, extra=f'host = "root@127.0.0.1"\nssh_options = ["{port.split()[0]}", "1"]\n'
    )
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--dry-run")
    assert res.returncode == 2
    assert "E-REMOTE-HOST cannot reach root@127.0.0.1" in res.stdout + res.stderr
    assert "Traceback" not in res.stderr


def test_a_submit_sbatch_refuses_leaves_no_run_dir_here_or_under_remote_dir(lab):
    root, work, _env, cli = lab
    # Only the controller knows its features: the dry run passes, sbatch refuses.
    write_env_toml(work, root, extra='sbatch_args = ["--constraint=nosuchfeature"]\n')
    res = cli("run", "data_prep/rl_prep", "-c", "tiny", "--batch", "lab")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "E-SUBMIT sbatch on this machine refused the job: sbatch: error:" in res.stderr
    assert not (work / "runs").exists()  # README: a refused submit writes no run dir
    # nor its secrets; the one copy of our code shared by every job of this version stays
    staged = [p for p in (root / "shared").rglob("*") if p.is_file() and "_code" not in p.parts]
    assert staged == []


def test_an_output_dir_that_is_a_file_is_refused_by_the_dry_run_as_by_the_submit(lab):
    root, work, _env, cli = lab
    blocker = root / "a-file"
    blocker.write_text("not a folder\n")
    argv = ["run", "data_prep/rl_prep", "-c", "tiny", f"output_dir={blocker}", "--batch", "lab"]
    dry, submit = cli(*argv, "--dry-run", "--json"), cli(*argv, "--json")
    found = [
        {f["code"]: f for f in json.loads(r.stdout)["findings"]}["E-OUTPUT-DIR"]
        for r in (dry, submit)
    ]
    assert dry.returncode == submit.returncode == 1 and found[0] == found[1]
    assert "exists and is a file" in found[0]["message"]
    assert not (work / "runs").exists() and blocker.read_text() == "not a folder\n"
