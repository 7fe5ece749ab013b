#!/usr/bin/env bash
# Usage: peers/bench-dpdk-vhost.sh [options]
#
# Reference throughput of a vhost-user backend: DPDK virtio-user (testpmd txonly, one spinning lcore
# on --driver-cpu) sends frames of each --sizes into backend A and backend B (each on --backend-cpu),
# interleaved in one invocation: for every repetition and size, A then B. A is DPDK's own net_vhost
# (testpmd rxonly) unless --backend-a says otherwise; B is --backend-b, $BACKEND_CMD, or A again (which
# validates the harness: the ratio must come out ~1). Every run starts both processes afresh.
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
# Output: one "RUN ..." line per run, then per size "SUMMARY size=.. A_median_pps=.. A_min=.. A_max=..
# B_median_pps=.. B_min=.. B_max=.. ratio_B_over_A=.. paired_ratio_min=.. paired_ratio_max=..".
#
# Options:
#   --reps N             repetitions (default 3)
#   --sizes "S ..."      frame sizes (default "64 1500")
#   --duration S         measurement window per run (default 5)
#   --warmup S           (default 1)
#   --backend-a CMD      backend A command template (default: DPDK testpmd-vhost.sh rxonly)
#   --backend-b CMD      backend B command template (default: $BACKEND_CMD, else A)
#                        Templates: {sock} is the socket path, {cpu} the backend CPU. E.g.
#                        BACKEND_CMD='./virtio4j serve net --socket {sock} --mode rxonly'
#   --backend-cpu N      (default 0)
#   --driver-cpu N       (default 1)
#   --driver-args "..."  extra arguments for testpmd-virtio-user.sh (e.g. "--vdev-args packed_vq=1")
#   --out FILE           also append RUN/SUMMARY lines to FILE
#   --wait-idle PCT      before each run, wait until the machine is at most PCT % busy (1 s samples),
#                        for up to --wait-idle-timeout seconds (default 120; then run anyway)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

dpdk_backend="$PEERS_DIR/testpmd-vhost.sh --socket {sock} --mode rxonly --lcores 0@{cpu},1@{cpu}"
reps=3 sizes="64 1500" duration=5 warmup=1 backend_a=$dpdk_backend backend_b=${BACKEND_CMD:-}
backend_cpu=0 driver_cpu=1 driver_args='' out='' idle_pct='' idle_timeout=120
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
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$backend_b" ] || backend_b=$backend_a

work=$(mktemp -d /tmp/v4j-bench.XXXXXX)
peers_on_exit_rm "$work"
emit() { echo "$*"; [ -z "$out" ] || echo "$*" >>"$out"; }

peers_probe_build
probe() { peers_probe "$backend_cpu" "$driver_cpu"; }

run_one() {   # run_one LABEL TEMPLATE SIZE REP
  local label=$1 tmpl=$2 size=$3 rep=$4 sock res bres pps tx brx exact b p0 p1 bt0 bc0 bc1 bcpu rc=0
  sock="$work/vhost-$label-$size-$rep.sock"
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")
  p0=$(probe)
  peers_backend_start "$tmpl" "$sock" "$backend_cpu" "$work/backend-$label-$size-$rep"
  bt0=$(peers_now)
  bc0=$(peers_tree_cputicks "$BACKEND_PID")
  # shellcheck disable=SC2086 # driver_args is a list of words
  res=$("$PEERS_DIR/testpmd-virtio-user.sh" --socket "$sock" --mode txonly --frame-size "$size" \
    --duration "$duration" --warmup "$warmup" --lcores "0@$driver_cpu,1@$driver_cpu" \
    --file-prefix "v4j-bench-vu-$$" $driver_args 2>"$work/driver.err") || rc=$?
  bc1=$(peers_tree_cputicks "$BACKEND_PID")
  bcpu=$(awk -v c="$((bc1 - bc0))" -v hz="$(peers_clk_tck)" -v w="$(peers_elapsed "$bt0")" 'BEGIN { printf "%.2f", (w > 0 ? c / hz / w : 0) }')
  bres=$(peers_backend_stop)
  rm -f "$sock"
  p1=$(probe)
  if [ "$rc" != 0 ] || [ -z "$res" ]; then
    tail -n 20 "$work/driver.err" >&2
    peers_die "driver failed in run $label size $size rep $rep"
  fi
  pps=$(peers_field TX-pps "$res")
  tx=$(peers_field TX-packets "$res")
  brx=$(peers_field RX-packets "$bres")
  exact=n/a
  if [ -n "$brx" ]; then if [ "$brx" = "$tx" ]; then exact=yes; else exact=no; fi; fi
  emit "RUN size=$size rep=$rep backend=$label pps=$pps window_pkts=$(peers_field win-TX-packets "$res") tx_total=$tx backend_rx=${brx:-na} exact=$exact tx_ring_full=$(peers_field TX-dropped "$res") driver_cpu=$(peers_field cpu "$res") backend_cpu=$bcpu busy_before=${b}% probe_ns=$p0/$p1"
  [ "$exact" != no ] || peers_log "WARNING: driver sent $tx frames, backend counted $brx"
  echo "$pps" >>"$work/pps-$label-$size"
}

peers_log "A: $backend_a"
peers_log "B: $backend_b"
peers_log "$reps reps x sizes [$sizes] x {A,B}, ${duration}s windows, backend CPU $backend_cpu, driver CPU $driver_cpu"
for rep in $(seq 1 "$reps"); do
  for size in $sizes; do
    run_one A "$backend_a" "$size" "$rep"
    run_one B "$backend_b" "$size" "$rep"
  done
done

for size in $sizes; do
  mapfile -t A <"$work/pps-A-$size"
  mapfile -t B <"$work/pps-B-$size"
  ratios=()
  for i in "${!A[@]}"; do ratios+=("$(awk -v a="${A[i]}" -v b="${B[i]}" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }')"); done
  ma=$(peers_median "${A[@]}")
  mb=$(peers_median "${B[@]}")
  emit "SUMMARY size=$size reps=$reps A_median_pps=$ma A_min=$(printf '%s\n' "${A[@]}" | sort -g | head -n 1) A_max=$(printf '%s\n' "${A[@]}" | sort -g | tail -n 1) B_median_pps=$mb B_min=$(printf '%s\n' "${B[@]}" | sort -g | head -n 1) B_max=$(printf '%s\n' "${B[@]}" | sort -g | tail -n 1) ratio_B_over_A=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }') paired_ratio_median=$(peers_median "${ratios[@]}") paired_ratio_min=$(printf '%s\n' "${ratios[@]}" | sort -g | head -n 1) paired_ratio_max=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -n 1)"
done
