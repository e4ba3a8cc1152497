"""What Slurm says about jobs, asked in one `bash -s` per host: their states (`scontrol show job`
while slurmctld holds the job, live; else sacct's latest record, as accounting keeps it after
MinJobAge and sacct lags a started job by the slurmdbd round trip; else the exit line ray.sub or
our srun script prints into the batch output),
a job found by its unique name (`squeue`, then `sacct`), and the follow stream of one job.

Every Slurm tool call is wrapped in `timeout` (STEPS_SLURM_CALL_SECONDS): a controller that does
not answer makes the state UNKNOWN with the tool's own words, never an endless wait. A followed
job whose state stays UNKNOWN for STEPS_SILENT_SECONDS ends the follow as lost contact, and so
does a stream that ends or goes quiet without the job's end mark (ssh dropped, host gone).
"""

from __future__ import annotations

import codecs
import os
import shlex
import subprocess
import sys

from runners.launch.request import TERMINAL, UNKNOWN, unknown
from runners.launch.shell import LostContact, Shell

END_MARK = "@@steps-job-end@@"
STATE_MARK = "@@steps-job-state@@"
LOG_MARK = "@@steps-log@@"  # followed by a byte count, then that many bytes of the log
ALIVE_MARK = "@@steps-alive@@"
LOST_MARK = "@@steps-job-lost@@"
ROW_MARK = "@@steps-row@@"

# `job_state` prints "STATE EXIT" for job $ID (or "UNKNOWN - why": scontrol's own words);
# `job_lookup` prints
# "FOUND id", "NONE" or "UNKNOWN why" for the job named $NAME.
FUNCTIONS = r"""
T=${CALL:-15}
job_state() {
  local line st ec out rc why
  out=$(timeout "$T" scontrol show job "$ID" -o 2>&1); rc=$?
  if [ "$rc" = 0 ] && [ -n "$out" ]; then
    line=$(printf '%s\n' "$out" | head -n 1)
    st=$(printf '%s' "$line" | grep -o 'JobState=[A-Z_]*' | head -n 1); st=${st#JobState=}
    ec=$(printf '%s' "$line" | grep -o ' ExitCode=[0-9:]*' | head -n 1); ec=${ec# ExitCode=}
    echo "$st $ec"; return
  fi
  if [ "$rc" = 124 ]; then why="scontrol did not answer within $T s"
  else why=$(printf '%s\n' "$out" | tail -n 1); fi
  line=$(timeout "$T" sacct -n -P -X -o State,ExitCode -j "$ID" 2>/dev/null | tail -n 1) || line=""
  if [ -n "$line" ]; then
    st=${line%%|*}; st=${st%% *}; ec=${line##*|}
    # With slurmctld silent, accounting's live states are stale (nobody updates them): only an
    # end it recorded counts. A job slurmctld no longer holds (MinJobAge) is accounting's alone.
    case "$why" in *"Invalid job id"*) echo "$st $ec"; return ;; esac
    case " $TERMINAL " in *" $st "*) echo "$st $ec"; return ;; esac
  fi
  ec=$(grep -ho 'exit_code=[0-9][0-9]*' "$OUT" 2>/dev/null | tail -n 1) || ec=""
  if [ -n "$ec" ]; then
    ec=${ec#exit_code=}; if [ "$ec" = 0 ]; then echo "COMPLETED 0:0"; else echo "FAILED $ec:0"; fi
  else echo "UNKNOWN - ${why:-scontrol printed nothing}"; fi
}
job_lookup() {
  local out rc
  out=$(timeout "$T" squeue -h --name="$NAME" -t all -o %A 2>&1); rc=$?
  if [ "$rc" = 0 ] && [ -n "$out" ]; then
    echo "FOUND $(printf '%s\n' "$out" | head -n 1)"; return
  fi
  if [ "$rc" != 0 ]; then
    [ "$rc" = 124 ] && out="squeue did not answer within $T s"
    echo "UNKNOWN $(printf '%s\n' "$out" | tail -n 1)"; return
  fi
  out=$(timeout "$T" sacct -n -X -P --name="$NAME" -S now-7days -o JobID 2>/dev/null | head -n 1)
  if [ -n "$out" ]; then echo "FOUND $out"; else echo "NONE"; fi
}
"""

# Streams $LOG from byte 0 while the job runs (each chunk framed by its size, so a log line
# without its newline never hides a mark), a heartbeat each poll, then the end mark.
FOLLOW = r"""
off=0; last=""; since=""; chunk=$(mktemp); trap 'rm -f "$chunk"' EXIT
send_log() {
  [ -e "$LOG" ] || return 0
  size=$(stat -c %s "$LOG")
  [ "$size" -gt "$off" ] || return 0
  tail -c +$((off + 1)) "$LOG" | head -c $((size - off)) > "$chunk"
  n=$(stat -c %s "$chunk"); echo "@@steps-log@@ $n"; cat "$chunk"; off=$((off + n))
}
while :; do
  s=$(job_state); st=${s%% *}
  if [ "$st" != "$last" ]; then echo "@@steps-job-state@@ $s"; last=$st
  else echo "@@steps-alive@@"; fi
  send_log
  if [ "$st" = UNKNOWN ]; then
    since=${since:-$SECONDS}
    if [ $((SECONDS - since)) -ge "$SILENT" ]; then echo "@@steps-job-lost@@ $s"; exit 0; fi
  else since=""; fi
  case " $TERMINAL " in *" $st "*) [ "$UNTIL_DONE" = 1 ] && break ;; esac
  [ "$UNTIL_DONE" = 1 ] || [ "$FOLLOW" = 1 ] || break
  sleep "$POLL"
done
sleep 0.5
send_log
echo "@@steps-job-end@@ $s"
"""


def exit_code_of(state: str, code: str) -> int | None:
    """Slurm's `exit:signal` as a process exit code (signal N -> 128+N; failed with 0 -> 1)."""
    if state not in TERMINAL:
        return None
    exit_part, _, sig_part = (code or "").partition(":")
    ec = int(exit_part) if exit_part.isdigit() else 0
    sig = int(sig_part) if sig_part.isdigit() else 0
    if ec:
        return ec
    if sig:
        return 128 + sig
    return 0 if state == "COMPLETED" else 1


def _assign(values: dict[str, str]) -> str:
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())


def _common(shell: Shell) -> dict[str, str]:
    return {
        "CALL": f"{shell.seconds('SLURM_CALL'):g}",
        "TERMINAL": " ".join(sorted(TERMINAL)),
        "POLL": os.environ.get("STEPS_POLL_SECONDS", "2"),
        "SILENT": f"{max(1, round(shell.seconds('SILENT')))}",  # bash counts whole seconds
    }


def _job_vars(job: dict) -> dict[str, str]:
    log = job.get("log_path") or ""
    return {
        "ID": str(job.get("job_id") or ""),
        "NAME": str(job.get("job_name") or ""),
        "LOG": log,
        "OUT": job.get("batch_output") or log,
    }


# One squeue for every listed job: a job it shows in a live state needs no more questions.
_LIVE = r"""
declare -A LIVE
while read -r i st; do
  case " $TERMINAL " in *" $st "*) ;; *) LIVE[$i]=$st ;; esac
done < <([ -n "$IDS" ] && timeout "$T" squeue -h -t all -j "$IDS" -o '%i %T' 2>/dev/null)
row() {
  r=""; if [ -z "$ID" ]; then r=$(job_lookup); case $r in FOUND*) ID=${r#FOUND } ;; esac; fi
  if [ -z "$ID" ]; then echo "@@steps-row@@ $1 - $r"
  elif [ -n "${LIVE[$ID]:-}" ]; then echo "@@steps-row@@ $1 $ID ${LIVE[$ID]} -"
  else echo "@@steps-row@@ $1 $ID $(job_state)"; fi
}
"""


def refresh_many(shell: Shell, jobs: list[dict]) -> list[dict]:
    """Each job's current record, one round trip for all (one squeue for the live ones, the
    full job_state for the rest); a job sbatch never confirmed is looked up by its name."""
    ids = ",".join(str(j["job_id"]) for j in jobs if j.get("job_id"))
    lines = [_assign({**_common(shell), "IDS": ids}), FUNCTIONS, _LIVE]
    for i, job in enumerate(jobs):
        lines.append(_assign(_job_vars(job)) + f"row {i}\n")
    proc = shell.run("".join(lines), what="asking Slurm for job states (squeue, scontrol, sacct)")
    rows = {}
    for line in proc.stdout.splitlines():
        if line.startswith(ROW_MARK + " "):
            _, idx, rest = line.split(" ", 2)
            rows[int(idx)] = rest
    return [_row(job, rows.get(i), proc.stderr) for i, job in enumerate(jobs)]


def _row(job: dict, row: str | None, stderr: str) -> dict:
    if row is None:
        return unknown(job, stderr.strip().splitlines()[-1] if stderr.strip() else "no answer")
    job_id, _, rest = row.partition(" ")
    state, _, code = rest.partition(" ")
    if job_id == "-":  # looked up by name: NONE or UNKNOWN why
        if state == "NONE":
            return {**job, "reason": f"no job named {job.get('job_name')} is known to Slurm"}
        return unknown(job, code or "Slurm did not answer")
    job = {**job, "job_id": job_id}
    if state == UNKNOWN:
        return unknown(job, code.removeprefix("- ") or "Slurm does not know the job")
    return {**job, "state": state, "exit_code": exit_code_of(state, code)}


def lookup(shell: Shell, name: str) -> tuple[str | None, str]:
    """(job id, "") when Slurm knows a job named `name`; (None, why) when not or unknown."""
    proc = shell.run(
        _assign({**_common(shell), "NAME": name}) + FUNCTIONS + "job_lookup\n",
        what=f"looking up job {name} (squeue, sacct)",
    )
    answer = proc.stdout.strip().splitlines()[-1:] or [f"UNKNOWN {proc.stderr.strip()}"]
    kind, _, rest = answer[0].partition(" ")
    if kind == "FOUND" and rest.strip().isdigit():
        return rest.strip(), ""
    if kind == "NONE":
        return None, f"Slurm on {shell.where} knows no job named {name}"
    return None, f"Slurm on {shell.where} could not be asked: {rest or 'no answer'}"


def follow(shell: Shell, job: dict, until_done: bool, follow: bool) -> int | None:
    """Print the driver log (as it grows when following); the exit code when done.

    Raises LostContact when the stream ends or goes quiet before the job's end, or when Slurm
    has not answered for STEPS_SILENT_SECONDS."""
    values = {**_common(shell), **_job_vars(job)}
    values.update(UNTIL_DONE="1" if until_done else "0", FOLLOW="1" if follow else "0")
    # The remote loop speaks at least once per poll plus its Slurm calls.
    quiet = 3 * float(values["CALL"]) + float(values["POLL"]) + 30
    stream = shell.stream(_assign(values) + FUNCTIONS + FOLLOW)
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    try:
        while True:
            try:
                raw = stream.line(quiet)
                if raw is not None and raw.startswith(LOG_MARK.encode()):
                    raw_data = stream.exactly(int(raw.split()[1]), quiet)
                    if raw_data is not None:
                        sys.stdout.write(decode(raw_data))
                        sys.stdout.flush()
                        continue
                    raw = None
            except TimeoutError:
                raise LostContact(shell.where, f"no word for {quiet:g} s") from None
            if raw is None:
                try:
                    code = stream.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = None
                why = stream.stderr_tail() or f"the stream ended (exit status {code})"
                raise LostContact(shell.where, why)
            text = raw.decode("utf-8", "replace")
            mark, _, rest = text.partition(" ")
            if mark == STATE_MARK and until_done:
                shown = rest.split()[0] if not rest.startswith(UNKNOWN) else rest
                shown = shown.replace(" - ", ": ", 1)
                print(f"job {job['job_id']}: {shown}", file=sys.stderr, flush=True)
            elif mark == LOST_MARK:
                why = rest.removeprefix(f"{UNKNOWN} - ")
                raise LostContact(f"Slurm on {shell.where}", f"{why}, for {values['SILENT']} s")
            elif mark == END_MARK:
                state, _, code = rest.partition(" ")
                if state != UNKNOWN:
                    job.update(state=state, exit_code=exit_code_of(state, code))
                return job.get("exit_code") if state in TERMINAL else None
    finally:
        sys.stdout.write(decode(b"", final=True))
        stream.close()
