"""What an env.toml value may hold: each reaches bash, ssh, sbatch or srun, so one a shell cannot
hold whole (a newline, a NUL, a leading `-`) is E-PROFILE at its line before anything runs, and a
legitimate value with spaces and quotes goes through the real sbatch (and ssh + rsync) intact.

The real one-node Slurm and the real sshd on 127.0.0.1 run everything; nothing is mocked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cluster_fixtures import PYTHON, slurm, sshd, wait_for  # noqa: F401
from test_launch_slurm import lab, write_env_toml  # noqa: F401

from catalog.errors import StepsError
from runners.launch.profiles.env_toml import load_profile


def set_key(env_toml: Path, key: str, value: str) -> int:
    """Set `key = value` (TOML text) in [lab], replacing the line that has it; its line number."""
    lines = env_toml.read_text(encoding="utf-8").splitlines()
    at = next((i for i, t in enumerate(lines) if re.match(rf"{key}\s*=", t)), None)
    if at is None:
        lines.insert(1, "")
        at = 1
    lines[at] = f"{key} = {value}"
    env_toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return at + 1


# (key, TOML value with {root}, what the finding says): each would run or break something.
BAD = [
    ("remote_dir", '"{root}/shared\\ntouch {root}/pwned\\n#"', "holds a newline (U+000A)"),
    ("account", '"a\\u0000b"', "holds NUL (U+0000)"),
    ("partition", '"-pdebug"', "starts with '-'"),
    ("setup_command", '"echo a\\rtouch {root}/pwned"', "holds a carriage return"),
    ("env", '{{ A = "1\\u0085touch {root}/pwned" }}', "A holds a control character (U+0085)"),
    ("mounts", '["{root}:{root}\\u007f"]', "holds DEL"),
    ("time", '"00:05:00$(touch {root}/pwned)"', "is not a Slurm time"),
    ("remote_dir", '"shared/runs"', "is not an absolute path"),
    ("sbatch_args", '["--wrap", "touch {root}/pwned"]', "'--wrap' (--wrap) conflicts"),
]


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "submit"])
@pytest.mark.parametrize(("key", "value", "said"), BAD, ids=[f"{k}-{s[:12]}" for k, _, s in BAD])
def test_a_value_a_shell_cannot_hold_is_a_finding_at_its_line_and_nothing_runs(
    lab,  # noqa: F811
    key,
    value,
    said,
    dry,
):
    root, work, _env, cli = lab
    line = set_key(work / "env.toml", key, value.format(root=root))
    res = cli(
        "run", "data_prep/rl_prep", "-c", "tiny", "--batch", "lab", "--json", *(["--dry-run"] * dry)
    )
    assert res.returncode == 2, res.stdout + res.stderr
    finding = json.loads(res.stdout)["findings"][0]
    assert finding["code"] == "E-PROFILE" and said in finding["message"], finding
    assert finding["path"] == str(work / "env.toml") and finding["line"] == line
    assert finding["fix"] and "Traceback" not in res.stderr
    assert not (work / "runs").exists() and not (root / "shared").exists()
    assert not (root / "pwned").exists()


@pytest.mark.parametrize(
    "host",
    ["-oProxyCommand=touch {root}/pwned", "x -oProxyCommand=touch {root}/pwned", "h:2222"],
)
def test_a_host_ssh_or_rsync_would_read_otherwise_is_a_finding_and_ssh_never_runs(
    lab,  # noqa: F811
    sshd,  # noqa: F811
    host,
):
    root, work, _env, cli = lab
    _, options = sshd
    write_env_toml(work, root, extra="ssh_options = [" + ", ".join(f'"{o}"' for o in options) + "]")
    line = set_key(work / "env.toml", "host", f'"{host.format(root=root)}"')
    res = cli("run", "data_prep/rl_prep", "-c", "tiny", "--batch", "lab", "--dry-run")
    assert res.returncode == 2
    assert f"env.toml:{line}: E-PROFILE profile [lab] host:" in res.stderr
    assert "is not a host name for ssh and rsync" in res.stderr and "Fix: set host" in res.stderr
    assert not (root / "pwned").exists()


@pytest.mark.parametrize("over_ssh", [False, True], ids=["here", "ssh"])
def test_values_with_spaces_and_quotes_reach_the_job_whole_through_sbatch(
    lab,  # noqa: F811
    sshd,  # noqa: F811
    over_ssh,
):
    root, work, env, cli = lab
    host, options = sshd
    odd = f'{root}/it\'s a "shared" dir $(touch {root}/pwned)'
    # Over ssh the job has the login shell's PATH: the lab's bare python3 and pyxis come from
    # the profile's setup, as a `module load` would give them on a cluster.
    paths = f"export PATH={env['PATH']} PYXIS_STAND_IN_SITE={env['PYXIS_STAND_IN_SITE']}"
    extra = f"setup_command = \"echo 'setup ran' > '{root}/setup ran'; {paths}\"\n"
    if over_ssh:
        extra += f'host = "{host}"\nssh_options = [' + ", ".join(f'"{o}"' for o in options) + "]\n"
    write_env_toml(work, root, extra=extra)
    set_key(work / "env.toml", "remote_dir", json.dumps(odd))
    res = cli("run", "data_prep/rl_prep", "-c", "tiny", "--run", "lab")
    assert res.returncode == 0, res.stdout + res.stderr
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    assert job["state"] == "COMPLETED" and job["job_dir"].startswith(odd + "/")
    assert Path(job["job_dir"], "job.sbatch").is_file()
    assert (root / "setup ran").read_text() == "setup ran\n"
    assert (root / "out" / "rl_prep" / "tiny" / "manifest.json").is_file()
    assert not (root / "pwned").exists()


@pytest.mark.parametrize(
    "value", ["30", "30:00", "04:00:00", "2-0", "1-12:00", "1-00:00:00", "UNLIMITED"]
)
def test_every_slurm_time_format_is_accepted(tmp_path, value):
    path = tmp_path / "env.toml"
    path.write_text(f'[a]\nexecutor = "slurm"\nremote_dir = "/r"\ntime = "{value}"\n')
    assert load_profile(path, "a").time == value


@pytest.mark.parametrize(
    ("args", "refused"),
    [
        (["--wrap=hostname"], "--wrap"),
        (["--output", "/tmp/x"], "--output"),
        (["-o/tmp/x"], "--output"),
        (["--outp=/tmp/x"], "--output"),  # sbatch takes unique abbreviations of long options
        (["-e", "/tmp/e"], "--error"),
        (["--job-name=mine"], "--job-name"),
        (["--parsable"], "--parsable"),
        (["--export=NONE"], "--export"),
        (["-t", "5"], "--time"),
        (["--partition=other"], "--partition"),
        (["--test-only"], "--test-only"),
    ],
)
def test_sbatch_args_may_not_change_what_steps_passes_sbatch(tmp_path, args, refused):
    path = tmp_path / "env.toml"
    path.write_text(
        f'[a]\nexecutor = "slurm"\nremote_dir = "/r"\nsbatch_args = {json.dumps(args)}\n'
    )
    with pytest.raises(StepsError) as err:
        load_profile(path, "a")
    f = err.value.finding
    assert f.code == "E-PROFILE" and f.line == 4 and f"({refused}) conflicts" in f.message
    assert err.value.exit_code == 2


def test_other_sbatch_args_pass(tmp_path):
    path = tmp_path / "env.toml"
    args = ["--qos=high", "--oversubscribe", "--exclusive", "--begin=now", "--open-mode=append"]
    path.write_text(
        f'[a]\nexecutor = "slurm"\nremote_dir = "/r"\nsbatch_args = {json.dumps(args)}\n'
    )
    assert load_profile(path, "a").sbatch_args == args


def test_an_unknown_partition_is_a_finding_in_the_dry_run_as_in_the_submit(lab, slurm):  # noqa: F811
    root, work, _env, cli = lab
    line = set_key(work / "env.toml", "partition", '"debug,nosuch"')
    results = [
        cli("run", "data_prep/rl_prep", "-c", "tiny", "--batch", "lab", "--json", *dry)
        for dry in (["--dry-run"], [])
    ]
    found = [
        {f["code"]: f for f in json.loads(r.stdout)["findings"]}["E-REMOTE-PARTITION"]
        for r in results
    ]
    assert [r.returncode for r in results] == [1, 1]
    assert found[0] == found[1] and found[0]["line"] == line
    assert "partition nosuch is not a partition of the cluster" in found[0]["message"]
    assert "debug" in found[0]["fix"]
    assert not (work / "runs").exists() and not (root / "shared").exists()
