"""What the cluster side answers, asked by one program run there: `ssh HOST python3 -I -S -`.

Python 3.8+ and its standard library only: it runs where none of this repo is. The answer is one
JSON document on stdout (`follow`: one a line); modules are imported where a question needs them
(Python's start is most of a short question's time). By hand, from this folder:
`python3 remote_probe.py '{"op": "lookup", "name": "steps-x"}'`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time

if __name__ == "__main__" and "slurm_queries" not in sys.modules:  # run as a file (-I)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import slurm_queries
from slurm_queries import (
    UNKNOWN,
    ask,
    at_once,
    job_state,
    lookup,
    parse_columns,
    parse_one_line_records,
    sacct,
    show_job,
    side_by_side,
    states,
)

# A job's facts for status and diagnose, as scontrol and sacct name them.
_SHOW_JOB = dict(state="JobState", code="ExitCode", elapsed="RunTime", nodes="NumNodes")
_SACCT = dict(id="JobID", state="State", code="ExitCode", elapsed="ElapsedRaw", nodes="NNodes")


def _emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _send_log(path, offset):
    """The log's bytes past `offset`, in frames of at most 1 MiB; the new offset."""
    import base64

    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            while True:
                data = fh.read(1 << 20)
                if not data:
                    return offset
                _emit({"log": base64.b64encode(data).decode("ascii")})
                offset += len(data)
    except OSError:
        return offset


def follow(req):
    """Each poll a state line (a heartbeat when unchanged), the log as it grows, then the end;
    `lost` when Slurm has not answered for `silent` seconds."""
    terminal, offset, last, since = set(req["terminal"]), 0, None, None
    state = {}
    while True:
        state = job_state(req["id"], req.get("out"), terminal)
        _emit({"state": state} if state["state"] != last else {"alive": True})
        last = state["state"]
        offset = _send_log(req["log"], offset) if req.get("log") else offset
        if last == UNKNOWN:
            since = since or time.monotonic()
            if time.monotonic() - since >= req["silent"]:
                _emit({"lost": state})
                return
        else:
            since = None
        done = last in terminal if req["until_done"] else not req["follow"]
        if done:
            break
        time.sleep(req["poll"])
    if req["follow"] or req["until_done"]:
        time.sleep(0.5)  # a job seen ending may still be flushing its last lines to the log
    if req.get("log"):
        _send_log(req["log"], offset)
    _emit({"end": state})


def _partitions(req, out):
    """Every partition (hidden ones too), the one used and its GPU GRES and fewest node CPUs."""
    part = req.get("partition") or None
    got = ask(["scontrol", "-a", "show", "partition", "-o"])
    if got.ok:
        records = parse_one_line_records(got.out)
        out["partitions"] = [r.get("PartitionName", "") for r in records]
        if not part:  # the controller answered: its default, if it has one
            default = [r["PartitionName"] for r in records if r.get("Default") == "YES"]
            out["default_partition"] = part = default[0] if default else None
    if _which("sinfo"):
        got = ask(["sinfo", "-h", "-o", "%G|%c"] + (["-p", part] if part else []))
        rows = parse_columns(got.out, ["gres", "cpus"]) if got.ok else []
        out["gres"] = rows[0]["gres"].strip() if rows else ""
        cpus = [int(c) for r in rows for c in re.findall(r"\d+", r.get("cpus", ""))]
        out["node_cpus"] = min(cpus) if cpus else None


def _account(out):
    """The accounting plugin and the user's default account: slurmctld's association cache
    (milliseconds), else sacctmgr (a slurmdbd round trip)."""
    config = ask(["scontrol", "show", "config"]).out
    m = re.search(r"^AccountingStorageType\s*=\s*(\S*)", config, re.M)
    out["accounting"] = kind = m.group(1) if m else ""
    if not kind or kind.endswith("none"):
        out["account"] = ""
        return
    import pwd

    user = pwd.getpwuid(os.getuid()).pw_name
    cache = ask(["scontrol", "show", "assoc_mgr", "users=" + user, "flags=users"]).out
    m = re.search(r" DefAccount=(\S+)", cache)
    if m:
        out["account"] = m.group(1)
        return
    got = ask(["sacctmgr", "-nP", "show", "user", user, "format=DefaultAccount"])
    out["account"] = got.out.splitlines()[0].strip() if got.ok and got.out.strip() else ""


def _which(name):
    import shutil  # its import asks for zlib, bz2, lzma: here only

    return shutil.which(name) is not None


def _ray_sub_cpus(path):
    """How the checkout's ray.sub sizes its srun steps: per node, or 16 per GPU."""
    text = ""
    with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    if "CPUS_PER_WORKER=$(detect_cpus_per_node)" in text:
        return "node"
    return "16" if "GPUS_PER_NODE * 16" in text else None


def _stage_blocker(remote_dir):
    """The deepest existing folder above remote_dir when it is not writable (else None)."""
    d = remote_dir
    while not os.path.exists(d) and d not in ("/", ""):
        d = os.path.dirname(d)
    ok = os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)
    return None if ok else d


def probe(req):
    """What preflight and sbatch need to know, the Slurm questions asked side by side."""
    out = {"exists": {p: os.path.exists(p) for p in req["paths"]}, "home": os.environ.get("HOME")}
    asks = [lambda: _partitions(req, out), lambda: _here(req, out)]
    if req.get("want_account"):
        asks.append(lambda: _account(out))
    at_once(*asks)
    return out


def _here(req, out):
    """What the login node itself answers: ray.sub, the tools, remote_dir, the env's names."""
    if req.get("ray_sub"):
        out["ray_sub_cpus"] = _ray_sub_cpus(req["ray_sub"])
    out["sbatch"] = _which("sbatch")
    if req.get("rsync"):
        out["rsync"] = _which("rsync")
    out["stage_blocker"] = _stage_blocker(req["remote_dir"])
    if req.get("switches") is not None:
        out["env"] = environment(req)["env"]
    if req.get("python3"):  # a chain decides outside the container with the node's python3
        said = "import sys; print(sys.version.split()[0], sys.executable)"
        got = ask(["python3", "-I", "-c", said])
        out["python3"] = got.out.split() if got.ok else ["", got.why]


def environment(req):
    """This environment's names, each with whether its value is a switch (no value leaves)."""
    switches = set(req["switches"])
    return {"env": {k: v.strip().lower() in switches for k, v in os.environ.items()}}


def facts(req):
    """slurmctld's view of the jobs that may still be live, and one sacct for all of them."""

    def one(job_id):  # None: sacct
        if job_id is None:
            found = sacct(list(_SACCT.values()), "-j", ",".join(req["all"]))
            return [dict({k: r.get(n) for k, n in _SACCT.items()}, source="sacct") for r in found]
        r = show_job(job_id)[0]
        named = {k: r.get(n) for k, n in _SHOW_JOB.items()} if r else None
        return [dict(named, source="scontrol", id=job_id)] if r else []

    return [row for rows in side_by_side(one, [*req["live"], None]) for row in rows]


def _tail(path, size):
    import base64

    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - size))
        return base64.b64encode(fh.read()).decode("ascii")


def progress(req):
    """The log's size, mtime and tail; the latest training_info.json; the newest TB tail."""
    import glob

    out = {"now": time.time()}
    log = req.get("log")
    if log and os.access(log, os.R_OK):
        st = os.stat(log)
        out.update(log_size=st.st_size, log_mtime=int(st.st_mtime))
        out["log_tail"] = _tail(log, req["log_tail"])
    ckpt = req.get("ckpt")
    steps = [p.rsplit("step_", 1)[1] for p in glob.glob(glob.escape(ckpt) + "/step_*")] if ckpt \
        else []  # fmt: skip
    steps = sorted(int(s) for s in steps if s.isdigit())
    if steps:
        try:
            with open(f"{ckpt}/step_{steps[-1]}/training_info.json", "rb") as fh:
                out["checkpoint"] = json.loads(fh.read())
        except (OSError, ValueError):
            out["checkpoint"] = None
    tb = req.get("tb")
    found = glob.glob(glob.escape(tb) + "/exp_*/tensorboard/events.out.tfevents.*") if tb else []
    if found:
        out["tb_tail"] = _tail(max(found, key=os.path.getmtime), req["tb_tail"])
    return out


def main(request):
    """Answer one request (a JSON text): its `op` names the question."""
    req = json.loads(request)
    slurm_queries.CALL = float(req.get("call") or slurm_queries.CALL)
    op = req["op"]
    if op == "follow":
        follow(req)
        return
    if op == "run":  # status/diagnose: the facts and the progress in one round trip
        answer = {"facts": []}
        asks = [lambda: answer.update(facts=facts(req["facts"]))] if req.get("facts") else []
        if req.get("progress") is not None:
            asks.append(lambda: answer.update(progress=progress(req["progress"])))
        at_once(*asks)
    elif op == "lookup":
        answer = lookup(req["name"])
    else:
        answer = {"probe": probe, "states": states, "environment": environment}[op](req)
    _emit(answer)


if __name__ == "__main__" and sys.argv[1:2] not in ([], ["-"]):
    main(sys.argv[1])
