# shellcheck shell=bash
# Shared helpers for the real-peer scripts. Source it, do not run it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Gives: logging, a cleanup registry run from an EXIT trap (processes by their own pid/process group,
# files, directories), waiting helpers, and a testpmd "session": testpmd in interactive mode reading its
# commands from a FIFO that this shell holds open, output line-buffered into a log so that the script can
# wait for markers and parse the final statistics.

# shellcheck disable=SC2034 # used by the scripts that source this file
PEERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PEERS_CACHE="${PEERS_CACHE:-/var/cache/virtio4j-peers}"
PEERS_ME="$(basename "$0" .sh)"

peers_log() { printf '[%s %s] %s\n' "$PEERS_ME" "$(date +%T.%3N)" "$*" >&2; }
peers_die() { peers_log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------------------------------------- cleanup
# Everything registered here is undone on exit, in reverse order, whatever the exit path.
PEERS_CLEAN_PGIDS=()   # process groups we created (setsid), killed TERM then KILL
PEERS_CLEAN_PATHS=()   # files/dirs removed with rm -rf
PEERS_CLEAN_HOOKS=()   # function names called first (graceful stops)
PEERS_CLEANED=0

peers_cleanup() {
  local rc=$? i pg t
  [ "$PEERS_CLEANED" = 1 ] && return "$rc"
  PEERS_CLEANED=1
  set +e
  for ((i = ${#PEERS_CLEAN_HOOKS[@]} - 1; i >= 0; i--)); do "${PEERS_CLEAN_HOOKS[i]}"; done
  for pg in "${PEERS_CLEAN_PGIDS[@]}"; do
    kill -0 -- "-$pg" 2>/dev/null && kill -TERM -- "-$pg" 2>/dev/null
  done
  for pg in "${PEERS_CLEAN_PGIDS[@]}"; do
    for t in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
      kill -0 -- "-$pg" 2>/dev/null || break
      sleep 0.1
      [ "$t" = 20 ] && kill -KILL -- "-$pg" 2>/dev/null
    done
  done
  for ((i = ${#PEERS_CLEAN_PATHS[@]} - 1; i >= 0; i--)); do rm -rf -- "${PEERS_CLEAN_PATHS[i]}"; done
  return "$rc"
}
peers_on_exit_kill_group() { PEERS_CLEAN_PGIDS+=("$1"); }
peers_on_exit_rm() { PEERS_CLEAN_PATHS+=("$@"); }
peers_on_exit_call() { PEERS_CLEAN_HOOKS+=("$1"); }
trap peers_cleanup EXIT
# set -e exits silently: say where
trap 'peers_log "failed (status $?) at line $LINENO: $BASH_COMMAND"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM
trap '' PIPE   # a peer that died must not kill us through a FIFO write: we see EPIPE instead

# Start "$@" in its own session/process group, in the background, registered for cleanup.
# Sets PEERS_LAST_PID (== its pgid). Redirections: stdin from $PEERS_STDIN (default /dev/null),
# stdout+stderr to $PEERS_LOG (default /dev/null).
peers_spawn() {
  setsid "$@" <"${PEERS_STDIN:-/dev/null}" >"${PEERS_LOG:-/dev/null}" 2>&1 &
  PEERS_LAST_PID=$!
  peers_on_exit_kill_group "$PEERS_LAST_PID"
}

# Wait for a process (not our child necessarily) to end, up to $2 seconds (fractions ok). 0 if it ended.
peers_wait_gone() {
  local pid=$1 deadline
  deadline=$(($(date +%s%N) + ${2%.*} * 1000000000))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$(date +%s%N)" -ge "$deadline" ] && return 1
    sleep 0.1
  done
  return 0
}

# Terminate a process group gracefully: SIGNAL (default INT) to the leader, then TERM/KILL to the group.
peers_stop_group() {
  local pg=$1 grace=${2:-10} sig=${3:-INT}
  kill -0 "$pg" 2>/dev/null || return 0
  kill "-$sig" "$pg" 2>/dev/null || true
  peers_wait_gone "$pg" "$grace" && return 0
  kill -TERM -- "-$pg" 2>/dev/null || true
  peers_wait_gone "$pg" 3 && return 0
  kill -KILL -- "-$pg" 2>/dev/null || true
}

# Wait until $1 is a unix socket, up to $2 seconds; optional $3: pid that must stay alive meanwhile.
peers_wait_socket() {
  local sock=$1 secs=$2 pid=${3:-} deadline
  deadline=$(($(date +%s) + secs))
  while [ ! -S "$sock" ]; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 2; fi
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# CPU time (clock ticks, user+system, all threads) of one process, or of a process tree: tells how
# much CPU a spinning peer actually got while other load shares the machine.
peers_cputicks() {
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# A process's state letter over all its threads (/proc/PID/task/*/stat): T only when every thread is stopped or ended
# (T, t, Z, X) and one is stopped, Z when all ended, else the state of a thread still running or able to (R, S, D...).
# /proc/PID/stat shows the leader thread alone: a JVM's other threads, or a leader that exited before them, would make
# a process that still runs read as stopped or ended. Empty when the process is gone.
peers_proc_state() {
  { cat "/proc/$1"/task/[0-9]*/stat 2>/dev/null || true; } |
    awk '{ sub(/^.*\) /, ""); n++; if ($1 ~ /^[TtZX]$/) { if ($1 ~ /^[Tt]$/) t = 1 } else if (run == "") run = $1 }
      END { if (n) print (run != "" ? run : t ? "T" : "Z") }'
}
# A process and all its descendants, which may have sessions and process groups of their own (testpmd-vhost.sh starts
# testpmd with setsid), one line each: "PID PPID PGID STATE TICKS STARTTIME" (/proc/PID/stat: user+system clock ticks
# of all threads, start time in ticks since boot, which tells a process from a later one given the same PID; the state
# letter is peers_proc_state's, over every thread).
peers_tree() {
  local pid ppid pg st ticks start now
  # processes come and go while we read: cat's failure on a vanished one must not fail the pipeline
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } |
    awk -v root="$1" '{ pid = $1; sub(/^.*\) /, ""); pp[pid] = $2; l[pid] = pid " " $2 " " $3 " " $1 " " ($12 + $13) " " $20 }
      END { for (p in l) { q = p; while (q != "" && q != 0 && q != root) q = pp[q]; if (q == root) print l[p] } }' |
    while read -r pid ppid pg st ticks start; do
      now=$(peers_proc_state "$pid")
      echo "$pid $ppid $pg ${now:-X} $ticks $start"   # X: gone since the first read
    done
}
peers_tree_cputicks() { peers_tree "$1" | awk '{ s += $5 } END { print s + 0 }'; }
# SIGNAL to every process group of the tree under $2 (a group of ours: a descendant's group lies in a session that we
# or one of its ancestors created).
peers_tree_signal() {
  local pg
  for pg in $(peers_tree "$2" | awk '{ print $3 }' | sort -u); do kill "-$1" -- "-$pg" 2>/dev/null || true; done
}
# SIGKILL to whatever still lives of the processes listed in $1 (peers_tree lines), each only if it is still the
# process that was listed (same start time): what a back-end's stop left behind, in groups the stop did not reach.
peers_tree_kill_left() {
  local pid ppid pg st ticks start now
  while read -r pid ppid pg st ticks start; do
    [ -n "$start" ] || continue
    # its state (over all threads) and start time now; an ended process (Z, waiting to be reaped) runs no more
    now=$(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$pid/stat" 2>/dev/null) || continue
    case $(peers_proc_state "$pid") in Z | X | '') continue ;; esac
    if [ "$now" = "$start" ]; then
      peers_log "killing pid $pid, left running after its back-end stopped"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done < <(sort -u -k1,1 <<<"$1")
}
peers_clk_tck() { getconf CLK_TCK; }

# ------------------------------------------------------------------------------ measuring: probe and load
# The cache-line ping-pong probe (pingpong.c: median round trip in ns between two CPUs; ~165 "near" / ~680 "far" on
# this kind of VM, see shared/docs/measuring.md), built once into the cache with gcc; without gcc it reads "na".
PEERS_PROBE_BIN="$PEERS_CACHE/bin/pingpong"
peers_probe_build() {
  if [ ! -x "$PEERS_PROBE_BIN" ] || [ "$PEERS_DIR/pingpong.c" -nt "$PEERS_PROBE_BIN" ]; then
    if command -v gcc >/dev/null; then
      mkdir -p "$PEERS_CACHE/bin"
      # a name of our own, then a rename: another script may build it at the same moment
      gcc -O2 -pthread -o "$PEERS_PROBE_BIN.$$" "$PEERS_DIR/pingpong.c" && mv "$PEERS_PROBE_BIN.$$" "$PEERS_PROBE_BIN"
    fi
  fi
}
peers_probe() { if [ -x "$PEERS_PROBE_BIN" ]; then "$PEERS_PROBE_BIN" "$1" "$2" 100000; else echo na; fi; }   # CPU_A CPU_B

# % of both CPUs busy over one second (call it while nothing of ours runs: it measures the other load).
peers_busy_pct() {
  local a b
  a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
  sleep 1
  b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); u = y[1] - x[1]; i = y[2] - x[2];
    printf "%.0f", ((u + i) > 0 ? 100 * u / (u + i) : 0) }'
}

# peers_busy_wait [PCT [TIMEOUT]]: echoes peers_busy_pct; with PCT, samples again while the machine is more than PCT %
# busy, for up to TIMEOUT seconds (default 120; then it gives up and echoes the last sample).
peers_busy_wait() {
  local pct=${1:-} timeout=${2:-120} b deadline
  b=$(peers_busy_pct)
  if [ -n "$pct" ] && [ "$b" -gt "$pct" ]; then
    deadline=$(($(date +%s) + timeout))
    while [ "$b" -gt "$pct" ] && [ "$(date +%s)" -lt "$deadline" ]; do b=$(peers_busy_pct); done
  fi
  echo "$b"
}

# Seconds (float) since the epoch, for timing.
peers_now() { date +%s.%N; }
# seconds from peers_now time $1 to $2 (default: now)
peers_elapsed() { awk -v a="$1" -v b="${2:-$(peers_now)}" 'BEGIN { printf "%.2f", b - a }'; }

# ----------------------------------------------------------------------------------------- hugepages
peers_hugepages_free() { awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo; }
peers_hugepages_mounted() { awk '$3 == "hugetlbfs" { f = 1 } END { exit !f }' /proc/mounts; }

# EAL memory arguments. Default: 2 MiB hugepages, in memory (--in-memory: no hugepage files and no
# /var/run/dpdk state to clean up), one file descriptor per segment list (--single-file-segments:
# otherwise virtio-user fails with "Too many memory regions"). PEERS_NO_HUGE=1 forces --no-huge
# (DPDK 22.11 then backs memory with a memfd, which virtio-user can still share), and that is also the
# fallback, with a warning, when too few hugepages are free (PEERS_NO_HUGE=0 makes that an error).
peers_eal_mem_args() {
  local mb=${1:-256} free need
  need=$(((mb + 1) / 2))
  if [ "${PEERS_NO_HUGE:-auto}" != 1 ]; then
    free=0
    peers_hugepages_mounted && free=$(peers_hugepages_free)
    if [ "${free:-0}" -ge "$need" ]; then
      echo "--in-memory --single-file-segments -m $mb"
      return
    fi
    [ "${PEERS_NO_HUGE:-auto}" = 0 ] &&
      peers_die "need $need free 2 MiB hugepages (and hugetlbfs mounted), have ${free:-0}: run peers/install.sh hugepages"
    peers_log "WARNING: only ${free:-0} free hugepages (need $need): running with --no-huge (peers/install.sh hugepages reserves them)"
  fi
  echo "--no-huge --no-shconf -m $mb"
}

# ------------------------------------------------------------------------------------ testpmd session
# tp_open DIR LOG -- testpmd args...  Starts `dpdk-testpmd args... -i` reading a FIFO. One session per
# shell (globals TP_*). stdout is line-buffered (stdbuf) so markers appear in the log in order.
TP_PID=
TP_FD=
TP_LOG=
TP_FIFO=
tp_open() {
  local dir=$1 log=$2
  shift 3
  TP_FIFO="$dir/testpmd.cmd"
  TP_LOG=$log
  rm -f "$TP_FIFO"
  mkfifo "$TP_FIFO"
  peers_on_exit_rm "$TP_FIFO"
  : >"$TP_LOG"
  PEERS_STDIN=$TP_FIFO PEERS_LOG=$TP_LOG peers_spawn stdbuf -oL -eL dpdk-testpmd "$@"
  TP_PID=$PEERS_LAST_PID
  exec {TP_FD}>"$TP_FIFO"
  peers_log "testpmd pid $TP_PID: dpdk-testpmd $*"
}

# Send one command line to testpmd. Fails (without dying) if testpmd is gone.
tp_cmd() {
  [ -n "$TP_FD" ] || return 1
  { printf '%s\n' "$*" >&"$TP_FD"; } 2>/dev/null
}

# Count lines of the log matching an ERE.
tp_count() { grep -cE -- "$1" "$TP_LOG" || true; }

# Wait until the log has at least $2 lines matching ERE $1, up to $3 seconds. 1 on timeout, 2 if
# testpmd died.
tp_wait_count() {
  local re=$1 n=$2 secs=$3 deadline
  deadline=$(($(date +%s%N) + ${secs%.*} * 1000000000))
  while [ "$(tp_count "$re")" -lt "$n" ]; do
    kill -0 "$TP_PID" 2>/dev/null || return 2
    [ "$(date +%s%N)" -ge "$deadline" ] && return 1
    sleep 0.05
  done
}

# Barrier: returns once testpmd has executed every command sent before. testpmd's command line reads and
# echoes its input one character at a time and runs each line when it reaches its newline, so the echo
# of a comment line sent now appears only after all earlier commands have completed.
TP_SYNC_N=0
tp_sync() {
  TP_SYNC_N=$((TP_SYNC_N + 1))
  local tag="# v4j-sync-$$-$TP_SYNC_N"
  tp_cmd "$tag" || return 2
  local deadline
  deadline=$(($(date +%s) + ${1:-30}))
  until grep -qF -- "$tag" "$TP_LOG"; do
    kill -0 "$TP_PID" 2>/dev/null || return 2
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.05
  done
}

# Wait for the interactive prompt after start-up (the port is configured and started then).
tp_wait_ready() {
  local rc=0
  tp_wait_count '^testpmd> ' 1 "${1:-60}" || rc=$?
  case $rc in
    0) ;;
    2) tail -n 30 "$TP_LOG" >&2; peers_die "testpmd exited during start-up (log: $TP_LOG)" ;;
    *) tail -n 30 "$TP_LOG" >&2; peers_die "testpmd not ready within ${1:-60}s (log: $TP_LOG)" ;;
  esac
  if grep -qE 'EAL: Error|Fail to start port|Fail to configure port|Failed to probe|error allocating' "$TP_LOG"; then
    tail -n 30 "$TP_LOG" >&2
    peers_die "testpmd reported an error during start-up (log: $TP_LOG)"
  fi
}

# Ask for "show port stats 0" and wait until its block is complete; echoes the block number (1-based).
tp_show_stats() {
  local n
  n=$(($(tp_count 'Throughput \(since last show\)') + 1))
  tp_cmd "show port stats 0" || return 1
  tp_wait_count '^  Tx-pps:' "$n" "${1:-10}" || return 1
  echo "$n"
}

# Wait until the link of port 0 is up (virtio-user in server mode, or a backend waiting for its front-end).
tp_wait_link_up() {
  local secs=$1 deadline n
  deadline=$(($(date +%s) + secs))
  while :; do
    n=$(($(tp_count '^Link status: ') + 1))
    tp_cmd "show port info 0" || return 2
    tp_wait_count '^Link status: ' "$n" 10 || return 2
    [ "$(grep -E '^Link status: ' "$TP_LOG" | tail -n 1 | awk '{ print $3 }')" = up ] && return 0
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}

# Stop forwarding, wait for the accumulated forward statistics.
tp_stop_fwd() {
  local n
  n=$(($(tp_count 'Accumulated forward statistics') + 1))
  tp_cmd stop || return 1
  tp_wait_count 'Accumulated forward statistics|Packet forwarding not started' "$n" "${1:-10}"
}

# Quit testpmd and wait for it to exit (it stops and closes its ports).
tp_quit() {
  tp_cmd quit || true
  if [ -n "$TP_FD" ]; then exec {TP_FD}>&-; fi
  TP_FD=
  peers_wait_gone "$TP_PID" "${1:-20}" || { peers_log "testpmd did not quit, killing"; kill -KILL -- "-$TP_PID" 2>/dev/null || true; }
}

# Print "KEY=value" fields of NIC-statistics block number $1 (1-based; "last" for the last one) in a
# testpmd log $2: RX-packets RX-missed RX-bytes RX-errors RX-nombuf TX-packets TX-errors TX-bytes Rx-pps Tx-pps.
tp_parse_block() {
  awk -v want="$1" '
    /NIC statistics for port/ { blk++; inb = 1; delete v; next }
    inb && /Throughput \(since last show\)/ { thr = 1 }
    inb {
      for (i = 1; i < NF; i++) {
        k = $i; sub(/:$/, "", k)
        if ($i ~ /:$/ && $(i+1) ~ /^[0-9]+$/) v[k] = $(i+1)
      }
      if ($1 == "Tx-pps:") {
        inb = 0
        s = sprintf("RX-packets=%.0f RX-missed=%.0f RX-bytes=%.0f RX-errors=%.0f RX-nombuf=%.0f TX-packets=%.0f TX-errors=%.0f TX-bytes=%.0f Rx-pps=%.0f Tx-pps=%.0f",
          v["RX-packets"], v["RX-missed"], v["RX-bytes"], v["RX-errors"], v["RX-nombuf"],
          v["TX-packets"], v["TX-errors"], v["TX-bytes"], v["Rx-pps"], v["Tx-pps"])
        b[blk] = s; last = s
      }
    }
    END { if (want == "last") print last; else print b[want + 0] }
  ' "$2"
}

# Fields of the last "Accumulated forward statistics" block: FWD-RX FWD-RX-dropped FWD-TX FWD-TX-dropped.
tp_parse_fwd() {
  awk '
    /Accumulated forward statistics/ { inb = 1; n = 0; next }
    inb && /RX-packets:/ { rx = $2; rxd = $4 }
    inb && /TX-packets:/ { tx = $2; txd = $4; inb = 0; got = 1 }
    END { if (got) printf "FWD-RX-packets=%.0f FWD-RX-dropped=%.0f FWD-TX-packets=%.0f FWD-TX-dropped=%.0f\n", rx, rxd, tx, txd }
  ' "$1"
}

# Same fields summed over every "Accumulated forward statistics" block of the log (forwarding was
# started and stopped several times).
tp_parse_fwd_sum() {
  awk '
    /Accumulated forward statistics/ { inb = 1; next }
    inb && /RX-packets:/ { rx += $2; rxd += $4 }
    inb && /TX-packets:/ { tx += $2; txd += $4; inb = 0 }
    END { printf "FWD-RX-packets=%.0f FWD-RX-dropped=%.0f FWD-TX-packets=%.0f FWD-TX-dropped=%.0f\n", rx, rxd, tx, txd }
  ' "$1"
}

# Value of KEY in a "K=V K=V" line.
peers_field() { tr ' ' '\n' <<<"$2" | awk -F= -v k="$1" '$1 == k { print $2; exit }'; }

# Median of numbers given as arguments.
# (the mean of the middle two with all its digits: awk's print would write 9917333.5 as 9.91733e+06)
peers_median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.15g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# ------------------------------------------------------------------------------------- guest /init
# The head of a guest's generated /init: busybox's applets, /proc, /sys, /dev, the console, and say and
# die (a "V4J: FAIL" line, then power off). The calling script appends what its guest does; $1 names it
# in the header.
peers_guest_init_head() {
  printf '#!/bin/busybox sh\n# generated by peers/%s\n' "$1"
  cat <<'EOF'
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
say() { echo "V4J: $*"; }
die() { say "FAIL $*"; poweroff -f; }
EOF
}

# ------------------------------------------------------------------------------------ backend command
# A backend under test is given as a command template; "{sock}" is replaced by the socket path and
# "{cpu}" by the CPU it should run on. Contract (the same for DPDK's testpmd-vhost.sh and ours):
#   - it listens on the socket (creates it; the harness waits until the path is a socket);
#   - SIGTERM makes it stop and exit (the harness escalates to SIGKILL of its process group after a
#     grace period);
#   - optionally it prints "RESULT ... RX-packets=N TX-packets=N" on stdout when it exits; when it
#     does, the harness checks those counters against the front-end's.
# The command runs through bash (exec, so SIGTERM reaches it), pinned with taskset when a CPU is given,
# in its own process group, stdout to LOG.out and stderr to LOG.err.
BACKEND_PID=
BACKEND_OUT=
# Every back-end started, "PID STARTTIME OUT" (start time from /proc/PID/stat: tells it from a later process given the
# same PID), registered before its socket is waited for: on any exit, each one still running is stopped as
# peers_backend_stop stops it, tree included. Killing its process group alone leaves a descendant in a session of its
# own (a DPDK back-end's testpmd) busy-polling, whichever way the script died (a socket never created, a failed drive).
PEERS_BACKENDS=()
peers_backends_end() {
  local i pid start out now
  for ((i = ${#PEERS_BACKENDS[@]} - 1; i >= 0; i--)); do
    read -r pid start out <<<"${PEERS_BACKENDS[i]}"
    # stopped already (gone, or ended and not yet reaped), or the PID is another process's now: nothing to do
    now=$(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$pid/stat" 2>/dev/null) || continue
    case $(peers_proc_state "$pid") in Z | X | '') continue ;; esac
    [ "$now" = "$start" ] || continue
    peers_tree_signal CONT "$pid"   # a stopped process acts on SIGTERM only once continued
    peers_backend_stop "$pid" "$out" >/dev/null
  done
}
peers_on_exit_call peers_backends_end
peers_backend_start() {
  local tmpl=$1 sock=$2 cpu=$3 log=$4 cmd pin=()
  cmd=${tmpl//\{sock\}/$sock}
  cmd=${cmd//\{cpu\}/$cpu}
  [ -n "$cpu" ] && pin=(taskset -c "$cpu")
  BACKEND_OUT=$log.out
  setsid "${pin[@]}" bash -c "exec $cmd" </dev/null >"$log.out" 2>"$log.err" &
  BACKEND_PID=$!
  PEERS_BACKENDS+=("$BACKEND_PID $(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$BACKEND_PID/stat" 2>/dev/null) $log.out")
  peers_on_exit_kill_group "$BACKEND_PID"
  peers_log "backend pid $BACKEND_PID: $cmd"
  local rc=0
  peers_wait_socket "$sock" "${PEERS_BACKEND_TIMEOUT:-60}" "$BACKEND_PID" || rc=$?
  if [ "$rc" != 0 ]; then
    tail -n 20 "$log.err" >&2 || true
    peers_die "backend did not create socket $sock (rc $rc; log $log.err)"
  fi
}

# Stop the backend (SIGTERM, grace period) and echo its RESULT line, if it printed one. Without arguments the
# last one started; a script running two gives the PID and stdout file peers_backend_start left for each.
#
# Whatever of its process tree still runs once it ended is killed: a process in a group of its own (a DPDK back-end's
# testpmd) outlives a wrapper that was SIGKILLed after the grace period. $3 (optional) lists more processes of that
# back-end (peers_tree lines taken earlier, while it lived: a root that died no longer leads to its descendants).
peers_backend_stop() {
  local pid=${1:-$BACKEND_PID} out=${2:-$BACKEND_OUT} tree
  [ -n "$pid" ] || return 0
  tree=$(peers_tree "$pid")
  peers_stop_group "$pid" "${PEERS_BACKEND_GRACE:-30}" TERM
  peers_tree_kill_left "$tree${3:+$'\n'$3}"
  grep -E '^RESULT ' "$out" | tail -n 1 || true
  [ "$pid" != "$BACKEND_PID" ] || BACKEND_PID=
}

# ------------------------------------------------------------------------------------------- QEMU guests
# The guest every QEMU script boots: the kernel and busybox base tree peers/install.sh caches, an initramfs whose
# /init the script writes (peers_guest_init_head and the snippets below), QEMU on a pc machine with its RAM in a
# shared memfd (what a vhost-user back-end maps).

# Dies unless QEMU and the cached guest kernel are there; sets PEERS_KDIR.
PEERS_KDIR=
peers_need_guest() {
  command -v qemu-system-x86_64 >/dev/null || peers_die "qemu-system-x86_64 not found: run peers/install.sh"
  PEERS_KDIR="$PEERS_CACHE/kernel/current"
  [ -e "$PEERS_KDIR/.complete" ] || peers_die "no guest kernel cached: run peers/install.sh kernel"
}

# peers_qemu ACCEL SMP MEM_MIB INITRAMFS CONSOLE [KERNEL_ARG...]: sets the array PEERS_QEMU to the command line of
# a guest with no device yet (the caller appends its -chardev/-netdev/-device): serial console to the file CONSOLE,
# no reboot (the guest's poweroff ends QEMU), IPv6 off so the guest sends nothing by itself.
PEERS_QEMU=()
peers_qemu() {
  local accel=$1 smp=$2 mem=$3 initrd=$4 console=$5
  shift 5
  PEERS_QEMU=(qemu-system-x86_64 -machine "pc,accel=$accel" -smp "$smp" -m "${mem}M"
    -object "memory-backend-memfd,id=mem,size=${mem}M,share=on" -numa node,memdev=mem
    -kernel "$PEERS_KDIR/vmlinuz" -initrd "$initrd"
    -append "console=ttyS0 ipv6.disable=1 panic=-1 mitigations=off${*:+ $*}"
    -nodefaults -no-user-config -display none -monitor none -serial "file:$console" -no-reboot)
}

# The end of every guest run. peers_guest_finish QPID TIMEOUT CONSOLE QEMU_LOG DONE: waits up to TIMEOUT seconds for
# the guest to power off (QEMU, our child QPID, exits), stops the back-end, shows QEMU's log when it exited non-zero,
# and exits 1 unless the console says the guest passed: no "V4J: FAIL" line and a line matching ERE DONE. Sets
# PEERS_QEMU_STATUS (QEMU's exit status), PEERS_QEMU_GONE_AT (peers_now when it was gone: the caller's timings stop
# there, not after the back-end's stop) and PEERS_BACKEND_RESULT (peers_backend_stop's RESULT line, maybe empty).
PEERS_QEMU_STATUS=
PEERS_QEMU_GONE_AT=
PEERS_BACKEND_RESULT=
peers_guest_finish() {
  local qpid=$1 timeout=$2 console=$3 qlog=$4 done=$5
  if ! peers_wait_gone "$qpid" "$timeout"; then
    peers_log "guest did not power off within ${timeout}s; console tail:"
    tail -n 30 "$console" >&2
    peers_stop_group "$qpid" 3 TERM
    peers_backend_stop >/dev/null || true
    exit 1
  fi
  PEERS_QEMU_STATUS=0
  wait "$qpid" || PEERS_QEMU_STATUS=$?
  PEERS_QEMU_GONE_AT=$(peers_now)
  PEERS_BACKEND_RESULT=$(peers_backend_stop)
  if [ "$PEERS_QEMU_STATUS" != 0 ]; then
    cat "$qlog" >&2
    peers_log "qemu exited with status $PEERS_QEMU_STATUS"
  fi
  if grep -q '^V4J: FAIL' "$console" || ! grep -qE -- "$done" "$console"; then
    peers_log "guest failed; console tail:"
    tail -n 40 "$console" >&2
    exit 1
  fi
}

# Wait up to $3 seconds for a line matching ERE $1 in file $2 while process $4 lives; 1 on time-out, 2 when it died.
peers_wait_line() {
  local deadline=$(($(date +%s) + $3))
  until grep -qaE -- "$1" "$2" 2>/dev/null; do
    kill -0 "$4" 2>/dev/null || return 2
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.05
  done
}

# /init snippet: the virtio-blk modules, then waits for /dev/vda and says "disk up".
peers_guest_blk_up() {
  cat <<'EOF'
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk; do
  insmod /lib/modules/$m.ko || die "insmod $m"
done
i=0
while [ ! -b /dev/vda ]; do i=$((i + 1)); [ $i -le 200 ] || die "no /dev/vda"; sleep 0.05; done
say "disk up uptime=$(cut -d' ' -f1 /proc/uptime)"
EOF
}

# /init snippet: counters() (prints "V4J-COUNTERS $1 tx_packets=N rx_packets=N ..." of eth0), the modules in their
# order, eth0 up with GUEST_IP/24 and a static ARP entry PEER_IP -> PEER_MAC (so the guest sends no ARP), says
# "net up" and prints "V4J-DEVICE features=BITS txqs=N rxqs=N". Args: GUEST_IP PEER_IP PEER_MAC, also left in the
# guest's shell variables of those names.
peers_guest_net_up() {
  printf 'GUEST_IP=%s\nPEER_IP=%s\nPEER_MAC=%s\n' "$1" "$2" "$3"
  cat <<'EOF'
counters() {
  s=/sys/class/net/eth0/statistics
  echo "V4J-COUNTERS $1 tx_packets=$(cat $s/tx_packets) rx_packets=$(cat $s/rx_packets) tx_bytes=$(cat $s/tx_bytes) rx_bytes=$(cat $s/rx_bytes) tx_dropped=$(cat $s/tx_dropped) rx_dropped=$(cat $s/rx_dropped)"
}
say "init uptime=$(cut -d' ' -f1 /proc/uptime)"
for m in $(cat /lib/modules/order); do insmod /lib/modules/$m.ko || die "insmod $m"; done
i=0
while [ ! -e /sys/class/net/eth0 ]; do
  i=$((i + 1)); [ $i -le 200 ] || die "no eth0"; sleep 0.05
done
ip link set lo up
ip addr add "$GUEST_IP/24" dev eth0
ip link set eth0 up
arp -i eth0 -s "$PEER_IP" "$PEER_MAC"
i=0
while [ "$(cat /sys/class/net/eth0/operstate)" != up ]; do
  i=$((i + 1)); [ $i -le 200 ] || die "eth0 not up"; sleep 0.05
done
say "net up uptime=$(cut -d' ' -f1 /proc/uptime)"
echo "V4J-DEVICE features=$(cat /sys/class/net/eth0/device/features) txqs=$(ls -d /sys/class/net/eth0/queues/tx-* | wc -l) rxqs=$(ls -d /sys/class/net/eth0/queues/rx-* | wc -l)"
EOF
}

# The end of a net guest's /init. First wait until eth0's tx_packets stops changing: virtio-net counts a transmitted
# frame when the device hands its buffer back (used ring), so the last frames the back-end consumed are in the final
# counters; then print them, say done and power off.
peers_guest_net_end() {
  cat <<'EOF'
prev=-1; i=0
while :; do
  cur=$(cat /sys/class/net/eth0/statistics/tx_packets)
  [ "$cur" = "$prev" ] && [ $i -ge 3 ] && break
  prev=$cur; i=$((i + 1)); [ $i -le 100 ] || break; sleep 0.1
done
counters final
say "done uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
EOF
}

# ---------------------------------------------------------------------------------------------- QMP
# peers_qmp SOCKET JSON...: runs each command on one fresh QMP session, prints each reply's "return" as JSON; fails
# (the error on stderr) at the first error reply.
PEERS_QMP_PY='
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def reply():
    while True:
        m = json.loads(f.readline())
        if "return" in m or "error" in m:
            return m
f.readline()  # greeting
f.write("{\"execute\":\"qmp_capabilities\"}\n"); f.flush(); reply()
for c in sys.argv[2:]:
    f.write(c + "\n"); f.flush()
    m = reply()
    if "error" in m:
        print(json.dumps(m["error"]), file=sys.stderr)
        sys.exit(1)
    print(json.dumps(m["return"]))
'
peers_qmp() { python3 -c "$PEERS_QMP_PY" "$@"; }

# peers_migrate SRC_QMP URI BANDWIDTH_MIB TIMEOUT_S: live-migrates the source QEMU to the destination listening on
# URI (-incoming), the bandwidth capped at BANDWIDTH_MIB MiB/s (QEMU's default is 32; downtime-limit stays at its
# default, 300 ms), polling query-migrate until it ends or TIMEOUT_S passed. Prints, as QEMU reports them,
#   status=completed|failed|cancelled|... total_ms=N downtime_ms=N setup_ms=N transferred=BYTES dirty_sync=N
# and returns 0 when the status is completed.
peers_migrate() {
  local qmp=$1 uri=$2 bw=$3 secs=$4 deadline info='{}' status=none
  peers_qmp "$qmp" "{\"execute\":\"migrate-set-parameters\",\"arguments\":{\"max-bandwidth\":$((bw << 20))}}" >/dev/null || return 1
  peers_qmp "$qmp" "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"$uri\"}}" >/dev/null || { echo "status=refused"; return 1; }
  deadline=$(($(date +%s) + secs))
  while :; do
    info=$(peers_qmp "$qmp" '{"execute":"query-migrate"}' 2>/dev/null) || info='{}'
    status=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("status","none"))' "$info")
    case $status in completed | failed | cancelled) break ;; esac
    [ "$(date +%s)" -ge "$deadline" ] && break
    sleep 0.1
  done
  python3 -c '
import json, sys
m = json.loads(sys.argv[1]); r = m.get("ram", {})
print("status=%s total_ms=%s downtime_ms=%s setup_ms=%s transferred=%s dirty_sync=%s" % (m.get("status"),
      m.get("total-time", "?"), m.get("downtime", "?"), m.get("setup-time", "?"), r.get("transferred", "?"),
      r.get("dirty-sync-count", "?")))' "$info"
  [ "$status" = completed ]
}
