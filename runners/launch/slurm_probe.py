"""One round trip to a Slurm cluster before submitting: what preflight and sbatch need to know.

Which paths exist there, $HOME, the cluster's partitions and the one used (the profile's, else
the cluster's default from `scontrol show partition`) with its GPU GRES and fewest CPUs per node
(`sinfo -o %G/%c`), the accounting plugin and the user's default account (slurmctld's
association cache, else `sacctmgr`, when the profile names none: ray.sub's header holds
ACCOUNT/PARTITION placeholders), how the checkout's ray.sub sizes its srun steps, and whether
the run dir can be staged under remote_dir (the deepest existing folder is writable; over ssh,
rsync on both ends).
"""

from __future__ import annotations

import re
import shlex
import shutil

from catalog.errors import StepsError
from runners.launch.request import RemoteFacts
from runners.launch.shell import Shell

RAY_SUB = "ray.sub"
# Probe answers stored as they are: tag -> RemoteFacts field.
_FACT_TAGS = {"A": "account", "T": "accounting", "R": "ray_sub_cpus"}


def _probe_cluster(profile) -> list[str]:
    """Probe lines: the partition and its nodes, the default account, ray.sub's CPU formula."""
    lines = [f"P={shlex.quote(profile.partition or '')}"]
    # Every partition (hidden ones too: -a), so a profile's partition the cluster lacks is a
    # finding before submitting; without one, the default (ray.sub's header has none).
    default = (
        "" if profile.partition else
        "P=$(printf '%s\\n' \"$parts\" | grep -m 1 ' Default=YES ' | sed -n "
        "'s/^PartitionName=\\([^ ]*\\).*/\\1/p'); echo \"P|$P\"; "
    )  # fmt: skip
    lines.append(
        "if parts=$(timeout 15 scontrol -a show partition -o 2>/dev/null); then printf '%s\\n' "
        "\"$parts\" | sed -n 's/^PartitionName=\\([^ ]*\\).*/N|\\1/p'; " + default + "fi"
    )
    lines.append(
        'if command -v sinfo >/dev/null; then echo "G|$(sinfo ${P:+-p "$P"} -h -o %G '
        '2>/dev/null | head -n 1)"; echo "C|$(sinfo ${P:+-p "$P"} -h -o %c 2>/dev/null '
        "| tr '\\n' ' ')\"; fi"
    )
    if not profile.account:  # the user's default account, when accounting answers
        lines.append(
            "T=$(scontrol show config 2>/dev/null | sed -n 's/^AccountingStorageType *= *//p')\n"
            'echo "T|$T"'
        )
        # slurmctld's association cache answers in milliseconds; sacctmgr asks slurmdbd (~0.2 s)
        # and is asked only when the cache has no default account (or is private to admins).
        lines.append(
            'A=""; case $T in ""|*none) ;; *)\n'
            'A=$(scontrol show assoc_mgr users="$(id -un)" flags=users 2>/dev/null | sed -n '
            "'s/.* DefAccount=\\([^ ]*\\).*/\\1/p' | head -n 1)\n"
            '[ -n "$A" ] || A=$(timeout 10 sacctmgr -nP show user "$(id -un)" '
            "format=DefaultAccount 2>/dev/null | head -n 1) ;;\nesac\n"
            'echo "A|$A"'
        )
    if profile.nemo_rl_dir:
        q = shlex.quote(f"{profile.nemo_rl_dir}/{RAY_SUB}")
        lines.append(
            f"if grep -q 'CPUS_PER_WORKER=$(detect_cpus_per_node)' {q} 2>/dev/null; then "
            f"echo 'R|node'; elif grep -q 'GPUS_PER_NODE \\* 16' {q} 2>/dev/null; then "
            "echo 'R|16'; fi"
        )
    return lines


def probe(shell: Shell, name: str, profile, paths: list[str]) -> RemoteFacts:
    """The probe's answers as RemoteFacts; E-REMOTE-HOST (exit 2) when sbatch is missing there."""
    lines = ["set +e"]
    for p in paths:
        q = shlex.quote(p)
        lines.append(f"if [ -e {q} ]; then echo 'E|'{q}; else echo 'M|'{q}; fi")
    lines.append('echo "H|$HOME"')
    lines += _probe_cluster(profile)
    lines.append("command -v sbatch >/dev/null || echo 'S|missing'")
    if shell.host:  # the run dir is staged with rsync over ssh: both ends run rsync
        lines.append("command -v rsync >/dev/null || echo 'Y|missing'")
    lines.append(  # submit copies the run dir under remote_dir (mkdir -p, then rsync/cp)
        f"d={shlex.quote(profile.remote_dir)}\n"
        'while [ ! -e "$d" ] && [ "$d" != / ]; do d=$(dirname "$d"); done\n'
        '[ -d "$d" ] && [ -w "$d" ] && [ -x "$d" ] || echo "W|$d"'
    )
    proc = shell.run("\n".join(lines) + "\n", what="the probe (test -e, scontrol, sinfo)")
    facts = RemoteFacts(name, profile, "")
    facts.partition, facts.account = profile.partition, profile.account
    for line in proc.stdout.splitlines():
        tag, _, value = line.partition("|")
        if tag in ("E", "M"):
            facts.exists[value] = tag == "E"
        elif tag == "H":
            facts.home = value or None
        elif tag == "G":
            facts.gres = value.strip() or "(null)"
        elif tag == "W":
            facts.stage_problem = f"{value} is not a writable folder on {shell.where}"
        elif tag == "N":
            facts.partitions = [*(facts.partitions or []), value.strip()]
        elif tag == "P":  # the controller answered: its default partition, if it has one
            facts.partition, facts.partitions_read = value.strip() or None, True
        elif tag in _FACT_TAGS:
            setattr(facts, _FACT_TAGS[tag], value.strip() or None)
        elif tag == "C":
            counts = [int(c) for c in re.findall(r"\d+", value)]
            facts.node_cpus = min(counts) if counts else None
        elif tag == "Y":
            facts.stage_problem = f"rsync is not installed on {shell.where} (run dirs are staged "
            "with rsync over ssh)"
            facts.stage_fix = f"install rsync on {shell.where}"
        elif tag == "S":
            raise StepsError(
                "E-REMOTE-HOST",
                f"sbatch is not available on {shell.where}",
                fix="set `host` to a Slurm login node, or run from one",
                exit_code=2,
            )
    if shell.host and shutil.which("rsync") is None:
        facts.stage_problem = "rsync is not installed here (run dirs go over ssh with rsync)"
        facts.stage_fix = "install rsync here (apt-get install rsync)"
    return facts
