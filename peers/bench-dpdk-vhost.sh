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
# TX-packets is compared with the backend's RESULT RX-packets when it prints one (exact=yes|no|n/a).
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
# --backend-warmup s into each); then per rep and size a fresh driver runs into A then B (odd reps) or
# B then A (even reps), each back-end serving one front-end after another. The back-end not being
# measured is stopped (SIGSTOP) meanwhile, so that its housekeeping (GC, a flight recording's
# periodic work) takes nothing from the measured one's CPU, and both are stopped while the busy % is
# sampled. Every --restart-every reps both are restarted (a new "JVM pair"), so that the per-JVM luck
# shows and is averaged over. Counters, exact per run: when a template holds {metrics}, the harness
# gives that back-end a unix socket there (e.g. "--metrics unix:{metrics}") and scrapes it before and
# after each run: backend_rx is the delta of virtio4j_good_packets_total{direction="rx"}, compared with
# the driver's TX-packets (else backend_rx=na, exact=n/a). When a back-end stops, its RESULT
# RX-packets is compared with everything the drivers sent it, warm-up included ("BACKEND" line).
#
# Output: one "RUN ..." line per run, then per size "SUMMARY size=.. A_median_pps=.. A_min=.. A_max=..
# B_median_pps=.. B_min=.. B_max=.. ratio_B_over_A=.. paired_ratio_min=.. paired_ratio_max=..".
# --persistent adds jvm=N and order=AB|BA to each RUN line, a "BACKEND jvm=N backend=A|B rx_total=
# driver_tx_total= exact=" line per back-end stopped, and per size, from `virtio4j paired` (B/A as the
# geometric mean of per-rep ratios, 95% t interval, half-width in %):
#   SUMMARY size=S jvm=N figure=pps pairs=REPS ...    each JVM pair's reps
#   SUMMARY size=S jvm=all figure=pps pairs=REPS ...  every rep pooled, as if independent
#   SUMMARY size=S jvm=means figure=pps pairs=J ...   one value per JVM pair (its geometric means): the
#                                                     interval that covers per-JVM luck; quote this one
#                                                     (with 2+ JVM pairs; n/a with one)
# Exits 1 after the summaries when a run's or a back-end's counters were not exact.
#
# Options:
#   --reps N             repetitions (default 3)
#   --sizes "S ..."      frame sizes (default "64 1500")
#   --duration S         measurement window per run (default 5)
#   --warmup S           (default 1)
#   --backend-a CMD      backend A command template (default: DPDK testpmd-vhost.sh rxonly)
#   --backend-b CMD      backend B command template (default: $BACKEND_CMD, else A)
#                        Templates: {sock} is the socket path, {cpu} the backend CPU, and with
#                        --persistent {metrics} a unix socket path for its metrics. E.g.
#                        BACKEND_CMD='./virtio4j serve net --socket {sock} --mode rxonly'
#   --backend-cpu N      (default 0)
#   --driver-cpu N       (default 1)
#   --driver-args "..."  extra arguments for testpmd-virtio-user.sh (e.g. "--vdev-args packed_vq=1")
#   --out FILE           also append RUN/SUMMARY lines to FILE
#   --wait-idle PCT      before each run, wait until the machine is at most PCT % busy (1 s samples),
#                        for up to --wait-idle-timeout seconds (default 120; then run anyway)
#   --persistent         keep A and B running across reps (see above)
#   --restart-every K    with --persistent: restart both back-ends every K reps (default 10; 0: never)
#   --backend-warmup S   with --persistent: unmeasured driver run into each back-end after each start,
#                        before the first measured rep (default 5; 0: none)
#   --v4j CMD            the virtio4j command line for the statistics (default: this checkout's ./virtio4j)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

dpdk_backend="$PEERS_DIR/testpmd-vhost.sh --socket {sock} --mode rxonly --lcores 0@{cpu},1@{cpu}"
reps=3 sizes="64 1500" duration=5 warmup=1 backend_a=$dpdk_backend backend_b=${BACKEND_CMD:-}
backend_cpu=0 driver_cpu=1 driver_args='' out='' idle_pct='' idle_timeout=120
persistent=0 restart_every=10 backend_warmup=5 v4j="$(cd "$PEERS_DIR/.." && pwd)/virtio4j"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --backend-a) backend_a=$2; shift 2 ;;
    --backend-b) backend_b=$2; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --driver-cpu) driver_cpu=$2; shift 2 ;;
    --driver-args) driver_args=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --wait-idle) idle_pct=$2; shift 2 ;;
    --wait-idle-timeout) idle_timeout=$2; shift 2 ;;
    --persistent) persistent=1; shift ;;
    --restart-every) restart_every=$2; shift 2 ;;
    --backend-warmup) backend_warmup=$2; shift 2 ;;
    --v4j) v4j=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$backend_b" ] || backend_b=$backend_a
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || peers_die "--reps takes a positive whole number, got '$reps'"
[[ "$restart_every" =~ ^[0-9]+$ ]] || peers_die "--restart-every takes a whole number of reps, got '$restart_every'"
[[ "$backend_warmup" =~ ^[0-9]+$ ]] || peers_die "--backend-warmup takes a whole number of seconds, got '$backend_warmup'"
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

# drive SOCK SIZE SECONDS: DPDK virtio-user txonly into the back-end at SOCK for a --warmup and a window of SECONDS;
# sets RES to its RESULT line (dies when it fails).
RES=
drive() {
  local rc=0
  # shellcheck disable=SC2086 # driver_args is a list of words
  RES=$("$PEERS_DIR/testpmd-virtio-user.sh" --socket "$1" --mode txonly --frame-size "$2" \
    --duration "$3" --warmup "$warmup" --lcores "0@$driver_cpu,1@$driver_cpu" \
    --file-prefix "v4j-bench-vu-$$" $driver_args 2>"$work/driver.err") || rc=$?
  if [ "$rc" != 0 ] || [ -z "$RES" ]; then
    tail -n 20 "$work/driver.err" >&2
    peers_die "driver into $1 failed (status $rc)"
  fi
}

# CPUs' worth of time from tick count $1 over the seconds since peers_now time $2
cpu_share() { awk -v c="$1" -v hz="$(peers_clk_tck)" -v w="$(peers_elapsed "$2")" 'BEGIN { printf "%.2f", (w > 0 ? c / hz / w : 0) }'; }

run_one() {   # run_one LABEL TEMPLATE SIZE REP
  local label=$1 tmpl=$2 size=$3 rep=$4 sock bres pps tx brx exact b p0 p1 bt0 bc0 bc1 bcpu
  sock="$work/vhost-$label-$size-$rep.sock"
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")
  p0=$(probe)
  peers_backend_start "$tmpl" "$sock" "$backend_cpu" "$work/backend-$label-$size-$rep"
  bt0=$(peers_now)
  bc0=$(peers_tree_cputicks "$BACKEND_PID")
  drive "$sock" "$size" "$duration"
  bc1=$(peers_tree_cputicks "$BACKEND_PID")
  bcpu=$(cpu_share "$((bc1 - bc0))" "$bt0")
  bres=$(peers_backend_stop)
  rm -f "$sock"
  p1=$(probe)
  pps=$(peers_field TX-pps "$RES")
  tx=$(peers_field TX-packets "$RES")
  brx=$(peers_field RX-packets "$bres")
  exact=n/a
  if [ -n "$brx" ]; then if [ "$brx" = "$tx" ]; then exact=yes; else exact=no; fi; fi
  emit "RUN size=$size rep=$rep backend=$label pps=$pps window_pkts=$(peers_field win-TX-packets "$RES") tx_total=$tx backend_rx=${brx:-na} exact=$exact tx_ring_full=$(peers_field TX-dropped "$RES") driver_cpu=$(peers_field cpu "$RES") backend_cpu=$bcpu busy_before=${b}% probe_ns=$p0/$p1"
  [ "$exact" != no ] || peers_log "WARNING: driver sent $tx frames, backend counted $brx"
  echo "$pps" >>"$work/pps-$label-$size"
}

# ---------------------------------------------------------------------------------------------- --persistent
# Per back-end X (A, B) of the current JVM pair ($JVM): its process group, stdout file, socket, metrics socket (empty
# without {metrics}) and the frames the drivers sent it since it started.
declare -A KEPT_PID=() KEPT_OUT=() KEPT_SOCK=() KEPT_METRICS=() KEPT_TX=()
JVM=0
INEXACT=0

# A stopped (SIGSTOP) process acts on SIGTERM only once continued: on any exit, continue ours before the cleanup's TERM.
continue_kept() { local x; for x in "${!KEPT_PID[@]}"; do kill -CONT -- "-${KEPT_PID[$x]}" 2>/dev/null || true; done; }
peers_on_exit_call continue_kept
pause() { kill -STOP -- "-${KEPT_PID[$1]}"; }
resume() { kill -CONT -- "-${KEPT_PID[$1]}"; }

# Frames back-end X counted as received: virtio4j_good_packets_total{direction="rx"} over its queues, scraped from its
# --metrics socket; empty without one.
scrape_rx() {
  local m=${KEPT_METRICS[$1]} text
  [ -n "$m" ] || return 0
  text=$(curl -sf --max-time 10 --unix-socket "$m" http://localhost/metrics) || peers_die "backend $1: no answer from its metrics at $m"
  awk '/^virtio4j_good_packets_total\{/ && /direction="rx"/ { s += $NF; n++ }
    END { if (n == 0) exit 1; printf "%d\n", s }' <<<"$text" || peers_die "backend $1: no virtio4j_good_packets_total{direction=\"rx\"} at $m"
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
  KEPT_TX[$x]=0
  if [ -n "$m" ]; then   # the metrics socket appears just before the vhost-user one; wait for it all the same
    peers_wait_socket "$m" 30 "$BACKEND_PID" || peers_die "backend $x: no metrics socket at $m"
  fi
  pause "$x"
}

stop_kept() {   # stop_kept X: its RESULT RX-packets against everything the drivers sent it
  local x=$1 bres brx exact=n/a
  resume "$x"
  bres=$(peers_backend_stop "${KEPT_PID[$x]}" "${KEPT_OUT[$x]}")
  brx=$(peers_field RX-packets "$bres")
  if [ -n "$brx" ]; then if [ "$brx" = "${KEPT_TX[$x]}" ]; then exact=yes; else exact=no; INEXACT=$((INEXACT + 1)); fi; fi
  emit "BACKEND jvm=$JVM backend=$x rx_total=${brx:-na} driver_tx_total=${KEPT_TX[$x]} exact=$exact"
  rm -f "${KEPT_SOCK[$x]}"
  unset "KEPT_PID[$x]"
}

# A new JVM pair: both started, then warmed one after the other with an unmeasured driver run of --backend-warmup s
# (of the first size) while the other is stopped.
start_pair() {
  local x size=${sizes%% *}
  JVM=$((JVM + 1))
  start_kept A "$backend_a"
  start_kept B "$backend_b"
  if [ "$backend_warmup" -gt 0 ]; then
    for x in A B; do
      resume "$x"
      drive "${KEPT_SOCK[$x]}" "$size" "$backend_warmup"
      KEPT_TX[$x]=$((KEPT_TX[$x] + $(peers_field TX-packets "$RES")))
      pause "$x"
    done
  fi
  peers_log "JVM pair $JVM: A pid ${KEPT_PID[A]}, B pid ${KEPT_PID[B]}, warmed ${backend_warmup}s each"
}
stop_pair() { stop_kept A; stop_kept B; }

run_kept() {   # run_kept X SIZE REP ORDER
  local x=$1 size=$2 rep=$3 order=$4 other=A b p0 p1 bt0 bc0 bc1 oc0 oc1 m0 m1 tx brx exact=n/a pps
  [ "$x" = A ] && other=B
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")   # both back-ends are stopped: this is the other load
  p0=$(probe)
  resume "$x"
  m0=$(scrape_rx "$x")
  bt0=$(peers_now)
  bc0=$(peers_tree_cputicks "${KEPT_PID[$x]}")
  oc0=$(peers_tree_cputicks "${KEPT_PID[$other]}")
  drive "${KEPT_SOCK[$x]}" "$size" "$duration"
  bc1=$(peers_tree_cputicks "${KEPT_PID[$x]}")
  oc1=$(peers_tree_cputicks "${KEPT_PID[$other]}")
  m1=$(scrape_rx "$x")
  pause "$x"
  p1=$(probe)
  pps=$(peers_field TX-pps "$RES")
  tx=$(peers_field TX-packets "$RES")
  KEPT_TX[$x]=$((KEPT_TX[$x] + tx))
  brx=na
  if [ -n "$m0" ]; then
    brx=$((m1 - m0))
    if [ "$brx" = "$tx" ]; then exact=yes; else exact=no; INEXACT=$((INEXACT + 1)); fi
  fi
  emit "RUN size=$size rep=$rep jvm=$JVM order=$order backend=$x pps=$pps window_pkts=$(peers_field win-TX-packets "$RES") tx_total=$tx backend_rx=$brx exact=$exact tx_ring_full=$(peers_field TX-dropped "$RES") driver_cpu=$(peers_field cpu "$RES") backend_cpu=$(cpu_share "$((bc1 - bc0))" "$bt0") other_cpu=$(cpu_share "$((oc1 - oc0))" "$bt0") busy_before=${b}% probe_ns=$p0/$p1"
  [ "$exact" != no ] || peers_log "WARNING: driver sent $tx frames, backend $x counted $brx"
  echo "$pps" >>"$work/pps-$x-$size"
  echo "$pps" >>"$work/pps-$x-$size-jvm$JVM"
}

# `virtio4j paired` of two files of values (one per line, in pair order), its SUMMARY line prefixed with $3
paired() {   # paired A_FILE B_FILE PREFIX
  local line
  line=$($v4j paired --figure pps --a "$(paste -sd, "$1")" --b "$(paste -sd, "$2")") ||
    peers_die "virtio4j paired failed on $3: A=$(paste -sd, "$1") B=$(paste -sd, "$2")"
  emit "${line/SUMMARY /SUMMARY $3 }"
}
# the geometric mean of a file's values
geomean() { awk '{ s += log($1); n++ } END { printf "%.6g\n", (n ? exp(s / n) : 0) }' "$1"; }

peers_log "A: $backend_a"
peers_log "B: $backend_b"
peers_log "$reps reps x sizes [$sizes] x {A,B}, ${duration}s windows, backend CPU $backend_cpu, driver CPU $driver_cpu"
if [ "$persistent" = 1 ]; then
  peers_log "persistent back-ends, restarted every ${restart_every} reps (0: never), warmed ${backend_warmup}s"
  for rep in $(seq 1 "$reps"); do
    if [ "$rep" = 1 ] || { [ "$restart_every" -gt 0 ] && [ $(((rep - 1) % restart_every)) = 0 ]; }; then
      [ "$rep" = 1 ] || stop_pair
      start_pair
    fi
    if [ $((rep % 2)) = 1 ]; then order="A B"; else order="B A"; fi
    for size in $sizes; do
      for x in $order; do run_kept "$x" "$size" "$rep" "${order/ /}"; done
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
    : >"$work/means-A-$size"
    : >"$work/means-B-$size"
    for j in $(seq 1 "$JVM"); do
      paired "$work/pps-A-$size-jvm$j" "$work/pps-B-$size-jvm$j" "size=$size jvm=$j"
      geomean "$work/pps-A-$size-jvm$j" >>"$work/means-A-$size"
      geomean "$work/pps-B-$size-jvm$j" >>"$work/means-B-$size"
    done
    paired "$work/pps-A-$size" "$work/pps-B-$size" "size=$size jvm=all"
    paired "$work/means-A-$size" "$work/means-B-$size" "size=$size jvm=means"
  fi
done
[ "$INEXACT" = 0 ] || peers_die "$INEXACT run(s) or back-end(s) with inexact counters"
