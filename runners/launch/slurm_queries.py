"""The Slurm commands the cluster side asks, one parser each: Python 3.8+, standard library only.

Part of the program `remote_probe` runs there (shell.py sends both texts). Each call is bounded
by CALL seconds: a controller that does not answer makes a state UNKNOWN with why, never an
endless wait.
"""

from __future__ import annotations

import contextlib
import re
import subprocess

CALL = 15.0  # seconds one Slurm command may take; the request's `call` replaces it
UNKNOWN = "UNKNOWN"
_KEY = re.compile(r"(?:^|\s)([A-Za-z][\w:/.]*)=")


class Answer:
    """One command's outcome: its stdout when it ran cleanly, else why not, in words."""

    def __init__(self, argv, timeout):
        self.out, self.why, self.ok = "", "", False
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, errors="replace", timeout=timeout
            )
        except subprocess.TimeoutExpired:
            self.why = f"{argv[0]} did not answer within {timeout:g} s"
            return
        except OSError as exc:
            self.why = f"{argv[0]}: {exc.strerror or exc}"
            return
        self.ok, self.out = proc.returncode == 0, proc.stdout
        if proc.returncode != 0:
            lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            self.why = lines[-1] if lines else f"{argv[0]} exited {proc.returncode}"


def ask(argv):
    """Run one Slurm command, bounded by CALL seconds."""
    return Answer(argv, CALL)


def parse_one_line_records(text):
    """`scontrol show job|partition -o`: one record a line, `Key=value` pairs (a value may hold
    spaces and `=`)."""
    records = []
    for line in text.splitlines():
        keys = list(_KEY.finditer(line))
        ends = [m.start() for m in keys[1:]] + [len(line)]
        record = {m.group(1): line[m.end() : end].strip() for m, end in zip(keys, ends)}  # noqa: B905
        if record:
            records.append(record)
    return records


def parse_columns(text, names, sep="|"):
    """`sacct --parsable2`, `squeue -o`, `sinfo -o` with `sep` between the fields: dicts."""
    cut = len(names) - 1
    return [dict(zip(names, ln.split(sep, cut))) for ln in text.splitlines() if ln.strip()]  # noqa: B905 (3.8)


def show_job(job_id):
    """(the job's record or None, why not): `scontrol show job -o`."""
    got = ask(["scontrol", "show", "job", str(job_id), "-o"])
    records = parse_one_line_records(got.out) if got.ok else []
    return (records[0] if records else None), got.why or "scontrol printed nothing"


def sacct(fields, *extra):
    """Accounting's records (one per job, `-X`), `fields` of each: `sacct --parsable2`."""
    got = ask(["sacct", "-n", "--parsable2", "-X", "-o", ",".join(fields), *extra])
    return parse_columns(got.out, fields) if got.ok else []


def squeue(fields, codes, *extra):
    """`squeue -t all` rows (`fields` from the `codes` columns), and how the call went."""
    got = ask(["squeue", "-h", "-t", "all", "-o", "|".join(codes), *extra])
    return parse_columns(got.out, fields), got


def _exit_line(path):
    """The last `exit_code=N` ray.sub or our srun script printed into the batch output."""
    found = []
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        found = [int(m.group(1)) for line in fh for m in re.finditer(rb"exit_code=(\d+)", line)]
    return found[-1] if found else None


def job_state(job_id, out_path, terminal):
    """{state, code} of a job: slurmctld's, else accounting's, else the exit line; UNKNOWN with
    `why` when none says."""
    record, why = show_job(job_id)
    if record is not None:
        return {"state": record.get("JobState", ""), "code": record.get("ExitCode", "")}
    rows = sacct(["State", "ExitCode"], "-j", str(job_id))
    if rows:
        state = (rows[-1].get("State") or "").split(" ")[0]
        # With slurmctld silent, accounting's live states are stale (nobody updates them).
        if "Invalid job id" in why or state in terminal:
            return {"state": state, "code": rows[-1].get("ExitCode", "")}
    code = _exit_line(out_path) if out_path else None
    if code is not None:
        return {"state": "COMPLETED" if code == 0 else "FAILED", "code": f"{code}:0"}
    return {"state": UNKNOWN, "why": why}


def exit_code_of(state, code, terminal):
    """Slurm's `exit:signal` as an exit code (signal N: 128+N; failed with 0: 1), None before
    the job's end."""
    if state not in terminal:
        return None
    ec, _, sig = (code or "").partition(":")
    if ec.isdigit() and int(ec):
        return int(ec)
    return 128 + int(sig) if sig.isdigit() and int(sig) else 0 if state == "COMPLETED" else 1


def lookup(name):
    """{id} of the job named `name` (squeue, else sacct's last 7 days), {} when none, or {why}
    when Slurm could not be asked."""
    (rows, got), found = at_once(
        lambda: squeue(["id"], ["%A"], "--name=" + name),
        lambda: sacct(["JobID"], "--name=" + name, "-S", "now-7days"),
    )
    if rows:
        return {"id": rows[0]["id"].strip()}
    if not got.ok:
        return {"why": got.why}
    return {"id": found[0]["JobID"]} if found else {}


def states(req):
    """Every job's state in one go: one squeue for the live ones, job_state for the rest."""
    terminal = set(req["terminal"])
    ids = ",".join(j["id"] for j in req["jobs"] if j.get("id"))
    live = {}
    if ids:
        for r in squeue(["id", "state"], ["%i", "%T"], "-j", ids)[0]:
            if r.get("state") not in terminal:
                live[r["id"]] = r.get("state")

    def answer(job):
        job_id, found = job.get("id"), {}
        if not job_id:
            found = lookup(job["name"])
            job_id = found.get("id")
        if job_id in live:
            return {"id": job_id, "state": live[job_id]}
        return dict(job_state(job_id, job.get("out"), terminal), id=job_id) if job_id else found

    return {"rows": side_by_side(answer, req["jobs"])}


def side_by_side(fn, items):
    """[fn(item) for item in items], each in its own thread (they wait on slurmctld)."""
    if len(items) < 2:
        return [fn(item) for item in items]
    import threading

    out = [None] * len(items)
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, fn(items[i])))
               for i in range(len(items))]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def at_once(*calls):
    """Each call's result, the calls made side by side."""
    return side_by_side(lambda call: call(), list(calls))
