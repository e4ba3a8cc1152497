"""One round trip to a Slurm cluster before submitting (remote_probe's `probe`): the paths,
partitions, GRES, account, ray.sub's CPU sizing, and whether remote_dir can take the run dir."""

from __future__ import annotations

import shutil

from catalog.errors import StepsError
from runners.launch.request import RemoteFacts
from runners.launch.shell import Shell
from runners.secrets import SWITCH_VALUES

RAY_SUB = "ray.sub"


def probe(
    shell: Shell, name: str, profile, paths: list[str]
) -> tuple[RemoteFacts, dict[str, bool] | None]:
    """The probe's answers as RemoteFacts, and over ssh the login environment's names (each:
    its value is a switch); E-REMOTE-HOST (exit 2) when sbatch is missing there."""
    request = {
        "op": "probe",
        "paths": paths,
        "partition": profile.partition or "",
        "want_account": not profile.account,  # ray.sub's header holds an ACCOUNT placeholder
        "ray_sub": f"{profile.nemo_rl_dir}/{RAY_SUB}" if profile.nemo_rl_dir else "",
        "rsync": bool(shell.host),  # the run dir is staged with rsync over ssh: both ends
        "remote_dir": profile.remote_dir,
        "switches": sorted(SWITCH_VALUES) if shell.host else None,
        "python3": True,  # a chain's decisions run with it (runners/chain/segment_program.py)
    }
    got = shell.ask(request, what="the probe (paths, scontrol, sinfo)")
    if not got.get("sbatch"):
        raise StepsError(
            "E-REMOTE-HOST",
            f"sbatch is not available on {shell.where}",
            fix="set `host` to a Slurm login node, or run from one",
            exit_code=2,
        )
    facts = RemoteFacts(name, profile, "")
    facts.exists = dict(got.get("exists") or {})
    facts.home = got.get("home") or None
    facts.partition, facts.account = profile.partition, profile.account
    facts.partitions = got.get("partitions")
    if "default_partition" in got:  # the controller answered: its default, if it has one
        facts.partition, facts.partitions_read = got["default_partition"], True
    if "gres" in got:
        facts.gres = got["gres"] or "(null)"
        facts.node_cpus = got.get("node_cpus")
    if "accounting" in got:
        facts.accounting = got["accounting"] or None
        facts.account = got.get("account") or None
    facts.ray_sub_cpus = got.get("ray_sub_cpus")
    facts.python3 = got.get("python3")
    if got.get("stage_blocker"):
        facts.stage_problem = f"{got['stage_blocker']} is not a writable folder on {shell.where}"
    if got.get("rsync") is False:
        facts.stage_problem = f"rsync is not installed on {shell.where} (run dirs are staged "
        "with rsync over ssh)"
        facts.stage_fix = f"install rsync on {shell.where}"
    if shell.host and shutil.which("rsync") is None:
        facts.stage_problem = "rsync is not installed here (run dirs go over ssh with rsync)"
        facts.stage_fix = "install rsync here (apt-get install rsync)"
    return facts, got.get("env")
