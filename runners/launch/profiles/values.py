"""What a profile value may hold: env.toml values reach bash, ssh, sbatch and srun.

Quoting is not enough: bash drops a NUL, a newline ends a script's line, a leading `-` turns a
host or partition into an option. So control characters (but newlines and tabs in a script), a
leading `-` in a name, odd hosts, relative dirs, bad Slurm times and `sbatch_args` that change
what steps passes are E-PROFILE at the value's line.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, ValidationInfo
from pydantic_core import PydanticCustomError

PROFILE_VALUE = "profile_value"  # the pydantic error type whose context carries our fix
SCRIPTS = ("setup_command",)  # values that are shell scripts: newlines and tabs belong there

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SCRIPT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMES = {0: "NUL", 9: "a tab", 10: "a newline", 13: "a carriage return", 127: "DEL"}
# Slurm's --time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (and no limit).
_SLURM_TIME = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")
NO_LIMIT = ("unlimited", "infinite")

# sbatch options steps passes (or reads back) itself, with why a profile must not change them.
OWN_SBATCH = {
    "--wrap": "it replaces the batch script steps submits",
    "--output": "steps reads the job's output at <run dir>/slurm-%j.out",
    "--error": "steps reads the job's errors in its output (slurm-%j.out)",
    "--parsable": "steps passes it and reads the job id it prints",
    "--job-name": "steps names each job uniquely and finds it by that name",
    "--export": "steps passes --export=ALL (the job's variables)",
    "--chdir": "the job runs where steps puts it (ray.sub: the NeMo-RL checkout)",
    "--nodes": "the node count comes from the config (and the profile's `nodes`)",
    "--time": "set the profile's `time`",
    "--partition": "set the profile's `partition`",
    "--account": "set the profile's `account`",
    "--test-only": "it submits nothing",
    "--wait": "sbatch would block until the job ends",
}
_SHORT = {"-o": "--output", "-e": "--error", "-J": "--job-name", "-D": "--chdir",
          "-N": "--nodes", "-t": "--time", "-p": "--partition", "-A": "--account",
          "-W": "--wait"}  # fmt: skip


def bad(message: str, fix: str) -> PydanticCustomError:
    """A profile value error whose message and fix reach E-PROFILE as they are."""
    return PydanticCustomError(PROFILE_VALUE, "{message}", {"message": message, "fix": fix})


def _strings(value: Any, where: str = "") -> list[tuple[str, str]]:
    """(where, text) for every string in a value: a table's key, a list's `[i]`, or ""."""
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k, where), *_strings(v, f"{k}"))]
    if isinstance(value, list | tuple):
        return [s for i, v in enumerate(value) for s in _strings(v, f"[{i}]")]
    return []


def no_control(value: Any, field: str) -> Any:
    """`value` (a string, or strings in a list or table) when it holds no control character."""
    pattern = _SCRIPT_CONTROL if field in SCRIPTS else _CONTROL
    for where, text in _strings(value):
        m = pattern.search(text)
        if m:
            code = ord(m.group())
            what = _NAMES.get(code, "a control character")
            raise bad(
                f"{where + ' ' if where else ''}holds {what} (U+{code:04X}) at character "
                f"{m.start() + 1}: the value reaches bash, ssh or sbatch, where it would end a "
                "line or be dropped",
                "write the value without control characters (a TOML escape such as \\n or "
                "\\u0000 puts one in)",
            )
    return value


def _no_dash(value: str, info: ValidationInfo) -> str:
    if value.startswith("-"):
        raise bad(
            f"{value!r} starts with '-': ssh, sbatch or srun would read it as an option",
            f"set {info.field_name} to the name itself",
        )
    return value


def _host(value: str, info: ValidationInfo) -> str:
    odd = next((c for c in value if c.isspace() or c in ":/'\"\\`$;|&<>"), None)
    if odd is not None or not value or value.startswith("-"):
        raise bad(
            f"{value!r} is not a host name for ssh and rsync"
            + (" (it starts with '-': ssh would read an option)" if value.startswith("-") else "")
            + (f" (it holds {odd!r})" if odd else ""),
            "set host to [user@]name of an ssh host (a port or options go in ssh_options, e.g. "
            '["-p", "2222"], or in a Host entry of ~/.ssh/config)',
        )
    return value


def _absolute(value: str, info: ValidationInfo) -> str:
    if not value.startswith("/"):
        raise bad(
            f"{value!r} is not an absolute path: the job, sbatch and rsync each start in a "
            "different folder",
            f"set {info.field_name} to an absolute path as the cluster sees it",
        )
    return value


def slurm_seconds(value: str) -> int | None:
    """Seconds in a Slurm time (--time, scontrol's RunTime), None for none or no limit."""
    m = _SLURM_TIME.fullmatch(value)
    if not m:
        return None
    days, a, b, c = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if days is not None:  # D-H[:M[:S]]
        return int(days) * 86400 + a * 3600 + int(b or 0) * 60 + int(c or 0)
    if c is not None:
        return a * 3600 + int(b) * 60 + int(c)
    return a * 60 + int(b or 0)  # M:S, or M


def _slurm_time(value: str, info: ValidationInfo) -> str:
    if slurm_seconds(value) is None and value.lower() not in NO_LIMIT:
        raise bad(
            f"{value!r} is not a Slurm time: one of MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS",
            f'e.g. {info.field_name} = "04:00:00" (4 hours) or "1-00:00:00" (a day)',
        )
    return value


def _own_option(arg: str) -> str | None:
    """The sbatch option of ours that `arg` sets (abbreviated long options included)."""
    if arg.startswith("--"):
        name = arg.split("=", 1)[0]
        if len(name) > 2:
            return next((o for o in OWN_SBATCH if o.startswith(name)), None)
        return None
    if arg.startswith("-") and len(arg) >= 2:
        return _SHORT.get(arg[:2])
    return None


def _sbatch_args(value: list[str]) -> list[str]:
    for arg in value:
        own = _own_option(arg)
        if own:
            raise bad(
                f"{arg!r} ({own}) conflicts with how steps submits the job: {OWN_SBATCH[own]}",
                f"remove {arg!r} from sbatch_args" + (
                    f" and {OWN_SBATCH[own].removeprefix('set ')}"
                    if OWN_SBATCH[own].startswith("set ") else ""
                ),
            )  # fmt: skip
    return value


def _mounts(value: list[str], info: ValidationInfo) -> list[str]:
    for mount in value:
        _no_dash(mount, info)
        if "," in mount:
            raise bad(
                f"mount {mount!r} holds ',': pyxis splits --container-mounts at commas",
                "name a folder without a comma (a link to it works)",
            )
    return value


Name = Annotated[str, AfterValidator(_no_dash)]
Host = Annotated[str, AfterValidator(_host)]
AbsDir = Annotated[str, AfterValidator(_absolute)]
SlurmTime = Annotated[str, AfterValidator(_slurm_time)]
SbatchArgs = Annotated[list[str], AfterValidator(_sbatch_args)]
Mounts = Annotated[list[str], AfterValidator(_mounts)]
