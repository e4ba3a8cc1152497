#!/usr/bin/env bash
# A throw-away one-node Slurm cluster for the tests (Debian slurm-wlm 22.05+), no systemd needed.
#   slurm-local.sh up|down|env      (SLURM_LAB=DIR holds config, state, logs and PID files)
# Knobs: SLURM_LAB_GPUS=8 (fake gres/gpu: /dev/null symlinks), SLURM_LAB_PARTITIONS="debug" (plus
# `urgent`, whose jobs preempt the others' when they need the same resources),
#        SLURM_LAB_CTLD_PORT=6817, SLURM_LAB_SLURMD_PORT=6818,
#        SLURM_LAB_ACCOUNTING=auto|0 (auto: slurmdbd + a private MariaDB when both are installed,
#        so `sacct` answers as on a real cluster; `env` prints SLURM_LAB_ACCOUNTING=1 when on),
#        SLURM_LAB_DBD_PORT=6819, SLURM_LAB_DB_PORT=3307.
# auth/none when the plugin exists (Debian ships it), else munge with a private key and socket.
set -Eeuo pipefail
# A step that fails says which, with the logs that say why (set -e alone exits without a word).
trap 'rc=$?; echo "slurm-local: line $LINENO: \"$BASH_COMMAND\" exited $rc" >&2; tail -n 15 "$LAB"/log/*.log >&2 2>/dev/null || true; exit $rc' ERR
LAB=${SLURM_LAB:?set SLURM_LAB}
GPUS=${SLURM_LAB_GPUS:-8}
PARTITIONS=${SLURM_LAB_PARTITIONS:-debug}
CONF=$LAB/etc/slurm.conf
NODE=$(hostname -s)
export SLURM_CONF=$CONF

# A live daemon of ours; a zombie is gone (the container's init may reap it seconds later).
ours() {
  local st comm
  read -r st comm < <(ps -o stat=,comm= -p "$1" 2>/dev/null || true)
  [[ $st != Z* ]] || return 1
  case $comm in slurmctld|slurmd|munged|slurmdbd|mariadbd|mysqld) return 0 ;; *) return 1 ;; esac
}
DB_PORT=${SLURM_LAB_DB_PORT:-3307}
DBD_PORT=${SLURM_LAB_DBD_PORT:-6819}

accounting_wanted() {
  [[ ${SLURM_LAB_ACCOUNTING:-auto} != 0 ]] && command -v slurmdbd >/dev/null && command -v sacctmgr >/dev/null \
    && command -v mariadb-install-db >/dev/null && { command -v mariadbd || [[ -x /usr/sbin/mariadbd ]]; } >/dev/null
}
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
  if accounting_wanted; then touch "$LAB/run/accounting"; fi
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
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
JobAcctGatherType=jobacct_gather/none
$(if [[ -f $LAB/run/accounting ]]; then
    printf 'AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\nAccountingStoragePort=%s\n' "$DBD_PORT"
  else echo "AccountingStorageType=accounting_storage/none"; fi)
JobCompType=jobcomp/filetxt
JobCompLoc=$LAB/log/jobcomp.txt
MpiDefault=none
ReturnToService=2
EnforcePartLimits=ALL
MinJobAge=600
KillWait=2
# Pending jobs are looked at every second, not every 30 s (backfill) or 60 s (main loop): a job
# whose --begin time came (a chain's re-check, a test's delayed start) starts then.
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,sched_interval=1,bf_interval=1
$gres_types
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1024 $gres_line State=UNKNOWN
CONF
  for p in $PARTITIONS; do
    if (( first )); then d=YES; first=0; else d=NO; fi
    echo "PartitionName=$p Nodes=ALL Default=$d MaxTime=INFINITE State=UP OverSubscribe=FORCE:4" >> "$CONF"
  done
  # Real preemption: a job in `urgent` that needs what a running job holds (the GPU) preempts it.
  echo "PartitionName=urgent Nodes=ALL Default=NO MaxTime=INFINITE State=UP OverSubscribe=FORCE:4 PriorityTier=10" >> "$CONF"
}

up() {
  if alive "$LAB/run/slurmctld.pid" && alive "$LAB/run/slurmd.pid"; then return 0; fi
  down
  rm -rf "$LAB/state" "$LAB/spool" "$LAB/log" "$LAB/mysql" "$LAB/run/accounting"
  mkdir -p "$LAB"/{etc,state,spool,log,run}
  write_conf
  if [[ $(cat "$LAB/run/auth_mode") == munge ]]; then
    mkdir -p "$LAB/munge"; chmod 700 "$LAB/munge"
    head -c 1024 /dev/urandom > "$LAB/munge/munge.key"; chmod 400 "$LAB/munge/munge.key"
    munged --force --socket="$LAB/munge/munge.socket.2" --key-file="$LAB/munge/munge.key" \
      --pid-file="$LAB/run/munged.pid" --log-file="$LAB/log/munged.log" --seed-file="$LAB/munge/seed"
  fi
  if [[ -f $LAB/run/accounting ]]; then start_accounting; fi
  slurmctld -i -f "$CONF"
  slurmd -f "$CONF" -N "$NODE"
  local i state=""
  # Bounds are generous: labs, MariaDBs and Ray heads may all be starting on two busy cores.
  for ((i = 0; i < 300; i++)); do
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

INNODB="--innodb-buffer-pool-size=32M --innodb-log-file-size=8M"

# An empty data dir (root without a password), made once per MariaDB build and user and copied
# for each lab: mariadb-install-db costs seconds of CPU, and a lab starts per pytest worker.
# Made aside and renamed under a lock: a template that exists is complete. Prints its path.
db_template() {
  local tpl
  tpl=${TMPDIR:-/tmp}/steps-lab-mariadb-$(id -u)-$("$1" --version | cksum | cut -d' ' -f1)
  (
    flock 9
    if [[ ! -d $tpl ]]; then
      rm -rf "$tpl.new"; mkdir -p "$tpl.new.tmp"
      mariadb-install-db --no-defaults --user=root --datadir="$tpl.new" --tmpdir="$tpl.new.tmp" $INNODB \
        --auth-root-authentication-method=normal --skip-test-db >"$LAB/log/mariadb-install.log" 2>&1
      rm -rf "$tpl.new.tmp"; mv "$tpl.new" "$tpl"
    fi
  ) 9>"$tpl.lock"
  echo "$tpl"
}

# A private MariaDB (TCP on 127.0.0.1, root without a password: a throw-away lab) and a slurmdbd
# that stores this lab's jobs in it; the cluster is registered before slurmctld starts.
start_accounting() {
  local db=$LAB/mysql i auth=$(cat "$LAB/run/auth_mode") mariadbd
  mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)
  # Its own tmpdir: labs started side by side (one per pytest worker) crash each other's Aria
  # temporary tables when they share /tmp.
  mkdir -p "$db/tmp"
  cp -a "$(db_template "$mariadbd")" "$db/data"
  "$mariadbd" --no-defaults --user=root --datadir="$db/data" --tmpdir="$db/tmp" $INNODB \
    --bind-address=127.0.0.1 --port="$DB_PORT" --socket="$db/mysqld.sock" --skip-name-resolve \
    --pid-file="$LAB/run/mariadbd.pid" --log-error="$LAB/log/mariadbd.log" --skip-log-bin &
  cat > "$LAB/etc/slurmdbd.conf" <<DBD
AuthType=auth/$auth
$([[ $auth == munge ]] && echo "AuthInfo=socket=$LAB/munge/munge.socket.2")
DbdAddr=127.0.0.1
DbdHost=$NODE
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$LAB/run/slurmdbd.pid
LogFile=$LAB/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=root
StorageLoc=slurm_acct_db
DBD
  chmod 600 "$LAB/etc/slurmdbd.conf"
  for ((i = 0; i < 600; i++)); do [[ -S $db/mysqld.sock ]] && break; sleep 0.1; done
  SLURM_CONF=$CONF slurmdbd 2>>"$LAB/log/slurmdbd.log"  # reads slurmdbd.conf beside slurm.conf
  for ((i = 0; i < 300; i++)); do
    sacctmgr -i add cluster stepslab >/dev/null 2>&1 && return 0
    sacctmgr -n list cluster format=cluster 2>/dev/null | grep -q stepslab && return 0
    sleep 0.2
  done
  echo "slurm-local: slurmdbd did not answer" >&2; tail -n 20 "$LAB/log/slurmdbd.log" "$LAB/log/mariadbd.log" >&2 || true
  exit 1
}

stop_pids() {  # SIGNAL PIDFILE...
  local sig=$1 f pid pids=() i left
  shift
  for f in "$@"; do
    [[ -f $f ]] || continue
    pid=$(cat "$f"); rm -f "$f"
    ours "$pid" && { kill "-$sig" "$pid" 2>/dev/null || true; pids+=("$pid"); }
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
  # all at once: a throw-away lab needs no ordered shutdown (slurmctld's last records may be lost)
  # nor slurmctld's saved state, which its SIGTERM takes ~2 s to write
  stop_pids KILL "$LAB/run/slurmctld.pid"
  stop_pids TERM "$LAB/run/slurmd.pid" "$LAB/run/slurmdbd.pid" "$LAB/run/mariadbd.pid"
  stop_pids TERM "$LAB/run/munged.pid"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  env) echo "export SLURM_CONF=$CONF"; [[ -f $LAB/run/accounting ]] && echo "export SLURM_LAB_ACCOUNTING=1"; true ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
