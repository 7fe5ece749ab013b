#!/usr/bin/env bash
# Usage: peers/bench-publish.sh [options]
#
# Lesson lazy-avail-publish in its original set-up: a driver transmitting 64-byte frames into a vhost-user
# back-end, with avail.idx published per buffer (eager), once per kick (lazy) or adaptively. The driver is ours,
# `virtio4j drive net --mode txonly --avail-publish P` (the front-end library's NetDriver), on --driver-cpu; the
# back-ends, each on --backend-cpu, are the rows:
#   dpdk          vhost-user DPDK: testpmd's net_vhost in rxonly (testpmd-vhost.sh), busy-polling
#   serve-poll    vhost-user serve poll: `virtio4j serve net --mode rxonly --notify poll`, busy-polling
#   serve-notify  vhost-user serve notify: `virtio4j serve net --mode rxonly --notify notify`, sleeping on kicks
#                 (the reviewer's row: lazy publication may need more kicks per buffer)
# The driver's loop reclaims used frames, adds up to 64 (as many as the ring has room for), then calls kickTx, where
# lazy publication stores avail.idx once for them and the back-end is kicked if it asked to be.
# The serve-poll and serve-notify rows also run inside `virtio4j experiments` (rows lazy-avail-publish-vhost-user,
# -vhost-user-adaptive and -vhost-user-notify: the same driver loop and back-end in one JVM, with adaptive pairs,
# half-widths and verdicts); the dpdk row is only here, so that the experiments run on a machine without DPDK.
# Every run starts its back-end and its driver afresh. Per repetition and row the three policies run back to back,
# eager lazy adaptive in odd repetitions and adaptive lazy eager in even ones, so each of the pairs (eager, lazy)
# and (eager, adaptive) is measured A B, then B A, ...
#
# Per run: the driver's TX-pps (frames added per second of its measuring window, after --warmup seconds of sending
# that the JIT compiles the path in), its kicks and avail.idx stores (publications) per frame over the whole run (the
# transmit ring's own counters), and exactness: after its window the driver waits (--drain) until the
# back-end has used every frame, so the back-end's RESULT RX-packets must equal the driver's TX-packets
# (exact=yes|no; any "no" makes the script exit 1). Before each run the machine's busy % over 1 s and the
# cache-line ping-pong probe between the two CPUs (after the run too); backend_cpu = CPUs' worth of time the
# back-end's process tree got over its life, driver_cpu = the same for the driver's process over its sending window
# (both ~1.00 when each had its CPU to itself; well below, the run measured the other load).
#
# Output:
#   RUN row=ID rep=N publish=P pps= window_tx= tx= backend_rx= exact= kicks= publications= kicks_per_buf=
#       publications_per_buf= driver_cpu= backend_cpu= busy_before= probe_ns=before/after
#   SUMMARY lesson=lazy-avail-publish row=ID b=lazy|adaptive figure=pps|kicks_per_buf|publications_per_buf pairs= ...
#       one per row, B policy and figure: `virtio4j paired` of eager (A) against B, pair by pair (medians, min/max,
#       B/A as the geometric mean of the per-pair ratios, 95% interval, half-width; n/a where a value is 0), ending
#       in verdict= (reproduced, opposite, refuted, inconclusive, not_measured: the experiments' set) where a claim is
#       judged: pps of dpdk and serve-poll (claimed B/A 1.67, 3.79 -> 6.33 Mpps), kicks_per_buf of serve-notify
#       (claimed: more kicks)
# Exit 0 when every run's counters were exact.
#
# Options:
#   --rows "ID ..."      rows to run (default "dpdk serve-poll serve-notify")
#   --reps N             repetitions (default 5); each gives one pair per policy B
#   --duration S         driver's measuring window per run (default 2)
#   --warmup S           driver's sending before the window (default 1)
#   --packets N          send exactly N frames per run instead of --warmup and --duration (a short form for tests:
#                        TX-pps is then over the whole run, JIT warm-up included)
#   --frame-size B       (default 64)
#   --driver-args "..."  more `drive net` arguments (e.g. "--ring packed --queue-size 1024")
#   --v4j CMD            the virtio4j command line (default: this checkout's ./virtio4j)
#   --backend-cpu N      (default 0)
#   --driver-cpu N       (default 1)
#   --wait-idle PCT      before each run, wait until the machine is at most PCT % busy (1 s samples), for up to
#                        --wait-idle-timeout seconds (default 120; then run anyway)
#   --out FILE           also append RUN and SUMMARY lines to FILE
#   --timeout S          a driver still running after S seconds is killed and the script fails (default 120 plus
#                        --warmup and --duration)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

rows="dpdk serve-poll serve-notify" reps=5 duration=2 warmup=1 packets='' size=64 driver_args=''
v4j="$(cd "$PEERS_DIR/.." && pwd)/virtio4j" backend_cpu=0 driver_cpu=1 idle_pct='' idle_timeout=120 out='' run_timeout=''
while [ $# -gt 0 ]; do
  case $1 in
    --rows) rows=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --packets) packets=$2; shift 2 ;;
    --frame-size) size=$2; shift 2 ;;
    --driver-args) driver_args=$2; shift 2 ;;
    --v4j) v4j=$2; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --driver-cpu) driver_cpu=$2; shift 2 ;;
    --wait-idle) idle_pct=$2; shift 2 ;;
    --wait-idle-timeout) idle_timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --timeout) run_timeout=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[[ $reps =~ ^[1-9][0-9]*$ ]] || peers_die "--reps must be a positive integer, got '$reps'"
[ -z "$packets" ] || [[ $packets =~ ^[1-9][0-9]*$ ]] || peers_die "--packets must be a positive integer, got '$packets'"
for row in $rows; do
  case $row in dpdk | serve-poll | serve-notify) ;; *) peers_die "--rows: unknown row '$row' (dpdk serve-poll serve-notify)" ;; esac
done

backend_of() {
  case $1 in
    dpdk) echo "$PEERS_DIR/testpmd-vhost.sh --socket {sock} --mode rxonly --lcores 0@{cpu},1@{cpu}" ;;
    serve-poll) echo "$v4j serve net --socket {sock} --mode rxonly --notify poll" ;;
    serve-notify) echo "$v4j serve net --socket {sock} --mode rxonly --notify notify" ;;
  esac
}
if [ -n "$packets" ]; then amount="--packets $packets"; else amount="--warmup $warmup --duration $duration"; fi
[ -n "$run_timeout" ] || run_timeout=$(awk -v w="$warmup" -v d="$duration" 'BEGIN { printf "%.0f", 120 + w + d }')

work=$(mktemp -d /tmp/v4j-publish.XXXXXX)
peers_on_exit_rm "$work"
emit() { echo "$*"; [ -z "$out" ] || echo "$*" >>"$out"; }
ratio() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.6g\n", (d > 0 ? n / d : 0) }'; }

peers_probe_build
probe() { peers_probe "$backend_cpu" "$driver_cpu"; }
inexact=0

run_one() {   # run_one ROW PUBLISH REP
  local row=$1 pub=$2 rep=$3 sock res bres b p0 p1 bt0 bc0 bc1 bcpu rc=0 tx brx exact kicks pubs dpid
  sock="$work/vhost-$row-$pub-$rep.sock"
  b=$(peers_busy_wait "$idle_pct" "$idle_timeout")
  p0=$(probe)
  peers_backend_start "$(backend_of "$row")" "$sock" "$backend_cpu" "$work/backend-$row-$pub-$rep"
  bt0=$(peers_now)
  bc0=$(peers_tree_cputicks "$BACKEND_PID")
  # the driver in its own process group, registered for cleanup like the back-end, so that nothing outlives us
  # shellcheck disable=SC2086 # amount and driver_args are lists of words
  setsid taskset -c "$driver_cpu" timeout -k 5 "$run_timeout" bash -c "exec $v4j drive net --socket $sock --mode txonly --frame-size $size \
    --avail-publish $pub $amount $driver_args" </dev/null >"$work/driver.out" 2>"$work/driver.err" &
  dpid=$!
  peers_on_exit_kill_group "$dpid"
  wait "$dpid" || rc=$?
  bc1=$(peers_tree_cputicks "$BACKEND_PID")
  bcpu=$(awk -v c="$((bc1 - bc0))" -v hz="$(peers_clk_tck)" -v w="$(peers_elapsed "$bt0")" 'BEGIN { printf "%.2f", (w > 0 ? c / hz / w : 0) }')
  bres=$(peers_backend_stop)
  rm -f "$sock"
  p1=$(probe)
  res=$(grep -E '^RESULT ' "$work/driver.out" | tail -n 1 || true)
  if [ -z "$res" ]; then
    tail -n 20 "$work/driver.err" >&2
    peers_die "driver failed (status $rc) in row $row, $pub, rep $rep"
  fi
  tx=$(peers_field TX-packets "$res")
  brx=$(peers_field RX-packets "$bres")
  exact=no
  [ "$rc" = 0 ] && [ -n "$brx" ] && [ "$brx" = "$tx" ] && exact=yes
  if [ "$exact" = no ]; then
    inexact=$((inexact + 1))
    peers_log "WARNING: row $row $pub rep $rep: driver exit $rc, sent $tx frames (in flight $(peers_field TX-in-flight "$res")), back-end counted ${brx:-nothing}"
  fi
  kicks=$(peers_field TX-kicks "$res")
  pubs=$(peers_field TX-publications "$res")
  emit "RUN row=$row rep=$rep publish=$pub pps=$(peers_field TX-pps "$res") window_tx=$(peers_field win-TX-packets "$res") tx=$tx backend_rx=${brx:-na} exact=$exact kicks=$kicks publications=$pubs kicks_per_buf=$(ratio "$kicks" "$tx") publications_per_buf=$(ratio "$pubs" "$tx") driver_cpu=$(peers_field cpu "$res") backend_cpu=$bcpu busy_before=${b}% probe_ns=$p0/$p1"
  # per row, policy and figure: one value per repetition, in repetition order (the pairs)
  echo "$(peers_field TX-pps "$res")" >>"$work/pps-$row-$pub"
  ratio "$kicks" "$tx" >>"$work/kicks_per_buf-$row-$pub"
  ratio "$pubs" "$tx" >>"$work/publications_per_buf-$row-$pub"
}

peers_log "rows [$rows], $reps reps x {eager, lazy, adaptive}, $amount, ${size}-byte frames, back-end CPU $backend_cpu, driver CPU $driver_cpu"
for rep in $(seq 1 "$reps"); do
  if [ $((rep % 2)) = 1 ]; then order="eager lazy adaptive"; else order="adaptive lazy eager"; fi
  for row in $rows; do
    for pub in $order; do run_one "$row" "$pub" "$rep"; done
  done
done

# the statistics are `virtio4j paired`'s (bench --compare's), not a second copy here
joined() { paste -sd, "$1"; }
for row in $rows; do
  for pub in lazy adaptive; do
    for fig in pps kicks_per_buf publications_per_buf; do
      claim=()
      # the claims judged, as experiments' lazy-avail-publish rows judge them: with the back-end busy-polling, 3.79 ->
      # 6.33 Mpps; with a back-end that sleeps on kicks, the reviewer's concern: more kicks per frame
      case $row/$fig in
        dpdk/pps | serve-poll/pps) claim=(--expects increase --claimed 1.67) ;;
        serve-notify/kicks_per_buf) claim=(--expects increase) ;;
      esac
      line=$($v4j paired --figure "$fig" --a "$(joined "$work/$fig-$row-eager")" --b "$(joined "$work/$fig-$row-$pub")" \
        "${claim[@]}") ||
        peers_die "virtio4j paired failed on $row $pub $fig"
      emit "${line/SUMMARY /SUMMARY lesson=lazy-avail-publish row=$row b=$pub }"
    done
  done
done
[ "$inexact" = 0 ] || peers_die "$inexact run(s) with inexact counters"
