#!/usr/bin/env bash
# A throw-away one-node Slurm cluster for the tests (Debian slurm-wlm 22.05+), no systemd needed.
#   slurm-local.sh up|down|env      (SLURM_LAB=DIR holds config, state, logs and PID files)
# Knobs: SLURM_LAB_GPUS=8 (fake gres/gpu: /dev/null symlinks), SLURM_LAB_PARTITIONS="debug",
#        SLURM_LAB_CTLD_PORT=6817, SLURM_LAB_SLURMD_PORT=6818.
# auth/none when the plugin exists (Debian ships it), else munge with a private key and socket.
set -euo pipefail
LAB=${SLURM_LAB:?set SLURM_LAB}
GPUS=${SLURM_LAB_GPUS:-8}
PARTITIONS=${SLURM_LAB_PARTITIONS:-debug}
CONF=$LAB/etc/slurm.conf
NODE=$(hostname -s)
export SLURM_CONF=$CONF

ours() { case $(ps -o comm= -p "$1" 2>/dev/null) in slurmctld|slurmd|munged) return 0 ;; *) return 1 ;; esac; }
alive() { [[ -f $1 ]] && ours "$(cat "$1")"; }

plugin_dir() {
  local d
  for d in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/aarch64-linux-gnu/slurm-wlm /usr/lib/slurm /usr/lib64/slurm; do
    [[ -d $d ]] && { echo "$d"; return; }
  done
}

write_conf() {
  local pdir auth=none first=1 p gres_line="" gres_types=""
  pdir=$(plugin_dir)
  [[ -e $pdir/auth_none.so && -e $pdir/cred_none.so ]] || auth=munge
  echo "$auth" > "$LAB/run/auth_mode"
  if (( GPUS > 0 )); then
    gres_types="GresTypes=gpu"; gres_line="Gres=gpu:$GPUS"
    mkdir -p "$LAB/dev"
    for ((i = 0; i < GPUS; i++)); do ln -sfn /dev/null "$LAB/dev/nvidia$i"; done
    printf 'AutoDetect=off\nNodeName=%s Name=gpu File=%s/dev/nvidia[0-%d]\n' "$NODE" "$LAB" $((GPUS - 1)) > "$LAB/etc/gres.conf"
  fi
  cat > "$CONF" <<CONF
ClusterName=stepslab
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/$auth
CredType=cred/$auth
$([[ $auth == munge ]] && echo "AuthInfo=socket=$LAB/munge/munge.socket.2")
SlurmctldPort=${SLURM_LAB_CTLD_PORT:-6817}
SlurmdPort=${SLURM_LAB_SLURMD_PORT:-6818}
StateSaveLocation=$LAB/state
SlurmdSpoolDir=$LAB/spool
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmdPidFile=$LAB/run/slurmd.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LAB/log/jobcomp.txt
MpiDefault=none
ReturnToService=2
EnforcePartLimits=ALL
MinJobAge=600
KillWait=2
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
$gres_types
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1024 $gres_line State=UNKNOWN
CONF
  for p in $PARTITIONS; do
    if (( first )); then d=YES; first=0; else d=NO; fi
    echo "PartitionName=$p Nodes=ALL Default=$d MaxTime=INFINITE State=UP OverSubscribe=FORCE:4" >> "$CONF"
  done
}

up() {
  if alive "$LAB/run/slurmctld.pid" && alive "$LAB/run/slurmd.pid"; then return 0; fi
  down
  rm -rf "$LAB/state" "$LAB/spool" "$LAB/log"
  mkdir -p "$LAB"/{etc,state,spool,log,run}
  write_conf
  if [[ $(cat "$LAB/run/auth_mode") == munge ]]; then
    mkdir -p "$LAB/munge"; chmod 700 "$LAB/munge"
    head -c 1024 /dev/urandom > "$LAB/munge/munge.key"; chmod 400 "$LAB/munge/munge.key"
    munged --force --socket="$LAB/munge/munge.socket.2" --key-file="$LAB/munge/munge.key" \
      --pid-file="$LAB/run/munged.pid" --log-file="$LAB/log/munged.log" --seed-file="$LAB/munge/seed"
  fi
  slurmctld -i -f "$CONF"
  slurmd -f "$CONF" -N "$NODE"
  local i state=""
  for ((i = 0; i < 150; i++)); do
    state=$(sinfo -h -n "$NODE" -o '%t' 2>/dev/null | head -1 || true)
    case $state in
      idle) return 0 ;;
      drain*|inval*|down*) scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
    esac
    sleep 0.2
  done
  echo "slurm-local: node did not become idle (state '$state')" >&2
  tail -n 20 "$LAB/log/slurmctld.log" "$LAB/log/slurmd.log" >&2 || true
  exit 1
}

stop_pids() {
  local f pid pids=() i left
  for f in "$@"; do
    [[ -f $f ]] || continue
    pid=$(cat "$f"); rm -f "$f"
    ours "$pid" && { kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); }
  done
  for ((i = 0; i < 100; i++)); do
    left=0; for pid in "${pids[@]}"; do ours "$pid" && left=1; done
    (( left )) || return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do ours "$pid" && kill -KILL "$pid" 2>/dev/null || true; done
}

down() {
  local i
  if alive "$LAB/run/slurmctld.pid"; then
    # slurmd leaves running jobs behind when it stops: cancel them and wait first.
    squeue -h -o '%A' 2>/dev/null | xargs -r scancel 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      [[ -z $(squeue -h -t R,CG,S -o '%A' 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  stop_pids "$LAB/run/slurmd.pid" "$LAB/run/slurmctld.pid"
  stop_pids "$LAB/run/munged.pid"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
