"""`pipeline run FILE --batch PROFILE` on a real one-node Slurm: stages as dependent jobs.

Everything is real except NeMo-RL: slurmctld/slurmd, sbatch `--dependency=afterok` and
`--kill-on-invalid-dep`, bash, the pyxis stand-in. The three stages are rl_prep (our staged code,
run in the "container" by a `python3` that has nothing of ours: a CPU profile, no GPU), RLVR (the
stand-in NeMo-RL's driver through ray.sub, on the GPU profile) and convert/dcp_to_hf (a
stand-in of NeMo-RL's converter script in the checkout). `pipeline run` returns once every stage
is queued; the test then waits for the jobs through `status`. The first pipeline is queued by a
`python -m steps` child that has exited before its stages run; the other CLI calls run
`steps.cli.main` in this process (a child's interpreter start and imports cost ~1 s of CPU each,
and what they check is not the process).
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401
    CLUSTER,
    NO_JUDGE,
    PYTHON,
    bare_python_bin,
    container_site,
    slurm,
    stand_in_checkout,
    wait_for,
)
from run_fixtures import REPO, CliResult, clean_env, steps_here

pytestmark = pytest.mark.slow
CONVERTER = "examples/converters/convert_dcp_to_hf.py"
STAND_IN_CONVERTER = """import argparse, json, os
p = argparse.ArgumentParser()
for flag in ("--config", "--dcp-ckpt-path", "--hf-ckpt-path"):
    p.add_argument(flag)
a = p.parse_args()
os.makedirs(a.hf_ckpt_path)
with open(os.path.join(a.hf_ckpt_path, "config.json"), "w") as fh:
    json.dump({"converted_from": a.dcp_ckpt_path}, fh)
for name in ("pytorch_model.bin", "tokenizer.json"):
    open(os.path.join(a.hf_ckpt_path, name), "w").write("{}")
print("converted", a.dcp_ckpt_path, flush=True)
"""
GYM_SCRIPT = "examples/nemo_gym/run_grpo_nemo_gym.py"
STAND_IN_TRAINER = """import argparse, json, os, shutil, sys
import yaml
p = argparse.ArgumentParser()
p.add_argument("--config")
a, _ = p.parse_known_args()
print("driver started:", os.path.basename(sys.argv[0]), flush=True)
if os.environ.get("FAKE_EXIT", "0") != "0":
    sys.exit(int(os.environ["FAKE_EXIT"]))
config = yaml.safe_load(open(a.config))
step = os.path.join(config["checkpointing"]["checkpoint_dir"], "step_1")
os.makedirs(os.path.join(step, "policy", "weights"))
shutil.copy(a.config, os.path.join(step, "config.yaml"))
for name in (".metadata", "__0_0.distcp"):
    open(os.path.join(step, "policy", "weights", name), "wb").write(b"x")
info = {"total_steps": 1, "epoch": 0, "step": 1}
json.dump(info, open(os.path.join(step, "training_info.json"), "w"))
print("driver done", flush=True)
"""
PIPELINE = """name: lab3
inputs:
  blend: {{type: data_blend, path: {blend}}}
  policy: {{type: hf_checkpoint, path: Qwen/Qwen3-0.6B}}
stages:
  - id: prep
    step: data_prep/rl_prep
    config: tiny
    profile: cpu
    inputs: {{blend: inputs.blend}}
  - id: rlvr
    step: rl/nemo_rl/rlvr
    config: tiny_dtensor  # DTensor: a torch DCP checkpoint, for convert/dcp_to_hf
    overrides:  # the rows rl_prep writes are NeMo-Gym rows
      - env.should_use_nemo_gym=true
      - grpo.max_val_samples=null
      - "+env.nemo_gym.config_paths=[{gym_model},{gym_server}]"
    inputs: {{train: prep.data, validation: prep.data, policy: inputs.policy}}
  - id: convert
    step: convert/dcp_to_hf
    config: tiny
    inputs: {{checkpoint: rlvr.checkpoint}}
targets: [convert.hf]
"""

CHAIN_PIPELINE = """name: chained
stages:
  - id: dpo
    step: rl/nemo_rl/dpo
    config: tiny_dtensor
    until_done: true
    overrides: [dpo.max_num_steps=8, checkpointing.save_period=1]
  - id: convert
    step: convert/dcp_to_hf
    config: tiny
    inputs: {checkpoint: dpo.checkpoint}
"""


def profile(
    name: str, root: Path, gpu: bool, time: str = "00:05:00", hold: bool = False, **knobs: str
) -> str:
    env = {"FAKE_NEMO_RL_RECORD": f"{root}/record-{name}.json", **knobs}
    table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    return f"""[{name}]
executor = "slurm"
partition = "debug"
time = "{time}"
save_margin = "00:00:58"
container_image = "nvcr.io/nvidia/nemo-rl:v0.7.0"
mounts = ["{root}:{root}", "{REPO}:{REPO}"]
remote_dir = "{root}/shared"
nemo_rl_dir = "{root}/RL"
launcher = "{PYTHON}"
sbatch_args = ["--oversubscribe"{', "--hold"' if hold else ""}]
{"gpus_per_node = 1" if gpu else ""}
env = {{ {table} }}
"""


def make_lab(root: Path, slurm_conf: str) -> tuple[Path, dict[str, str]]:
    """root/work with env.toml ([cpu], [gpu], [gpu_fail]: its driver exits 1) and the pipeline
    file, the stand-in NeMo-RL with a trainer and a converter; (work dir, the environment that
    submits: the jobs inherit it). Also used by bench/bench_pipeline.py --cluster."""
    (stand_in_checkout(root / "RL") / CONVERTER).parent.mkdir(parents=True, exist_ok=True)
    (root / "RL" / CONVERTER).write_text(STAND_IN_CONVERTER, encoding="utf-8")
    (root / "RL" / GYM_SCRIPT).write_text(STAND_IN_TRAINER, encoding="utf-8")  # a DCP step_1
    work = root / "work"
    work.mkdir()
    (work / "env.toml").write_text(
        profile("cpu", root, gpu=False)
        + profile("gpu", root, gpu=True)
        + profile("gpu_fail", root, gpu=True, FAKE_EXIT="1")
        + profile("gpu_held", root, gpu=True, hold=True)  # queued held: never starts
        # a chain's segment may train for 2 s: its time limit (1 min) minus the save margin
        + profile("chain", root, gpu=True, time="00:01:00", FAKE_STEP_SECONDS="0.4"),
        encoding="utf-8",
    )
    blend = REPO / "steps" / "data_prep" / "rl_prep" / "data" / "blend_tiny.yaml"
    text = PIPELINE.format(
        blend=blend,
        gym_model="responses_api_models/vllm_model/configs/vllm_model_for_training.yaml",
        gym_server="resources_servers/math_with_judge/configs/math_with_judge.yaml",
    )
    (work / "lab3.yaml").write_text(text, encoding="utf-8")
    (work / "chain.yaml").write_text(CHAIN_PIPELINE, encoding="utf-8")
    env = clean_env(root, SLURM_CONF=slurm_conf, STEPS_OUTPUT=str(root / "out"), **NO_JUDGE)
    # What a user's cluster gives a job: a python3 with nothing of ours first on PATH (jobs
    # inherit the submitting PATH), the pyxis stand-in, no PYTHONPATH to this checkout.
    env["PATH"] = f"{bare_python_bin(root / 'bare-bin')}:{CLUSTER / 'pyxis'}:{env['PATH']}"
    env["PYXIS_STAND_IN_SITE"] = container_site()
    env.pop("PYTHONPATH", None)
    return work, env


@pytest.fixture(scope="module")
def code_copies(tmp_path_factory) -> Path:
    """One `remote_dir/_code` for the module's labs: a user's runs share the copy of our code
    under their remote_dir (and the bytecode its first job wrote there), so each test's first
    job does not copy and compile it again."""
    return tmp_path_factory.mktemp("code-copies")


@pytest.fixture
def lab(tmp_path, slurm, code_copies):  # noqa: F811
    """The lab's work dir; `steps(...)` runs the CLI there in this process, `steps.child(...)`
    in a child process."""
    work, env = make_lab(tmp_path, slurm["SLURM_CONF"])
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "_code").symlink_to(code_copies, target_is_directory=True)

    def steps(*argv: str) -> CliResult:
        return steps_here(*argv, cwd=work, env=env)

    def child(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([PYTHON, "-m", "steps", *argv], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    steps.env = env  # type: ignore[attr-defined]  # for squeue, as the jobs' submitter
    steps.child = child  # type: ignore[attr-defined]
    return tmp_path, work, steps


def pipeline_status(steps, pipeline_root: Path) -> dict:
    res = steps("status", str(pipeline_root), "--json")
    assert res.returncode in (0, 2), res.stdout + res.stderr
    return json.loads(res.stdout)


def ended(steps, pipeline_root: Path) -> dict:
    """The pipeline's status once it completed or failed. Waits on squeue (milliseconds a call)
    until none of its stages' jobs (a chain stage's gate too) is queued or running, then asks
    `status` (its remote probes) until it says so."""
    stages = json.loads((pipeline_root / "pipeline.json").read_text())["stages"].values()
    ids = [str(s[k]) for s in stages for k in ("job_id", "gate_job_id") if s.get(k)]
    squeue = ["squeue", "-h", "-t", "PD,R,CG,S,CF", "-o", "%i", "-j", ",".join(ids)]

    def left_the_queue() -> bool:
        out = subprocess.run(squeue, env=steps.env, capture_output=True, text=True)
        return out.returncode != 0 or not out.stdout.strip()  # ids Slurm forgot: gone

    got: dict = {}

    def done() -> bool:
        got.update(pipeline_status(steps, pipeline_root))
        return got["state"] in ("completed", "failed")

    if ids:
        wait_for(left_the_queue, timeout=240, step=0.5)
    wait_for(done, timeout=60, step=0.3)
    return got


def test_three_stage_pipeline_runs_to_the_end_as_dependent_jobs_after_the_command_returned(lab):
    root, work, steps = lab
    res = steps.child("pipeline", "run", "lab3.yaml", "--batch", "gpu")  # exited: nothing stays
    assert res.returncode == 0, res.stdout + res.stderr
    pipeline_root = work / "runs" / "pipelines" / "lab3"
    record = json.loads((pipeline_root / "pipeline.json").read_text())
    stages = record["stages"]
    assert list(stages) == ["prep", "rlvr", "convert"]
    assert [s["action"] for s in stages.values()] == ["submit"] * 3
    # Each stage waits for the one it reads from; prep asks for no GPU, RLVR for one.
    assert stages["rlvr"]["after"] == [stages["prep"]["job_id"]]
    assert stages["convert"]["after"] == [stages["rlvr"]["job_id"]]
    prep_job = Path(stages["prep"]["run_dir"], "run.json")
    assert json.loads(prep_job.read_text())["job"]["profile"] == "cpu"
    # Our code travelled once: every stage's job dir links the one copy under remote_dir.
    jobs = [json.loads(Path(s["run_dir"], "run.json").read_text())["job"] for s in stages.values()]
    assert all(Path(j["job_dir"], "code").is_symlink() for j in jobs)
    copies = {Path(j["job_dir"], "code").resolve() for j in jobs}
    assert len(copies) == 1 and copies.pop().parent == (root / "shared" / "_code").resolve()
    status = ended(steps, pipeline_root)
    assert status["state"] == "completed", status
    assert [s["status"] for s in status["stages"]] == ["completed"] * 3
    # The rows prep wrote reached the trainer: the file its config names, the split's shards
    # joined in the job (every row has its agent_ref: nothing to fill, the same bytes).
    data = pipeline_root / "prep" / "data"
    manifest = json.loads((data / "manifest.json").read_text())
    for port, split in (("train", "train"), ("validation", "val")):
        path = Path(job_config(stages["rlvr"])["data"][port]["data_path"])
        assert path.name == f"{port}.jsonl" and path.is_file(), path
        shards = manifest["splits"][split]["shards"]
        assert len(path.read_text().splitlines()) == sum(s["rows"] for s in shards) > 0
        assert path.read_bytes() == b"".join((data / s["path"]).read_bytes() for s in shards)
    # The converter got the latest complete step_N, though none existed when it was queued.
    hf = json.loads((pipeline_root / "convert" / "hf" / "config.json").read_text())
    step = pipeline_root / "rlvr" / "checkpoint" / "step_1"
    assert Path(hf["converted_from"]).resolve() == step / "policy" / "weights", hf
    # Nothing changed: no stage is queued again.
    again = steps("pipeline", "run", "lab3.yaml", "--batch", "gpu")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("up to date") == 3, again.stdout
    assert "0 of 3 stages queued" in again.stdout


def job_config(stage: dict) -> dict:
    """The config.yaml a stage's job ran with (its run dir as the job sees it)."""
    import yaml

    run = json.loads(Path(stage["run_dir"], "run.json").read_text())
    return yaml.safe_load(Path(run["job"]["job_dir"], "config.yaml").read_text())


def named_blend(work: Path, name: str) -> None:
    """The pipeline's blend given by artifact name; the blend file registered under it in the
    runs root's registry."""
    from runners.artifacts.registry import Output, Provenance, register
    from runners.digest import DigestMemo

    blend = REPO / "steps" / "data_prep" / "rl_prep" / "data" / "blend_tiny.yaml"
    runs = work / "runs"
    made = Provenance(step="data_prep/blend", run_dir=str(runs / "made-by-hand"))
    register(runs, [Output("tiny-blend", "data_blend", str(blend), "blend")], made,
             DigestMemo(runs / "memo.json"))  # fmt: skip
    text = (work / "lab3.yaml").read_text().replace(f"path: {blend}", f"path: {name}")
    (work / "lab3.yaml").write_text(text)


def stopped_at_rlvr(steps, pipeline_root: Path) -> None:
    """The pipeline ended failed at rlvr: prep completed, convert never ran."""
    status = ended(steps, pipeline_root)
    assert status["state"] == "failed" and status["stage"] == "rlvr", status
    by_id = {s["id"]: s for s in status["stages"]}
    assert by_id["prep"]["status"] == "completed"
    assert by_id["convert"]["status"] == "not run", by_id["convert"]


def test_a_failing_middle_stage_cancels_the_rest_and_status_names_it(lab):
    _root, work, steps = lab
    named_blend(work, "tiny-blend:latest")  # resolved from the registry before planning
    res = steps("pipeline", "run", "lab3.yaml", "--batch", "gpu_fail")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "input blend: tiny-blend:latest -> " in res.stderr, res.stderr
    pipeline_root = work / "runs" / "pipelines" / "lab3"
    stopped_at_rlvr(steps, pipeline_root)
    assert not (pipeline_root / "convert" / "hf").exists()
    text = steps("status", str(pipeline_root))
    assert "pipeline lab3: failed at stage rlvr" in text.stdout, text.stdout + text.stderr
    logs = steps("logs", str(pipeline_root))
    assert "stage rlvr" in logs.stderr and "driver started" in logs.stdout, logs.stderr


def test_prepared_rows_that_break_the_rl_stage_contract_stop_it_before_training(lab):
    from preflight_fixtures import gym_root

    root, work, steps = lab
    # The cluster's NeMo-RL has its Gym tree: the job judges the rows' agents by the stage's
    # config_paths, which load math_with_judge only; prep routes chat rows to
    # instruction_following_simple_agent, something no plan could see before prep ran.
    gym_root(root / "RL" / "3rdparty" / "Gym-workspace")
    res = steps("pipeline", "run", "lab3.yaml", "--batch", "gpu")
    assert res.returncode == 0, res.stdout + res.stderr
    pipeline_root = work / "runs" / "pipelines" / "lab3"
    stopped_at_rlvr(steps, pipeline_root)
    logs = steps("logs", str(pipeline_root))
    assert "E-STAGE-INPUT input train (data.train.data_path)" in logs.stdout, logs.stdout
    assert "instruction_following_simple_agent" in logs.stdout
    assert "driver started" not in logs.stdout  # the trainer never ran
    stage = json.loads((pipeline_root / "pipeline.json").read_text())["stages"]["rlvr"]
    inputs = Path(json.loads(Path(stage["run_dir"], "run.json").read_text())["job"]["job_dir"])
    assert sorted(p.name for p in (inputs / "inputs").iterdir()) == ["deferred.json"]
    diagnosis = steps("diagnose", str(pipeline_root))
    assert "stage_input" in diagnosis.stdout + diagnosis.stderr, diagnosis.stdout


def test_a_chain_stage_holds_the_next_stage_until_the_chain_is_done(lab):
    _root, work, steps = lab
    res = steps("pipeline", "run", "chain.yaml", "--batch", "chain")
    assert res.returncode == 0, res.stdout + res.stderr
    pipeline_root = work / "runs" / "pipelines" / "chained"
    stages = json.loads((pipeline_root / "pipeline.json").read_text())["stages"]
    gate = stages["dpo"]["gate_job_id"]
    # The chain's last segment is not known yet: the converter waits for the chain's gate.
    assert gate and stages["convert"]["after"] == [gate]
    status = ended(steps, pipeline_root)
    assert status["state"] == "completed", status
    run = json.loads(Path(stages["dpo"]["run_dir"], "run.json").read_text())
    job_dir = Path(run["job"]["job_dir"])
    chain = json.loads((job_dir / "run.json").read_text())["chain"]
    assert chain["state"] == "done" and len(chain["segments"]) >= 2, chain
    hf = pipeline_root / "convert" / "hf" / "config.json"
    last = max(s["ended_utc"] for s in chain["segments"] if s.get("ended_utc"))
    last_end = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
    assert hf.stat().st_mtime >= last_end  # converted after the chain's last segment


DATA_LEDGER_TRAINER = """import argparse, hashlib, json, os, runpy, sys
import yaml
p = argparse.ArgumentParser()
p.add_argument("--config")
a, _ = p.parse_known_args()
path = yaml.safe_load(open(a.config))["data"]["train"]["data_path"]
st = os.stat(path)
seen = {"ino": st.st_ino, "mtime_ns": st.st_mtime_ns,
        "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()}
with open(os.environ["FAKE_DATA_LEDGER"], "a") as fh:
    fh.write(json.dumps(seen) + "\\n")
from omegaconf import OmegaConf
OmegaConf.register_new_resolver("mul", lambda a, b: a * b)  # as NeMo-RL registers it
runpy.run_path(os.path.join(os.path.dirname(__file__), "chain_driver.py"), run_name="__main__")
"""


def test_a_chain_stage_trains_every_segment_on_the_rows_its_first_segment_derived(lab):
    import yaml

    from runners.launch.slurm.backend import DRIVER_LOG

    root, work, steps = lab
    # The RL stage trains as NeMo-RL does (resumes, saves before its time limit), and records
    # which rows file its config named, as it saw it (inode, mtime, digest), once per segment.
    (root / "RL" / GYM_SCRIPT).write_text(DATA_LEDGER_TRAINER, encoding="utf-8")
    (root / "RL" / GYM_SCRIPT).with_name("chain_driver.py").write_text(
        (CLUSTER / "driver.py").read_text(), encoding="utf-8")  # fmt: skip
    ledger = root / "data-ledger.jsonl"
    knobs = {"FAKE_STEP_SECONDS": "0.4", "FAKE_DATA_LEDGER": str(ledger)}
    with (work / "env.toml").open("a", encoding="utf-8") as fh:
        fh.write(profile("gym_chain", root, gpu=True, time="00:01:00", **knobs))
    pf = yaml.safe_load((work / "lab3.yaml").read_text())
    pf["name"], pf["stages"], pf["targets"] = "prepchain", pf["stages"][:2], ["rlvr.checkpoint"]
    pf["stages"][1]["until_done"] = True
    pf["stages"][1]["overrides"] += ["grpo.max_num_steps=8", "checkpointing.save_period=1"]
    (work / "prepchain.yaml").write_text(yaml.safe_dump(pf, sort_keys=False))
    res = steps("pipeline", "run", "prepchain.yaml", "--batch", "gym_chain")
    assert res.returncode == 0, res.stdout + res.stderr
    pipeline_root = work / "runs" / "pipelines" / "prepchain"
    status = ended(steps, pipeline_root)
    assert status["state"] == "completed", status
    stage = json.loads((pipeline_root / "pipeline.json").read_text())["stages"]["rlvr"]
    job_dir = Path(json.loads(Path(stage["run_dir"], "run.json").read_text())["job"]["job_dir"])
    segments = json.loads((job_dir / "run.json").read_text())["chain"]["segments"]
    assert len(segments) >= 2, segments
    # Every segment's trainer saw the one file the first segment's start wrote: not rewritten.
    seen = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert len(seen) == len(segments) and all(s == seen[0] for s in seen), seen
    data = Path(job_config(stage)["data"]["train"]["data_path"])
    assert data.stat().st_ino == seen[0]["ino"] and data.stat().st_mtime_ns == seen[0]["mtime_ns"]
    logs = [(job_dir / f"{s['job_id']}-logs" / DRIVER_LOG).read_text() for s in segments]
    assert re.search(r"input train: \d+ file\(s\) of .* -> inputs/train.jsonl", logs[0]), logs[0]
    for later in logs[1:]:
        assert "input train: inputs/train.jsonl kept as the stage's first start wrote it" in later
        assert "file(s) of" not in later, later


def test_an_input_named_by_an_unknown_artifact_queues_nothing(lab):
    _root, work, steps = lab
    named_blend(work, "tiny-blnd:latest")
    res = steps("pipeline", "run", "lab3.yaml", "--batch", "gpu")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "tiny-blend" in res.stdout + res.stderr  # did you mean
    assert not (work / "runs" / "pipelines" / "lab3" / "pipeline.json").exists()


def test_run_drives_the_stages_from_here_one_after_another(lab):
    _root, work, steps = lab
    res = steps("pipeline", "run", "lab3.yaml", "--run", "gpu")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for stage in ("prep", "rlvr", "convert"):
        assert f"{stage}: completed in" in res.stdout, res.stdout[-3000:]
    assert "driver started" in res.stdout  # each stage's log followed here
    pipeline_root = work / "runs" / "pipelines" / "lab3"
    assert (pipeline_root / "convert" / "hf" / "config.json").is_file()
    record = json.loads((pipeline_root / "prep" / "record.json").read_text())
    assert "--run=cpu" in record["command"]


def test_cancel_of_the_pipeline_root_cancels_every_queued_stage(lab):
    _root, work, steps = lab
    res = steps("pipeline", "run", "lab3.yaml", "--batch", "gpu_held")  # rlvr, convert held
    assert res.returncode == 0, res.stdout + res.stderr
    pipeline_root = work / "runs" / "pipelines" / "lab3"
    cancel = steps("cancel", str(pipeline_root))
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
    assert [line.split(":")[0] for line in cancel.stdout.splitlines()] == [
        "convert",
        "rlvr",
        "prep",
    ]
    status = ended(steps, pipeline_root)
    by_id = {s["id"]: s for s in status["stages"]}
    named = by_id[status["stage"]]  # the first cancelled (prep may have ended already)
    assert status["state"] == "failed" and "CANCELLED" in named["detail"], status
    assert by_id["convert"]["status"] == "not run", status
    assert not (pipeline_root / "convert" / "hf").exists()
    jobs = steps("jobs", "--runs-dir", str(pipeline_root), "--json")
    assert len(json.loads(jobs.stdout)["jobs"]) == 3, jobs.stdout  # one job per stage


def test_a_forced_stage_whose_previous_job_still_runs_is_refused_and_nothing_stays_queued(lab):
    import yaml

    _root, work, steps = lab
    pf = yaml.safe_load((work / "lab3.yaml").read_text())
    pf["name"] = "busy"
    (work / "busy.yaml").write_text(yaml.safe_dump(pf, sort_keys=False))
    first = steps("pipeline", "run", "busy.yaml", "--batch", "gpu_held")  # rlvr, convert held
    assert first.returncode == 0, first.stdout + first.stderr
    pipeline_root = work / "runs" / "pipelines" / "busy"
    try:
        again = steps("pipeline", "run", "busy.yaml", "--batch", "gpu_held", "--force=rlvr")
        assert again.returncode == 2, again.stdout + again.stderr
        assert "E-PIPELINE-BUSY" in again.stderr and "stage 'rlvr'" in again.stderr
        assert f"cancel {pipeline_root / 'rlvr'}" in again.stderr
        jobs = steps("jobs", "--runs-dir", str(pipeline_root), "--json")
        assert len(json.loads(jobs.stdout)["jobs"]) == 3, jobs.stdout  # the first run's, only
    finally:
        steps("cancel", str(pipeline_root))
