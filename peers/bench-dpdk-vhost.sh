#!/usr/bin/env bash
# Usage: peers/bench-dpdk-vhost.sh [options]
#
# Reference throughput of a vhost-user backend: DPDK virtio-user (testpmd txonly, one spinning lcore
# on --driver-cpu) sends frames of each --sizes into backend A and backend B (each on --backend-cpu),
# interleaved in one invocation: for every repetition and size, A then B. A is DPDK's own net_vhost
# (testpmd rxonly) unless --backend-a says otherwise; B is --backend-b, $BACKEND_CMD, or A again (which
# validates the harness: the ratio must come out ~1). Every run starts both processes afresh, unless
# --persistent.
#
# The figure is the driver's TX rate over the measurement window (testpmd's TSC-timed Tx-pps between
# two "show port stats" taken --warmup and --warmup+--duration seconds after start): frames the backend
# took from a full ring, i.e. the backend's receive throughput. After each run the driver's final
# TX-packets is compared with the backend's RESULT RX-packets (exact=yes|no; n/a with --no-backend-result).
# Before each run: CPU busy % of the machine over 1 s while nothing of ours runs (other load) and a
# cache-line ping-pong probe between the two CPUs (near ~165 ns / far ~680 ns on this kind of machine;
# after the run too). During the run: driver_cpu = CPUs' worth of time the driver's testpmd got in the
# window, backend_cpu = the same for the backend's whole process tree over its life (start-up and the
# driver's start-up included, so below the window's figure); both ~1.00 when each spinning peer had
# its CPU to itself. A run whose figures are well below 1 measured the other load, not the backend.
#
# --persistent: a small cost (a few %) needs the noise of fresh processes out of the figure (each JVM
# starts with its own JIT and cache placement: fresh back-ends gave per-rep B/A of 0.91-1.20 for a cost
# near 1). A and B are started once, each on its own socket, and warmed (one unmeasured driver run of
# --backend-warmup s into each); then per rep and size a fresh driver runs into A then B or B then A,
# alternating inside each JVM pair (its 1st rep AB, 2nd BA, ...: K even, so each pair holds as many of
# each order), each back-end serving one front-end after another. The back-end not being measured is
# stopped meanwhile, SIGSTOP to every process group of its process tree (a template's processes may
# have groups and sessions of their own: testpmd-vhost.sh's testpmd does), so that its housekeeping
# (GC, a flight recording's periodic work, a DPDK lcore's polling) takes nothing from the measured
# one's CPU; other_cpu= is the CPU time that whole tree got during the run and other_state= the states
# of its processes after it (T: stopped), and a run where it got a tick or was not stopped counts as a
# failure. Both are stopped while the busy % is sampled. Every --restart-every reps both are restarted
# (a new "JVM pair"), so that the per-JVM luck shows and is averaged over. --reps must be a multiple of
# --restart-every. Counters, exact per run: when a template holds {metrics}, the harness
# gives that back-end a unix socket there (e.g. "--metrics unix:{metrics}") and scrapes it before and
# after each run: backend_rx is the delta of virtio4j_good_packets_total{direction="rx"}, compared with
# the driver's TX-packets (else backend_rx=na, exact=n/a). When a back-end stops, its RESULT
# RX-packets is compared with everything the drivers sent it, warm-up included ("BACKEND" line).
# Whatever of a back-end's process tree still runs after it stopped is killed (also on any error exit).
# A process counts as stopped only when every one of its threads is (/proc/PID/task/*/stat). A harness
# killed with SIGKILL runs no exit path: its kept back-ends stay stopped (SIGSTOP) until someone kills
# them (their PIDs are in its log, "backend pid N").
#
# --persistent --same-backend: one back-end instead of two, --backend-a's, serves the A and the B runs (with a JVM
# back-end the same JIT code serves both: two JVMs of one build settle at different rates, decided by compile races at
# their start, which put a ratio of two JVMs anywhere in 0.86-1.12). A run = the back-end as started. B run = the same
# back-end between --b-on, run just before the B run's busy % sample, and --b-off, run just after its driver ended and
# it was scraped (e.g. "jcmd {pid} JFR.start ..." and "jcmd {pid} JFR.stop ..."), and with --b-scrape-every S its
# {metrics} endpoint scraped every S s while B's driver runs (as a Prometheus server would; A and B runs are scraped
# before and after each run all the same, for the exact counters). Both commands run through bash and must exit 0 within
# PEERS_TOGGLE_TIMEOUT s (default 30), else the harness dies with the command and its output. A "JVM pair" is then one
# JVM: warmed as A, then as B (--b-on, scrapes, --b-off around the warm-up run), restarted every --restart-every reps,
# the order alternating AB/BA inside it as above. Nothing is stopped (there is no other back-end): RUN lines read
# other_cpu=na other_state=na, busy_before includes the back-end's own idle work (in B runs with whatever --b-on
# started), and one BACKEND line per JVM (backend=A) counts A's and B's frames. Without --b-on/--b-off and
# --b-scrape-every B is A again: the ratio must come out ~1.
#
# --persistent --same-backend --windows W: A and B inside one connection. Each new front-end connection maps new guest
# memory and sets a JVM back-end's JIT to work again (uncommon traps at every connection), so that --same-backend's runs
# still jump between rates from one driver run to the next. Here, per JVM (restarted every --restart-every reps, warmed
# by --backend-warmup runs as above) and size, ONE driver run holds that JVM's reps as windows of W s, A and B, AB then
# BA, ... (as above): the driver is started (after the busy % sample and the probe) with a --duration it will not reach
# and --ready-file, forwards --warmup s, then the windows follow, then SIGUSR1 ends its window (testpmd-virtio-user.sh:
# stats, stop, drain, RESULT). A window's rate is the back-end's own: the delta of virtio4j_good_packets_total{direction=
# "rx"} scraped from {metrics} at its start and end, over the time between the two scrapes' answers (CLOCK_MONOTONIC,
# read from a python3 coprocess: no fork at a window's edge). A window: nothing between its two scrapes. B window: --b-on
# and --settle S (default 0.5: a jcmd attaches a thread to the JVM and takes ~0.5 s of CPU) before its first scrape,
# the --b-scrape-every scraper between the two, --b-off and --settle s after its last. The back-end and the driver run
# on meanwhile: frames sent in the warm-up and the gaps count only in the exact check, which wants the driver's final
# TX-packets equal to the counter's delta from before the driver started to after it ended (its drain included) and,
# as above, the BACKEND line's RESULT equal to every frame sent into that JVM. The figure is the back-end's receive
# rate while the driver finds the ring full: the DRIVER line's tx_ring_full (frames txonly could not place) must be
# large, else (0: a WARNING) the rates are the driver's. --windows needs {metrics} in --backend-a and no --duration.
#
# Output: one "RUN ..." line per run, then per size "SUMMARY size=.. A_median_pps=.. A_min=.. A_max=..
# B_median_pps=.. B_min=.. B_max=.. ratio_B_over_A=.. paired_ratio_min=.. paired_ratio_max=..".
# --persistent adds jvm=N, order=AB|BA, other_cpu= and other_state= to each RUN line (--same-backend: other_*=na, and
# toggle=off|on for A|B and scrapes=N, the scrapes answered during the run's driver). --windows: one RUN line per window,
# "RUN size= rep= jvm= order= backend=A|B toggle=off|on pps= frames= seconds= scrapes= backend_cpu= driver_cpu=
# busy_before=na probe_ns=na" (the CPU shares over the window from the processes' clock ticks, 10 ms apart; the busy %
# takes 1 s of sampling and the probe both CPUs, so neither is taken between windows), and per JVM and size "DRIVER
# size= jvm= reps= tx_total= backend_rx= exact= driver_pps= window_s= windows_s= tx_ring_full= driver_cpu= busy_before=
# probe_ns=before/after" (driver_pps, window_s, driver_cpu: the driver's over its window, from its warm-up to SIGUSR1;
# windows_s: ours, a failure when the driver's ended more than 1 s earlier). All: a "BACKEND jvm=N
# backend=A|B rx_total= driver_tx_total= exact=" line per back-end stopped, and per size, from
# `virtio4j paired` (B/A as the geometric mean of per-rep ratios, 95% t interval, half-width in %):
#   SUMMARY size=S jvm=N figure=pps pairs=K ...       JVM pair N's K reps (--restart-every; 0: --reps)
#   SUMMARY size=S jvm=all figure=pps pairs=REPS ...  every rep pooled, as if independent
#   SUMMARY size=S jvm=means figure=pps pairs=REPS groups=J ...  paired --groups: each JVM pair's
#                                                     geometric means, the interval over those J
#                                                     values: the one that covers per-JVM luck, quote
#                                                     this one. Only with 2+ JVM pairs (else a log
#                                                     line says there is none).
# Exits 1 after the summaries when a run's or a back-end's counters were not exact (a back-end that
# printed no RESULT included, unless --no-backend-result) or an idle back-end was not stopped.
#
# Options:
#   --reps N             repetitions (default 3; with --persistent a multiple of --restart-every)
#   --sizes "S ..."      frame sizes in bytes, each 42 or more (default "64 1500")
#   --duration S         measurement window per run, seconds > 0 (default 5)
#   --warmup S           driver's seconds before the window, >= 0 (default 1)
#   --backend-a CMD      backend A command template (default: DPDK testpmd-vhost.sh rxonly)
#   --backend-b CMD      backend B command template (default: $BACKEND_CMD, else A)
#                        Templates: {sock} is the socket path, {cpu} the backend CPU, and with
#                        --persistent {metrics} a unix socket path for its metrics. E.g.
#                        BACKEND_CMD='./virtio4j serve net --socket {sock} --mode rxonly'
#   --backend-cpu N      (default 0)
#   --driver-cpu N       (default 1)
#   --driver-args "..."  extra arguments for testpmd-virtio-user.sh (e.g. "--vdev-args packed_vq=1")
#   --out FILE           also append RUN/BACKEND/SUMMARY lines to FILE
#   --wait-idle PCT      before each run, wait until the machine is at most PCT % busy (1 s samples),
#                        for up to --wait-idle-timeout seconds (default 120; then run anyway)
#   --persistent         keep A and B running across reps (see above)
#   --restart-every K    with --persistent: restart both back-ends every K reps, K even (default 10;
#                        0: never, then --reps even)
#   --backend-warmup S   with --persistent: unmeasured driver run into each back-end after each start,
#                        before the first measured rep (default 5; 0: none)
#   --no-backend-result  the back-ends print no RESULT line: their counters read n/a, not a failure
#   --same-backend       with --persistent: one back-end (--backend-a's) serves A and B runs (see above);
#                        --backend-b (or $BACKEND_CMD) is refused beside it
#   --b-on CMD           with --same-backend: run before each B run ({pid}: the back-end's root PID, for
#                        ./virtio4j serve ... the java process, `env X=Y ./virtio4j` included: both exec;
#                        {work}: a scratch directory, removed at the end), e.g.
#                        "jcmd {pid} JFR.start name=cost settings=$PWD/share/virtio4j/jfr/virtio4j.jfc | grep 'Started recording'"
#                        (jcmd exits 0 when the recording fails to start: grep its line)
#   --b-off CMD          with --b-on: run after each B run, e.g. "jcmd {pid} JFR.stop name=cost | grep 'Stopped recording'"
#   --b-scrape-every S   with --same-backend and {metrics} in --backend-a: scrape it every S s (0.001-3600) while a
#                        B run's driver runs; a scrape not answered 200 counts as a failure
#   --windows W          with --same-backend and {metrics} in --backend-a: per JVM and size one driver run, its reps
#                        as A and B windows of W s (> 0) rated by the back-end's counter (see above); no --duration
#   --settle S           with --windows: seconds after each --b-on and --b-off before the next scrape (default 0.5)
#   --driver PROGRAM     the virtio-user driver, called with testpmd-virtio-user.sh's options (default: that
#                        script; the stand-in tests give one that needs no DPDK); with --windows it also gets
#                        --ready-file, and SIGUSR1 must end its window
#   --v4j CMD            the virtio4j command line for the statistics (default: this checkout's ./virtio4j)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

dpdk_backend="$PEERS_DIR/testpmd-vhost.sh --socket {sock} --mode rxonly --lcores 0@{cpu},1@{cpu}"
reps=3 sizes="64 1500" duration=5 warmup=1 backend_a=$dpdk_backend backend_b=${BACKEND_CMD:-}
backend_cpu=0 driver_cpu=1 driver_args='' out='' idle_pct='' idle_timeout=120
persistent=0 restart_every=10 backend_warmup=5 no_result=0 v4j="$(cd "$PEERS_DIR/.." && pwd)/virtio4j"
driver=$PEERS_DIR/testpmd-virtio-user.sh same=0 b_on='' b_off='' b_scrape='' backend_b_from='' windows='' settle=''
duration_set=0
[ -z "$backend_b" ] || backend_b_from='$BACKEND_CMD'
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --duration) duration=$2; duration_set=1; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --backend-a) backend_a=$2; shift 2 ;;
    --backend-b) backend_b=$2; backend_b_from=--backend-b; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --driver-cpu) driver_cpu=$2; shift 2 ;;
    --driver-args) driver_args=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --wait-idle) idle_pct=$2; shift 2 ;;
    --wait-idle-timeout) idle_timeout=$2; shift 2 ;;
    --persistent) persistent=1; shift ;;
    --restart-every) restart_every=$2; shift 2 ;;
    --backend-warmup) backend_warmup=$2; shift 2 ;;
    --no-backend-result) no_result=1; shift ;;
    --same-backend) same=1; shift ;;
    --b-on) b_on=$2; shift 2 ;;
    --b-off) b_off=$2; shift 2 ;;
    --b-scrape-every) b_scrape=$2; shift 2 ;;
    --windows) windows=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --v4j) v4j=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
if [ "$same" = 1 ]; then
  [ "$persistent" = 1 ] || peers_die "--same-backend needs --persistent (one back-end kept running serves the A and the B runs)"
  [ -z "$backend_b_from" ] || peers_die "$backend_b_from has no place with --same-backend (A and B runs both go to --backend-a's back-end, B between --b-on and --b-off): got '$backend_b'"
  if [ -n "$b_on" ] && [ -z "$b_off" ]; then peers_die "--b-on needs --b-off (what --b-on starts must end before the next A run): got --b-on '$b_on' alone"; fi
  if [ -z "$b_on" ] && [ -n "$b_off" ]; then peers_die "--b-off needs --b-on: got --b-off '$b_off' alone"; fi
  if [ -n "$b_scrape" ]; then
    # curl --rate takes whole requests per hour at the finest: S from 0.001 (3600000/h) to 3600 (1/h)
    [[ "$b_scrape" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v s="$b_scrape" 'BEGIN { exit !(s >= 0.001 && s <= 3600) }' ||
      peers_die "--b-scrape-every takes seconds from 0.001 to 3600, got '$b_scrape'"
    [[ "$backend_a" == *"{metrics}"* ]] || peers_die "--b-scrape-every needs {metrics} in --backend-a (the endpoint to scrape): got '$backend_a'"
  fi
  if [ -n "$windows" ]; then
    [[ "$windows" =~ ^[0-9]+(\.[0-9]+)?$ && ! "$windows" =~ ^0+(\.0+)?$ ]] || peers_die "--windows takes a window's seconds above 0, got '$windows'"
    [[ "$backend_a" == *"{metrics}"* ]] || peers_die "--windows needs {metrics} in --backend-a (a window's rate is the delta of the back-end's own counter): got '$backend_a'"
    [ "$duration_set" = 0 ] || peers_die "--duration has no place with --windows (a window lasts --windows s, the one driver run the whole JVM): got '$duration'"
  fi
else
  for o in "--b-on:$b_on" "--b-off:$b_off" "--b-scrape-every:$b_scrape"; do
    [ -z "${o#*:}" ] || peers_die "${o%%:*} needs --same-backend (it changes the one back-end for its B runs)"
  done
  [ -z "$windows" ] || peers_die "--windows needs --persistent --same-backend (its A and B windows are one back-end's, in one driver run): got --windows '$windows' without --same-backend"
fi
if [ -n "$settle" ]; then
  [ -n "$windows" ] || peers_die "--settle needs --windows (the gap after --b-on/--b-off before a window's first scrape): got '$settle'"
  [[ "$settle" =~ ^[0-9]+(\.[0-9]+)?$ ]] || peers_die "--settle takes a number of seconds, got '$settle'"
fi
settle=${settle:-0.5}
[ -n "$backend_b" ] || backend_b=$backend_a
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || peers_die "--reps takes a positive whole number, got '$reps'"
[[ "$restart_every" =~ ^[0-9]+$ ]] || peers_die "--restart-every takes a whole number of reps, got '$restart_every'"
[[ "$backend_warmup" =~ ^[0-9]+$ ]] || peers_die "--backend-warmup takes a whole number of seconds, got '$backend_warmup'"
[[ "$duration" =~ ^[0-9]+(\.[0-9]+)?$ && ! "$duration" =~ ^0+(\.0+)?$ ]] || peers_die "--duration takes a number of seconds above 0, got '$duration'"
[[ "$warmup" =~ ^[0-9]+(\.[0-9]+)?$ ]] || peers_die "--warmup takes a number of seconds, got '$warmup'"
read -ra size_list <<<"$sizes"
[ "${#size_list[@]}" -gt 0 ] || peers_die "--sizes takes frame sizes, got '$sizes'"
for size in "${size_list[@]}"; do
  # testpmd's txonly builds Ethernet + IPv4 + UDP headers: 42 bytes at least
  [[ "$size" =~ ^[1-9][0-9]*$ ]] && [ "$size" -ge 42 ] || peers_die "--sizes: '$size' is not a frame size of 42 bytes or more (in '$sizes')"
done
sizes="${size_list[*]}"
if [ "$persistent" = 1 ]; then
  # The order alternates inside each JVM pair: with an odd K one order has a rep more in every pair (a bias of
  # alternating sign in the jvm=N lines and in jvm=means), and a partial last pair would weigh as much as a whole one.
  if [ "$restart_every" = 0 ]; then
    [ $((reps % 2)) = 0 ] || peers_die "--persistent --restart-every 0: --reps must be even (as many AB as BA), got $reps"
  else
    [ $((restart_every % 2)) = 0 ] || peers_die "--restart-every must be even (as many AB as BA reps in each JVM pair), got $restart_every"
    [ $((reps % restart_every)) = 0 ] || peers_die "--reps $reps is not a multiple of --restart-every $restart_every (whole JVM pairs only)"
  fi
  jvm_pairs=1
  [ "$restart_every" = 0 ] || jvm_pairs=$((reps / restart_every))
  [ "$jvm_pairs" -ge 2 ] || peers_log "WARNING: one JVM pair: no jvm=means line, and no interval here covers per-JVM luck (--reps 2K or more for one)"
fi
if [ "$persistent" = 0 ]; then
  for t in "$backend_a" "$backend_b"; do
    [[ "$t" != *"{metrics}"* ]] || peers_die "{metrics} in a template needs --persistent: $t"
  done
fi

work=$(mktemp -d /tmp/v4j-bench.XXXXXX)
peers_on_exit_rm "$work"
emit() { echo "$*"; [ -z "$out" ] || echo "$*" >>"$out"; }

peers_probe_build
probe() { peers_probe "$backend_cpu" "$driver_cpu"; }

# drive SOCK SIZE SECONDS WHAT: DPDK virtio-user txonly into the back-end at SOCK for a --warmup and a window of
# SECONDS; sets RES to its RESULT line. Dies when it fails or its RESULT lacks a count, naming WHAT (the back-end and
# where in the run).
RES=
drive() {
  local rc=0
  driver_argv "$1" "$2" "$3"
  RES=$("${DRV[@]}" 2>"$work/driver.err") || rc=$?
  driver_result "$rc" "$4"
}
# driver_argv SOCK SIZE SECONDS: the driver's command line, in DRV
DRV=()
driver_argv() {
  # shellcheck disable=SC2206 # driver_args is a list of words
  DRV=("$driver" --socket "$1" --mode txonly --frame-size "$2" --duration "$3" --warmup "$warmup"
    --lcores "0@$driver_cpu,1@$driver_cpu" --file-prefix "v4j-bench-vu-$$" $driver_args)
}
# driver_result STATUS WHAT: dies unless the driver that printed RES exited 0 with a RESULT holding both counts
driver_result() {
  local k
  if [ "$1" != 0 ] || [ -z "$RES" ]; then
    tail -n 20 "$work/driver.err" >&2
    peers_die "driver into $2 failed (status $1; its stderr above)"
  fi
  for k in TX-packets TX-pps; do
    [[ "$(peers_field "$k" "$RES")" =~ ^[0-9]+$ ]] || peers_die "driver into $2: no $k count in its RESULT line: $RES"
  done
}

# judge RX TX WHAT: sets EXACT to yes|no|n/a, a back-end's RESULT RX-packets RX (empty: it printed none) against the
# TX frames the drivers sent it, and counts a failure unless yes (n/a is none only with --no-backend-result). Not
# in a $(...): FAILED must count in this shell.
FAILED=0 EXACT=
judge() {
  if [ -z "$1" ]; then
    EXACT=n/a
    [ "$no_result" = 1 ] && return 0
    peers_log "FAILURE: $3 printed no RESULT line (stopped by SIGKILL, or crashed; --no-backend-result if it never prints one)"
  elif [ "$1" = "$2" ]; then
    EXACT=yes
    return 0
  else
    EXACT=no
    peers_log "FAILURE: drivers sent $2 frames into $3, it counted $1"
  fi
  FAILED=$((FAILED + 1))
}

# CPUs' worth of time from tick count $1 over the seconds since peers_now time $2
cpu_share() { ticks_share "$1" "$(peers_elapsed "$2")"; }
# CPUs' worth of time from tick count $1 over $2 seconds
ticks_share() { awk -v c="$1" -v hz="$(peers_clk_tck)" -v w="$2" 'BEGIN { printf "%.2f", (w > 0 ? c / hz / w : 0) }'; }

run_one() {   # run_one LABEL TEMPLATE SIZE REP
  local label=$1 tmpl=$2 size=$3 rep=$4 sock bres pps tx brx exact b p0 p1 bt0 bc0 bc1 bcpu
  sock="$work/vhost-$label-$size-$rep.sock"
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")
  p0=$(probe)
  peers_backend_start "$tmpl" "$sock" "$backend_cpu" "$work/backend-$label-$size-$rep"
  bt0=$(peers_now)
  bc0=$(peers_tree_cputicks "$BACKEND_PID")
  drive "$sock" "$size" "$duration" "backend $label at rep=$rep size=$size"
  bc1=$(peers_tree_cputicks "$BACKEND_PID")
  bcpu=$(cpu_share "$((bc1 - bc0))" "$bt0")
  bres=$(peers_backend_stop)
  rm -f "$sock"
  p1=$(probe)
  pps=$(peers_field TX-pps "$RES")
  tx=$(peers_field TX-packets "$RES")
  brx=$(peers_field RX-packets "$bres")
  judge "$brx" "$tx" "backend $label (rep $rep, size $size)"
  exact=$EXACT
  emit "RUN size=$size rep=$rep backend=$label pps=$pps window_pkts=$(peers_field win-TX-packets "$RES") tx_total=$tx backend_rx=${brx:-na} exact=$exact tx_ring_full=$(peers_field TX-dropped "$RES") driver_cpu=$(peers_field cpu "$RES") backend_cpu=$bcpu busy_before=${b}% probe_ns=$p0/$p1"
  echo "$pps" >>"$work/pps-$label-$size"
}

# ---------------------------------------------------------------------------------------------- --persistent
# Per back-end X (A, B) of the current JVM pair ($JVM): its root PID (its process group), stdout and stderr files,
# socket, metrics socket (empty without {metrics}), the frames the drivers sent it since it started, and its process
# tree as last seen (peers_tree lines: what to kill should it die and leave processes behind).
declare -A KEPT_PID=() KEPT_OUT=() KEPT_ERR=() KEPT_SOCK=() KEPT_METRICS=() KEPT_TX=() KEPT_TREE=()
JVM=0 REP=- SIZE=-
at() { echo "jvm=$JVM rep=$REP size=$SIZE"; }   # where the run is, for messages

# On any exit, every kept back-end is stopped as at its normal end (continued first: a stopped process acts on SIGTERM
# only once continued), and what is left of its tree killed: no back-end stays behind, stopped or running.
end_kept() {
  local x
  for x in "${!KEPT_PID[@]}"; do
    peers_tree_signal CONT "${KEPT_PID[$x]}"
    peers_backend_stop "${KEPT_PID[$x]}" "${KEPT_OUT[$x]}" "${KEPT_TREE[$x]}" >/dev/null
  done
}
peers_on_exit_call end_kept

# Dies unless back-end X lives (a zombie does not), naming it and where the run is, with the end of its stderr.
kept_alive() {
  local st
  st=$(peers_proc_state "${KEPT_PID[$1]}")
  [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ] || return 0
  tail -n 20 "${KEPT_ERR[$1]}" >&2 || true
  peers_die "backend $1 (pid ${KEPT_PID[$1]}) is gone at $(at); its stderr (${KEPT_ERR[$1]}) ends above"
}

# Stops back-end X's whole tree: SIGSTOP to each of its process groups, again until every process in it is stopped (T)
# or ended (Z), which also catches a child started meanwhile in a group of its own. Only the root's group (the first
# version) left testpmd-vhost.sh's testpmd, in a session of its own, busy-polling the back-end CPU beside the other.
pause() {
  local x=$1 i pg running now
  kept_alive "$x"
  for i in $(seq 1 200); do
    now=$(peers_tree "${KEPT_PID[$x]}")
    # Kept: every process seen before too (newest line first). A child whose parent dies leaves the tree (it is
    # re-parented to init) but not the machine: stopped here and then dropped from the list, it was left behind, in
    # state T, when its back-end died in the middle of this loop (a CI run of BenchDpdkVhostFailuresTest).
    KEPT_TREE[$x]=$(printf '%s\n%s\n' "$now" "${KEPT_TREE[$x]}" | awk 'NF && !seen[$1]++')
    running=$(awk '$4 !~ /^[TtZX]$/ { print $3 }' <<<"$now" | sort -u)
    [ -n "$running" ] || return 0
    for pg in $running; do kill -STOP -- "-$pg" 2>/dev/null || true; done
    sleep 0.01
  done
  peers_die "backend $x did not stop at $(at); its processes (pid ppid pgid state ticks start): $(tr '\n' ';' <<<"${KEPT_TREE[$x]}")"
}
resume() { kept_alive "$1"; peers_tree_signal CONT "${KEPT_PID[$1]}"; }

# The states of back-end X's processes, "+"-joined, ended ones (Z) left out: "T" when all of it is stopped.
kept_state() { peers_tree "${KEPT_PID[$1]}" | awk '$4 !~ /^[ZX]$/ { print $4 }' | sort -u | paste -sd+; }

# Frames back-end X counted as received: virtio4j_good_packets_total{direction="rx"} over its queues, scraped from its
# --metrics socket; empty without one. Sets M (not in a $(...): its errors must end this shell with their message).
M=
scrape_rx() {
  local m=${KEPT_METRICS[$1]} text
  M=
  [ -n "$m" ] || return 0
  text=$(curl -sf --max-time 10 --unix-socket "$m" http://localhost/metrics) || peers_die "backend $1: no answer from its metrics at $m at $(at)"
  M=$(awk '/^virtio4j_good_packets_total\{/ && /direction="rx"/ { s += $NF; n++ }
    END { if (n == 0) exit 1; printf "%.0f\n", s }' <<<"$text") || peers_die "backend $1: no virtio4j_good_packets_total{direction=\"rx\"} at $m at $(at)"
}

start_kept() {   # start_kept X TEMPLATE
  local x=$1 tmpl=$2 m=''
  KEPT_SOCK[$x]="$work/vhost-$x-$JVM.sock"
  if [[ "$tmpl" == *"{metrics}"* ]]; then
    m="$work/metrics-$x-$JVM.sock"
    tmpl=${tmpl//\{metrics\}/$m}
  fi
  KEPT_METRICS[$x]=$m
  peers_backend_start "$tmpl" "${KEPT_SOCK[$x]}" "$backend_cpu" "$work/backend-$x-$JVM"
  KEPT_PID[$x]=$BACKEND_PID
  KEPT_OUT[$x]=$BACKEND_OUT
  KEPT_ERR[$x]="$work/backend-$x-$JVM.err"
  KEPT_TX[$x]=0
  KEPT_TREE[$x]=''
  if [ -n "$m" ]; then   # the metrics socket appears just before the vhost-user one; wait for it all the same
    peers_wait_socket "$m" 30 "$BACKEND_PID" || peers_die "backend $x: no metrics socket at $m"
  fi
  if [ "$same" = 1 ]; then
    KEPT_TREE[$x]=$(peers_tree "${KEPT_PID[$x]}")   # never stopped, so never seen again by pause: seen here
  else
    pause "$x"
  fi
}

stop_kept() {   # stop_kept X: its RESULT RX-packets against everything the drivers sent it
  local x=$1 bres brx
  resume "$x"
  bres=$(peers_backend_stop "${KEPT_PID[$x]}" "${KEPT_OUT[$x]}" "${KEPT_TREE[$x]}")
  unset "KEPT_PID[$x]"
  brx=$(peers_field RX-packets "$bres")
  judge "$brx" "${KEPT_TX[$x]}" "backend $x of JVM pair $JVM"
  emit "BACKEND jvm=$JVM backend=$x rx_total=${brx:-na} driver_tx_total=${KEPT_TX[$x]} exact=$EXACT"
  rm -f "${KEPT_SOCK[$x]}"
}

# --same-backend: toggle on|off runs --b-on or --b-off (nothing when not given) against the one back-end, {pid} its root
# PID and {work} this run's scratch directory, through bash, with its output in a file; dies with the command and that
# output when it fails or outlives PEERS_TOGGLE_TIMEOUT s (default 30). timeout(1) puts the command in a process group
# of its own and signals that whole group on expiry, so nothing it started lingers.
toggle() {
  local what=$1 tmpl cmd rc=0 limit=${PEERS_TOGGLE_TIMEOUT:-30}
  tmpl=$b_on
  [ "$what" = on ] || tmpl=$b_off
  [ -n "$tmpl" ] || return 0
  kept_alive A
  cmd=${tmpl//\{pid\}/${KEPT_PID[A]}}
  cmd=${cmd//\{work\}/$work}
  timeout -k 5 "$limit" bash -c "$cmd" </dev/null >"$work/toggle.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] && return 0
  tail -n 20 "$work/toggle.log" >&2 || true
  case $rc in
    124 | 137) peers_die "--b-$what '$cmd' did not end within ${limit}s at $(at) (its output above)" ;;
    *) peers_die "--b-$what '$cmd' failed (status $rc) at $(at) (its output above)" ;;
  esac
}

# --b-scrape-every S: scrape_start scrapes the one back-end's {metrics} endpoint every S s from one curl process (as a
# Prometheus server does: a GET of /metrics per interval; the endpoint closes each connection, so each scrape connects
# anew), until scrape_stop, which sets SCRAPES to the number of scrapes answered 200 and counts a failure per other
# one. One process for all of a run's scrapes: a fork and exec per scrape would put milliseconds of curl's start-up on
# a CPU a spinning peer needs, a cost of the harness and not of the endpoint. stdbuf: curl writes its per-scrape line
# through stdio, and SIGTERM would lose what sits in its buffer.
SCRAPER_PID='' SCRAPES=0
scrape_start() {
  SCRAPES=0
  [ -n "$b_scrape" ] || return 0
  stdbuf -oL curl -s --max-time 10 --unix-socket "${KEPT_METRICS[A]}" -o /dev/null -w '%{http_code}\n' \
    --rate "$(awk -v s="$b_scrape" 'BEGIN { printf "%d", 3600 / s + 0.5 }')/h" \
    "http://localhost/metrics?scrape=[1-100000000]" </dev/null >"$work/scrapes" 2>&1 &
  SCRAPER_PID=$!
}
scrape_stop() {
  local bad
  [ -n "$SCRAPER_PID" ] || return 0
  kill -TERM "$SCRAPER_PID" 2>/dev/null || true
  wait "$SCRAPER_PID" 2>/dev/null || true
  SCRAPER_PID=''
  SCRAPES=$(grep -cx 200 "$work/scrapes" || true)
  bad=$(grep -vcx 200 "$work/scrapes" || true)
  if [ "$bad" != 0 ]; then
    FAILED=$((FAILED + 1))
    peers_log "FAILURE: $bad scrape(s) of ${KEPT_METRICS[A]} not answered 200 at $(at): $(grep -vx 200 "$work/scrapes" | sort | uniq -c | tr -s ' \n' ' ')"
  fi
}
peers_on_exit_call scrape_stop

# A new JVM pair: both started, then warmed one after the other with an unmeasured driver run of --backend-warmup s
# (of the first size) while the other is stopped. --same-backend: one back-end, warmed as A, then as B (between --b-on
# and --b-off, scraped): the first --b-on in a JVM (a recorder brought up) and the code B runs take fall in there.
start_pair() {
  # REP and SIZE local: the messages (at) name the warm-up, and the caller's rep stays as it was
  local x REP=warm-up SIZE=${sizes%% *}
  JVM=$((JVM + 1))
  start_kept A "$backend_a"
  [ "$same" = 1 ] || start_kept B "$backend_b"
  if [ "$backend_warmup" -gt 0 ]; then
    for x in A B; do
      if [ "$same" = 1 ]; then
        [ "$x" = A ] || { toggle on; scrape_start; }
        drive "${KEPT_SOCK[A]}" "$SIZE" "$backend_warmup" "backend A as $x at $(at)"
        KEPT_TX[A]=$((KEPT_TX[A] + $(peers_field TX-packets "$RES")))
        [ "$x" = A ] || { scrape_stop; toggle off; }
      else
        resume "$x"
        drive "${KEPT_SOCK[$x]}" "$SIZE" "$backend_warmup" "backend $x at $(at)"
        KEPT_TX[$x]=$((KEPT_TX[$x] + $(peers_field TX-packets "$RES")))
        pause "$x"
      fi
    done
  fi
  if [ "$same" = 1 ]; then
    peers_log "JVM $JVM: pid ${KEPT_PID[A]}, warmed ${backend_warmup}s as A and as B"
  else
    peers_log "JVM pair $JVM: A pid ${KEPT_PID[A]}, B pid ${KEPT_PID[B]}, warmed ${backend_warmup}s each"
  fi
}
stop_pair() { stop_kept A; [ "$same" = 1 ] || stop_kept B; }

run_kept() {   # run_kept X ORDER (REP and SIZE say which)
  local x=$1 order=$2 k=$1 other=A b p0 p1 bt0 bc0 bc1 oc0 oc1 ost=na m0 tx brx=na exact=n/a pps ocpu=na extra=''
  [ "$x" = A ] && other=B
  SCRAPES=0
  # --same-backend: k, the kept back-end, is A's for both; B's run is the one between --b-on and --b-off
  if [ "$same" = 1 ]; then
    k=A
    kept_alive A   # else a back-end that died reads as a failing driver
    [ "$x" = A ] || toggle on   # before the busy % sample: a jcmd's attach takes CPU for a moment
  fi
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")   # both back-ends are stopped (--same-backend: it idles)
  p0=$(probe)
  [ "$same" = 1 ] || resume "$x"
  scrape_rx "$k"
  m0=$M
  [ "$x" = A ] || scrape_start
  bt0=$(peers_now)
  bc0=$(peers_tree_cputicks "${KEPT_PID[$k]}")
  [ "$same" = 1 ] || oc0=$(peers_tree_cputicks "${KEPT_PID[$other]}")
  drive "${KEPT_SOCK[$k]}" "$SIZE" "$duration" "backend $x at $(at)"
  bc1=$(peers_tree_cputicks "${KEPT_PID[$k]}")
  [ "$same" = 1 ] || { oc1=$(peers_tree_cputicks "${KEPT_PID[$other]}"); ost=$(kept_state "$other"); }
  [ "$x" = A ] || scrape_stop
  scrape_rx "$k"
  if [ "$same" = 1 ]; then
    [ "$x" = A ] || toggle off
    extra=" toggle=$([ "$x" = A ] && echo off || echo on) scrapes=$SCRAPES"
  else
    pause "$x"
  fi
  p1=$(probe)
  pps=$(peers_field TX-pps "$RES")
  tx=$(peers_field TX-packets "$RES")
  KEPT_TX[$k]=$((KEPT_TX[$k] + tx))
  if [ -n "$m0" ]; then
    brx=$((M - m0))
    if [ "$brx" = "$tx" ]; then exact=yes; else exact=no; FAILED=$((FAILED + 1)); peers_log "FAILURE: driver sent $tx frames, backend $x counted $brx at $(at)"; fi
  fi
  if [ "$same" = 0 ]; then
    ocpu=$(cpu_share "$((oc1 - oc0))" "$bt0")
    if [ "$oc1" != "$oc0" ] || [ "$ost" != T ]; then
      FAILED=$((FAILED + 1))
      peers_log "FAILURE: backend $other, to be stopped, got $((oc1 - oc0)) clock ticks and was in state '$ost' while $x was measured at $(at)"
    fi
  fi
  emit "RUN size=$SIZE rep=$REP jvm=$JVM order=$order backend=$x pps=$pps window_pkts=$(peers_field win-TX-packets "$RES") tx_total=$tx backend_rx=$brx exact=$exact tx_ring_full=$(peers_field TX-dropped "$RES") driver_cpu=$(peers_field cpu "$RES") backend_cpu=$(cpu_share "$((bc1 - bc0))" "$bt0") other_cpu=$ocpu other_state=$ost$extra busy_before=${b}% probe_ns=$p0/$p1"
  record "$x" "$pps"
}

# record X PPS: one measured figure of side X (A, B) for the summaries, in pair order, with its JVM
record() {
  echo "$2" >>"$work/pps-$1-$SIZE"
  echo "$2" >>"$work/pps-$1-$SIZE-jvm$JVM"
  echo "$JVM" >>"$work/jvm-$1-$SIZE"
}

# ---------------------------------------------------------------------------------------------- --windows
# MONO: CLOCK_MONOTONIC in seconds, from one python3 per bench that answers each line on its stdin (a coprocess, started
# below): `date` would fork at every reading (milliseconds of CPU beside two spinning peers, at a window's edge) and
# bash's $EPOCHREALTIME is the wall clock, which a time step moves. It ends with its stdin, i.e. with this shell.
MONO=
mono() {
  echo >&"${CLOCK[1]}"
  read -r MONO <&"${CLOCK[0]}"
}

# The slot's driver, running in the background (its PID, empty when none): dies, naming where the run is and with the
# end of its stderr, once it is gone (a zombie included: it ended and awaits its status) before the harness ended it.
DRIVER_PID=''
driver_alive() {
  local st rc=0
  st=$(peers_proc_state "$DRIVER_PID")
  [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ] || return 0
  wait "$DRIVER_PID" || rc=$?
  DRIVER_PID=''
  tail -n 20 "$work/driver.err" >&2 || true
  peers_die "driver into backend A ended (status $rc) before the harness ended it, at $(at) (its stderr above)"
}
# On any exit a slot's driver still running is ended: SIGTERM, on which testpmd-virtio-user.sh ends its testpmd.
end_driver() {
  [ -n "$DRIVER_PID" ] || return 0
  kill -TERM "$DRIVER_PID" 2>/dev/null || true
  wait "$DRIVER_PID" 2>/dev/null || true
  DRIVER_PID=''
}
peers_on_exit_call end_driver

# window X ORDER: one window of side X (A: as started; B: between --b-on and --b-off, scraped every --b-scrape-every s)
# in the running driver's connection. Its rate is the back-end's own: the delta of its rx counter scraped at the
# window's start and end over the monotonic time between the two scrapes' answers. --b-on and --b-off run outside it,
# each followed by --settle s (a jcmd attaches a thread to the back-end and takes ~0.5 s of CPU) before the next scrape.
window() {
  local x=$1 order=$2 m0 t0 bc0 bc1 dc0 dc1 frames secs pps
  SCRAPES=0
  if [ "$x" = B ]; then toggle on; sleep "$settle"; fi
  driver_alive
  bc0=$(peers_tree_cputicks "${KEPT_PID[A]}")
  dc0=$(peers_tree_cputicks "$DRIVER_PID")
  scrape_rx A
  mono
  m0=$M t0=$MONO
  [ "$x" = A ] || scrape_start
  sleep "$windows"
  [ "$x" = A ] || scrape_stop
  scrape_rx A
  mono
  bc1=$(peers_tree_cputicks "${KEPT_PID[A]}")
  dc1=$(peers_tree_cputicks "$DRIVER_PID")
  if [ "$x" = B ]; then toggle off; sleep "$settle"; fi
  frames=$((M - m0))
  secs=$(awk -v a="$t0" -v b="$MONO" 'BEGIN { printf "%.6f", b - a }')
  pps=$(awk -v f="$frames" -v s="$secs" 'BEGIN { printf "%d", (s > 0 ? f / s : 0) }')
  emit "RUN size=$SIZE rep=$REP jvm=$JVM order=$order backend=$x toggle=$([ "$x" = A ] && echo off || echo on) pps=$pps frames=$frames seconds=$secs scrapes=$SCRAPES backend_cpu=$(ticks_share "$((bc1 - bc0))" "$secs") driver_cpu=$(ticks_share "$((dc1 - dc0))" "$secs") busy_before=na probe_ns=na"
  record "$x" "$pps"
}

# run_slot FIRST: the reps FIRST.. of this JVM (--restart-every, or all --reps) for size SIZE, as windows of one driver
# run. Scraped before the driver starts and after it ended (its drain included: the back-end took every frame), the
# back-end's counter must have moved by exactly the driver's TX-packets.
run_slot() {
  local first=$1 n=$reps b p0 p1 m_start t_start span tx brx exact=yes rc=0 bound i order x
  [ "$restart_every" = 0 ] || n=$restart_every
  REP=start
  kept_alive A
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")
  p0=$(probe)
  scrape_rx A
  m_start=$M
  # A window, B's toggles and settles and the scrapes each within their time limits: a --duration the driver does not
  # reach before the harness ends its window with SIGUSR1 (it only bounds a driver whose harness was SIGKILLed)
  bound=$(awk -v w="$warmup" -v n="$n" -v W="$windows" -v s="$settle" -v t="${PEERS_TOGGLE_TIMEOUT:-30}" \
    'BEGIN { printf "%d", w + 2 * n * (W + 2 * s + 2 * t + 4 * 10 + 5) + 60 }')
  driver_argv "${KEPT_SOCK[A]}" "$SIZE" "$bound"
  rm -f "$work/ready"
  "${DRV[@]}" --ready-file "$work/ready" </dev/null >"$work/driver.out" 2>"$work/driver.err" &
  DRIVER_PID=$!
  until [ -e "$work/ready" ]; do driver_alive; sleep 0.05; done
  sleep "$warmup"
  mono
  t_start=$MONO
  for REP in $(seq "$first" $((first + n - 1))); do
    i=$((REP - first))
    if [ $((i % 2)) = 0 ]; then order="A B"; else order="B A"; fi
    for x in $order; do window "$x" "${order/ /}"; done
  done
  REP=end
  driver_alive
  mono
  span=$(awk -v a="$t_start" -v b="$MONO" 'BEGIN { printf "%.2f", b - a }')
  kill -USR1 "$DRIVER_PID" 2>/dev/null || true   # gone meanwhile: its status and RESULT say how it ended
  wait "$DRIVER_PID" || rc=$?
  DRIVER_PID=''
  RES=$(grep '^RESULT ' "$work/driver.out" | tail -n 1 || true)
  driver_result "$rc" "backend A at $(at)"
  scrape_rx A
  p1=$(probe)
  tx=$(peers_field TX-packets "$RES")
  KEPT_TX[A]=$((KEPT_TX[A] + tx))
  brx=$((M - m_start))
  if [ "$brx" != "$tx" ]; then
    exact=no
    FAILED=$((FAILED + 1))
    peers_log "FAILURE: driver sent $tx frames in JVM $JVM's slot of size $SIZE, backend A counted $brx"
  fi
  # its window (from its --warmup to SIGUSR1) must span every window of ours (from our --warmup on): else it stopped
  # sending on its own before the last one
  if ! awk -v d="$(peers_field window_s "$RES")" -v s="$span" 'BEGIN { exit !(d + 1 >= s) }'; then
    FAILED=$((FAILED + 1))
    peers_log "FAILURE: the driver's window (window_s=$(peers_field window_s "$RES")) ended before the last window (${span}s after the warm-up) in JVM $JVM's slot of size $SIZE"
  fi
  [ "$(peers_field TX-dropped "$RES")" != 0 ] ||
    peers_log "WARNING: the driver never found the ring full in JVM $JVM's slot of size $SIZE (tx_ring_full=0): the window rates are the driver's, not the back-end's"
  emit "DRIVER size=$SIZE jvm=$JVM reps=$n tx_total=$tx backend_rx=$brx exact=$exact driver_pps=$(peers_field TX-pps "$RES") window_s=$(peers_field window_s "$RES") windows_s=$span tx_ring_full=$(peers_field TX-dropped "$RES") driver_cpu=$(peers_field cpu "$RES") busy_before=${b}% probe_ns=$p0/$p1"
}

# `virtio4j paired` of two files of values (one per line, in pair order), with --groups from a third file of one label
# per pair when given; its SUMMARY line prefixed with $3.
paired() {   # paired A_FILE B_FILE PREFIX [GROUPS_FILE]
  local line groups=()
  [ -z "${4:-}" ] || groups=(--groups "$(paste -sd, "$4")")
  line=$($v4j paired --figure pps --a "$(paste -sd, "$1")" --b "$(paste -sd, "$2")" "${groups[@]}") ||
    peers_die "virtio4j paired failed on $3: A=$(paste -sd, "$1") B=$(paste -sd, "$2") ${groups[*]}"
  emit "${line/SUMMARY /SUMMARY $3 }"
}

peers_log "A: $backend_a"
if [ "$same" = 1 ]; then
  peers_log "B: A's back-end between --b-on '$b_on' and --b-off '$b_off'${b_scrape:+, its metrics scraped every ${b_scrape}s}"
else
  peers_log "B: $backend_b"
fi
peers_log "$reps reps x sizes [$sizes] x {A,B}, ${windows:-$duration}s windows, backend CPU $backend_cpu, driver CPU $driver_cpu"
if [ -n "$windows" ]; then
  peers_log "windows of ${windows}s, ${settle}s settle after each --b-on/--b-off; per JVM and size one driver run, ${warmup}s warm-up in it; busy % and probe before and after each driver run only (DRIVER line), not between windows"
  coproc CLOCK { exec python3 -u -c 'import sys, time
for _ in sys.stdin: print("%.6f" % time.monotonic(), flush=True)'; }
  for j in $(seq 1 "$jvm_pairs"); do
    start_pair
    for SIZE in $sizes; do run_slot $(((j - 1) * (reps / jvm_pairs) + 1)); done
    stop_pair
  done
elif [ "$persistent" = 1 ]; then
  peers_log "persistent back-ends, restarted every ${restart_every} reps (0: never): $jvm_pairs JVM pair(s), warmed ${backend_warmup}s"
  for REP in $(seq 1 "$reps"); do
    # the rep's place inside its JVM pair: 0, 1, ... K-1
    i=$((REP - 1))
    [ "$restart_every" = 0 ] || i=$((i % restart_every))
    if [ "$i" = 0 ]; then
      [ "$REP" = 1 ] || stop_pair
      start_pair
    fi
    if [ $((i % 2)) = 0 ]; then order="A B"; else order="B A"; fi
    for SIZE in $sizes; do
      for x in $order; do run_kept "$x" "${order/ /}"; done
    done
  done
  stop_pair
else
  for rep in $(seq 1 "$reps"); do
    for size in $sizes; do
      run_one A "$backend_a" "$size" "$rep"
      run_one B "$backend_b" "$size" "$rep"
    done
  done
fi

for size in $sizes; do
  mapfile -t A <"$work/pps-A-$size"
  mapfile -t B <"$work/pps-B-$size"
  ratios=()
  for i in "${!A[@]}"; do ratios+=("$(awk -v a="${A[i]}" -v b="${B[i]}" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }')"); done
  ma=$(peers_median "${A[@]}")
  mb=$(peers_median "${B[@]}")
  emit "SUMMARY size=$size reps=$reps A_median_pps=$ma A_min=$(printf '%s\n' "${A[@]}" | sort -g | head -n 1) A_max=$(printf '%s\n' "${A[@]}" | sort -g | tail -n 1) B_median_pps=$mb B_min=$(printf '%s\n' "${B[@]}" | sort -g | head -n 1) B_max=$(printf '%s\n' "${B[@]}" | sort -g | tail -n 1) ratio_B_over_A=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }') paired_ratio_median=$(peers_median "${ratios[@]}") paired_ratio_min=$(printf '%s\n' "${ratios[@]}" | sort -g | head -n 1) paired_ratio_max=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -n 1)"
  if [ "$persistent" = 1 ]; then
    for j in $(seq 1 "$JVM"); do
      paired "$work/pps-A-$size-jvm$j" "$work/pps-B-$size-jvm$j" "size=$size jvm=$j"
    done
    paired "$work/pps-A-$size" "$work/pps-B-$size" "size=$size jvm=all"
    if [ "$JVM" -ge 2 ]; then
      paired "$work/pps-A-$size" "$work/pps-B-$size" "size=$size jvm=means" "$work/jvm-A-$size"
    else
      peers_log "size $size: no jvm=means line with one JVM pair (its interval would not cover per-JVM luck)"
    fi
  fi
done
[ "$FAILED" = 0 ] || peers_die "$FAILED failure(s) above: inexact counters, a back-end without RESULT, or an idle back-end that ran"
