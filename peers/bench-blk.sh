#!/usr/bin/env bash
# Usage: peers/bench-blk.sh [options]
#
# The virtio-blk benchmark: `virtio4j drive blk --rw randread --bs 4k --iodepth 32 --queues 1` (pinned to
# --driver-cpu) against pairs of vhost-user-blk back-ends (pinned to --backend-cpu), interleaved A B A B in one
# invocation, each run with both processes started afresh:
#   null: A = qemu-storage-daemon's null-co export (peers/qsd.sh --null, read-zeroes off), B = `serve blk --null`
#         (no storage, and neither touches the data buffers: the cost of the virtio-blk path itself);
#   file: C = `serve blk --file IMG --io sync`, D = `serve blk --file IMG --io io_uring`, IMG a file of --file-size
#         on tmpfs (/dev/shm), written full first (with --file; skipped without).
# Per run a "RUN ..." line: IOPS, MiB/s, completion latency p50/p99/p99.9 (us), the driver's process CPU (CPUs'
# worth over the run) and the back-end's (its process tree over its whole life), busy % of the machine before.
# Per pair a "SUMMARY ..." line: medians, min and max of IOPS, the ratio of medians and the median/min/max of the
# paired per-rep ratios. Templates may use {sock} {cpu} {size} {queues} {img}.
#
# Options:
#   --reps N            repetitions (default 3)
#   --runtime S         drive blk --runtime per run (default 5)
#   --bs B / --iodepth N / --queues N / --rw RW   the drive blk job (defaults 4k / 32 / 1 / randread)
#   --size SIZE         size of the null devices (default 1G)
#   --file              also run the file pair (C, D)
#   --file-size SIZE    (default 256M)
#   --backend-a CMD / --backend-b CMD / --backend-c CMD / --backend-d CMD   override a back-end template
#   --driver-cmd CMD    the driver (default: ROOT/virtio4j drive blk); {sock} is appended as --socket
#   --backend-cpu N     (default 1)   --driver-cpu N   (default 0)
#   --out FILE          also append RUN/SUMMARY lines to FILE
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
ROOT=$(cd "$PEERS_DIR/.." && pwd)

reps=3 runtime=5 bs=4k iodepth=32 queues=1 rw=randread size=1G files=0 file_size=256M
backend_cpu=1 driver_cpu=0 out='' driver_cmd="$ROOT/virtio4j drive blk"
backend_a="$PEERS_DIR/qsd.sh --socket {sock} --null {size} --read-zeroes off --queues {queues}"
backend_b="$ROOT/virtio4j serve blk --socket {sock} --null {size} --queues {queues}"
backend_c="$ROOT/virtio4j serve blk --socket {sock} --file {img} --queues {queues} --io sync"
backend_d="$ROOT/virtio4j serve blk --socket {sock} --file {img} --queues {queues} --io io_uring"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --bs) bs=$2; shift 2 ;;
    --iodepth) iodepth=$2; shift 2 ;;
    --queues) queues=$2; shift 2 ;;
    --rw) rw=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --file) files=1; shift ;;
    --file-size) file_size=$2; shift 2 ;;
    --backend-a) backend_a=$2; shift 2 ;;
    --backend-b) backend_b=$2; shift 2 ;;
    --backend-c) backend_c=$2; shift 2 ;;
    --backend-d) backend_d=$2; shift 2 ;;
    --driver-cmd) driver_cmd=$2; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --driver-cpu) driver_cpu=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done

work=$(mktemp -d /tmp/v4j-bench-blk.XXXXXX)
peers_on_exit_rm "$work"
emit() { echo "$*"; [ -z "$out" ] || echo "$*" >>"$out"; }
img=''
if [ "$files" = 1 ]; then
  img=$(mktemp /dev/shm/v4j-bench-blk.XXXXXX)
  peers_on_exit_rm "$img"
  # written full: reads of a hole on tmpfs cost less than reads of data
  head -c "$(numfmt --from=iec "${file_size^^}")" /dev/zero >"$img"
fi
# the CLI jar is built once here, not inside the first timed run
"$ROOT/virtio4j" --version >/dev/null

run_one() {   # run_one LABEL TEMPLATE REP
  local label=$1 tmpl=$2 rep=$3 sock cmd res b bt0 bc0 bc1 bcpu rc=0 dir=read
  sock="$work/blk-$label-$rep.sock"
  cmd=${tmpl//\{size\}/$size}
  cmd=${cmd//\{queues\}/$queues}
  cmd=${cmd//\{img\}/$img}
  b=$(peers_busy_pct)
  peers_backend_start "$cmd" "$sock" "$backend_cpu" "$work/backend-$label-$rep"
  bt0=$(peers_now)
  bc0=$(peers_tree_cputicks "$BACKEND_PID")
  # shellcheck disable=SC2086 # driver_cmd is a command line
  res=$(taskset -c "$driver_cpu" $driver_cmd --socket "$sock" --rw "$rw" --bs "$bs" --iodepth "$iodepth" \
    --queues "$queues" --runtime "$runtime" 2>"$work/driver.err" | grep '^RESULT ') || rc=$?
  bc1=$(peers_tree_cputicks "$BACKEND_PID")
  bcpu=$(awk -v c="$((bc1 - bc0))" -v hz="$(peers_clk_tck)" -v w="$(peers_elapsed "$bt0")" 'BEGIN { printf "%.2f", (w > 0 ? c / hz / w : 0) }')
  peers_backend_stop >/dev/null
  rm -f "$sock"
  if [ "$rc" != 0 ] || [ -z "$res" ]; then
    tail -n 20 "$work/driver.err" >&2
    tail -n 20 "$work/backend-$label-$rep.err" >&2 || true
    emit "RUN backend=$label rep=$rep FAILED (driver exit $rc)"
    return 0
  fi
  [ "$rw" = write ] || [ "$rw" = randwrite ] && dir=write
  local iops
  iops=$(peers_field "$dir-iops" "$res")
  emit "RUN backend=$label rep=$rep iops=$iops bw_mibs=$(peers_field "$dir-bw-mibs" "$res") p50_us=$(peers_field "$dir-clat-p50-us" "$res") p99_us=$(peers_field "$dir-clat-p99-us" "$res") p999_us=$(peers_field "$dir-clat-p999-us" "$res") requests=$(peers_field requests "$res") io_errors=$(peers_field io-errors "$res") driver_cpu=$(awk -v c="$(peers_field cpu-s "$res")" -v w="$(peers_field runtime-s "$res")" 'BEGIN { printf "%.2f", (w > 0 ? c / w : 0) }') backend_cpu=$bcpu busy_before=${b}%"
  echo "$iops" >>"$work/iops-$label"
}

summary() {   # summary A B
  local A B ratios=() i ma mb
  [ -s "$work/iops-$1" ] && [ -s "$work/iops-$2" ] || { emit "SUMMARY $1 vs $2: not enough runs"; return 0; }
  mapfile -t A <"$work/iops-$1"
  mapfile -t B <"$work/iops-$2"
  for i in "${!A[@]}"; do
    [ -n "${B[i]:-}" ] && ratios+=("$(awk -v a="${A[i]}" -v b="${B[i]}" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }')")
  done
  ma=$(peers_median "${A[@]}")
  mb=$(peers_median "${B[@]}")
  emit "SUMMARY A=$1 B=$2 rw=$rw bs=$bs iodepth=$iodepth queues=$queues reps=$reps A_median_iops=$ma A_min=$(printf '%s\n' "${A[@]}" | sort -g | head -n 1) A_max=$(printf '%s\n' "${A[@]}" | sort -g | tail -n 1) B_median_iops=$mb B_min=$(printf '%s\n' "${B[@]}" | sort -g | head -n 1) B_max=$(printf '%s\n' "${B[@]}" | sort -g | tail -n 1) ratio_B_over_A=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }') paired_ratio_median=$(peers_median "${ratios[@]}") paired_ratio_min=$(printf '%s\n' "${ratios[@]}" | sort -g | head -n 1) paired_ratio_max=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -n 1)"
}

peers_log "null pair: A = $backend_a"
peers_log "           B = $backend_b"
[ "$files" = 0 ] || peers_log "file pair: C = $backend_c; D = $backend_d (image $img, $file_size)"
peers_log "$reps reps, drive blk --rw $rw --bs $bs --iodepth $iodepth --queues $queues --runtime $runtime on CPU $driver_cpu, back-ends on CPU $backend_cpu"
if [ "$files" = 1 ]; then
  # an engine this build or kernel lacks (io_uring) makes the back-end exit at start: say so and skip it
  if ! (cmd=${backend_d//\{queues\}/$queues}; peers_backend_start "${cmd//\{img\}/$img}" "$work/probe.sock" "$backend_cpu" \
      "$work/probe" && peers_backend_stop >/dev/null) 2>/dev/null; then
    peers_log "WARNING: back-end D did not start ($(head -n 1 "$work/probe.err" 2>/dev/null)); the file pair runs C only"
    backend_d=''
  fi
fi
for rep in $(seq 1 "$reps"); do
  run_one qsd-null "$backend_a" "$rep"
  run_one serve-blk-null "$backend_b" "$rep"
  if [ "$files" = 1 ]; then
    run_one serve-blk-sync "$backend_c" "$rep"
    [ -z "$backend_d" ] || run_one serve-blk-io_uring "$backend_d" "$rep"
  fi
done
summary qsd-null serve-blk-null
[ "$files" = 0 ] || summary serve-blk-sync serve-blk-io_uring
