#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for trying `privalign slurm` and for
# its real-Slurm test (tests/it/slurm_real.rs, run by .ci/run).
#
#   scripts/slurm-local.sh start    install what is missing, write slurm.conf, start
#                                   munged, slurmctld and slurmd, wait until the node is idle
#   scripts/slurm-local.sh stop     stop the daemons this script started (by their pid files)
#   scripts/slurm-local.sh status   which daemons run, and `sinfo`
#   scripts/slurm-local.sh env      print `export SLURM_CONF=...` for the client commands
#
# Needs root (the daemons run as root, without systemd). Installs Debian's
# `slurm-wlm` and `munge` with --no-install-recommends when they are missing.
# Everything it writes — slurm.conf, state, spool, logs, pid files — lives under
# one scratch directory, $PRIVALIGN_SLURM_DIR (default /tmp/privalign-slurm);
# only munged's socket is at its default place, /run/munge, where Slurm's
# auth/munge plugin looks for it. The client commands (sbatch, squeue, ...)
# need SLURM_CONF=$PRIVALIGN_SLURM_DIR/slurm.conf (see `env`).
#
# Why each setting (found by trying, slurm 22.05 on Debian 12):
#   ProctrackType=proctrack/linuxproc, TaskPlugin=task/none  no cgroup setup needed
#   MailProg=/bin/true                 slurmctld refuses to start without a valid one
#   SchedulerParameters=batch_sched_delay=0   else each job waits ~3 s before it starts
#   DependencyParameters=kill_invalid_depend  else a merge job whose array failed stays
#                                      pending forever (and a test waiting for it hangs)
#   RealMemory below `free -m`         else slurmd reports less than configured and the
#                                      node is drained
set -euo pipefail

DIR=${PRIVALIGN_SLURM_DIR:-/tmp/privalign-slurm}
CONF=$DIR/slurm.conf
CTLD_PORT=${PRIVALIGN_SLURM_PORT:-6817}
MUNGE_RUN=/run/munge

die() { echo "slurm-local: $*" >&2; exit 1; }
say() { echo "slurm-local: $*" >&2; }

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_missing() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
        command -v sbatch >/dev/null && command -v munged >/dev/null; then
        return
    fi
    command -v apt-get >/dev/null || die "slurm-wlm and munge are not installed and there is no apt-get; install them with your package manager"
    say "installing slurm-wlm and munge (apt-get, --no-install-recommends)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null
}

write_conf() {
    local host cpus mem
    host=$(hostname -s)
    cpus=$(nproc)
    # 80 % of the total memory `free -m` reports: slurmd drains a node that has
    # less memory than configured.
    mem=$(free -m | awk '/^Mem:/ { printf "%d", $2 * 0.8 }')
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    cat >"$CONF.tmp" <<EOF
# Written by scripts/slurm-local.sh for host $host; regenerated on every start.
ClusterName=privalign-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$((CTLD_PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0
DependencyParameters=kill_invalid_depend
ReturnToService=2
MinJobAge=600
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$CONF.tmp" "$CONF"
}

start_munge() {
    if [[ -S $MUNGE_RUN/munge.socket.2 ]] && munge -n </dev/null >/dev/null 2>&1; then
        return # a munged already answers (ours or the system's)
    fi
    [[ -f /etc/munge/munge.key ]] || {
        say "creating /etc/munge/munge.key"
        mungekey --create --keyfile=/etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key
        chmod 600 /etc/munge/munge.key
    }
    # /run/munge must exist, owned by munge, before munged starts.
    mkdir -p "$MUNGE_RUN" "$DIR/munge"
    chown munge:munge "$MUNGE_RUN" "$DIR/munge"
    chmod 755 "$MUNGE_RUN"
    chmod 700 "$DIR/munge"
    runuser -u munge -- munged --pid-file="$DIR/munge/munged.pid" \
        --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed"
    for _ in $(seq 50); do
        munge -n </dev/null >/dev/null 2>&1 && return
        sleep 0.1
    done
    die "munged did not answer; see $DIR/munge/munged.log"
}

node_state() {
    SLURM_CONF=$CONF sinfo -h -N -o '%T' 2>/dev/null | head -1
}

start() {
    [[ $(id -u) == 0 ]] || die "needs root: the Slurm daemons run as root (try sudo $0 start)"
    install_missing
    if alive "$DIR/slurmctld.pid" && alive "$DIR/slurmd.pid" && [[ $(node_state) == idle* || $(node_state) == mixed* || $(node_state) == allocated* ]]; then
        say "already running (SLURM_CONF=$CONF)"
        return
    fi
    stop_daemons quiet
    write_conf
    start_munge
    # -c: a fresh cluster every start (no jobs recovered from a previous one).
    slurmctld -c -f "$CONF" || die "slurmctld did not start; see $DIR/log/slurmctld.log"
    slurmd -f "$CONF" || die "slurmd did not start; see $DIR/log/slurmd.log"
    local state=""
    for _ in $(seq 300); do
        state=$(node_state)
        [[ $state == idle* ]] && break
        sleep 0.1
    done
    [[ $state == idle* ]] || {
        SLURM_CONF=$CONF sinfo -N -l >&2 || true
        tail -5 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
        die "node $(hostname -s) is not idle after 30 s (state: ${state:-none})"
    }
    say "running: node $(hostname -s) idle, $(nproc) CPUs; export SLURM_CONF=$CONF"
}

# Stop the daemons by their pid files: slurmd, slurmctld, then munged (only
# the munged this script started).
stop_daemons() {
    local quiet=${1:-}
    for pf in "$DIR/slurmd.pid" "$DIR/slurmctld.pid" "$DIR/munge/munged.pid"; do
        if alive "$pf"; then
            local pid
            pid=$(cat "$pf")
            kill "$pid"
            for _ in $(seq 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            if kill -0 "$pid" 2>/dev/null; then
                kill -9 "$pid" 2>/dev/null || true
            fi
            [[ -n $quiet ]] || say "stopped $(basename "$pf" .pid) (pid $pid)"
        fi
        rm -f "$pf"
    done
}

status() {
    local pf
    for pf in "$DIR/munge/munged.pid" "$DIR/slurmctld.pid" "$DIR/slurmd.pid"; do
        if alive "$pf"; then
            echo "$(basename "$pf" .pid): running (pid $(cat "$pf"))"
        else
            echo "$(basename "$pf" .pid): not running"
        fi
    done
    [[ -f $CONF ]] && SLURM_CONF=$CONF sinfo -N 2>/dev/null || true
}

case ${1:-} in
start) start ;;
stop) stop_daemons ;;
status) status ;;
env) echo "export SLURM_CONF=$CONF" ;;
*)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
