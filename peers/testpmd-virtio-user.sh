#!/usr/bin/env bash
# Usage: peers/testpmd-virtio-user.sh (--socket PATH | --backend-cmd TEMPLATE) [options]
#
# Runs DPDK testpmd as a virtio-user DRIVER (net_virtio_user0) against a vhost-user backend listening
# on PATH, forwards for a fixed time (or sends an exact number of frames), stops forwarding, lets the
# backend drain, and prints one machine-readable line on stdout:
#
#   RESULT role=virtio-user mode=txonly frame=64 queues=1 window_s=5.00 TX-packets=N RX-packets=N
#          TX-dropped=N RX-dropped=N TX-bytes=N RX-bytes=N TX-pps=N RX-pps=N win-TX-packets=N win-RX-packets=N
#
# TX-packets/RX-packets/-bytes are the port's final counters (exact, read after forwarding stopped and
# the backend had --drain seconds to consume what was left in the ring: they equal what a correct
# backend counted). TX-dropped counts frames txonly could not place in a full ring (not sent, not
# counted in TX-packets). TX-pps/RX-pps are testpmd's own TSC-timed rates over the measurement window
# (between two "show port stats" after --warmup), win-*-packets the packets in that window, and cpu the
# CPUs' worth of time testpmd got in it (its forwarding lcore spins: ~1.00 when it had a CPU to itself,
# less when other load on the machine took some).
#
# With --backend-cmd it also starts the backend, stops it (SIGTERM) after the run and, when the backend
# prints its own "RESULT ... RX-packets=N TX-packets=N" line, prints it as "BACKEND RESULT ..." and
#   CHECK ok|FAIL driver_tx=N backend_rx=N backend_tx=N driver_rx=N
# ok when driver TX == backend RX and (see --check) backend TX == driver RX, and with --packets N driver
# TX == N; exit 1 on FAIL. A direction is exact only when its sender stops first and its receiver keeps
# polling meanwhile. Driver -> backend: the driver stops, the backend drains, then it is stopped. The
# other way that holds only with --packets (the driver receives for --drain s after the last frame it
# sent): in --duration mode a txonly driver never reads its RX ring, and frames that a backend which
# generates by itself (testpmd txonly) puts in the ring after the driver stopped are counted as sent
# and never as received. A backend that never reads (txonly) needs --check none.
#
# Options:
#   --socket PATH         vhost-user socket (required unless --backend-cmd: then a temporary path).
#                         Client mode: the backend must listen there first; this script waits up to
#                         --connect-timeout for it to appear.
#   --backend-cmd CMD     start this backend first ({sock} and {cpu} are replaced; see lib.sh for the
#                         contract), e.g. 'peers/testpmd-vhost.sh --socket {sock} --lcores 0@{cpu},1@{cpu}'
#   --backend-cpu N       CPU for the backend (default 0; taskset)
#   --check auto|tx|both|none   directions the CHECK compares (default auto: both with --packets, else
#                         tx, i.e. driver TX == backend RX only)
#   --server              virtio-user listens on PATH (devarg server=1) and the backend connects to it;
#                         the script waits for the link to come up before forwarding.
#   --mode M              txonly|rxonly|macswap|io (default txonly)
#   --frame-size B        frame length for generated frames, without CRC (default 64)
#   --queues N            queue pairs (default 1); one forwarding lcore per queue pair is NOT implied:
#                         see --nb-cores
#   --nb-cores N          forwarding lcores (default 1; --lcores must map 1+N lcores)
#   --duration S          measure S seconds (default 5). SIGUSR1 ends the window early (the stats are taken,
#                         forwarding stops, the drain and the RESULT follow as usual): a caller that decides
#                         when to stop (bench-dpdk-vhost.sh --windows) gives a --duration it will not reach
#   --packets N           send exactly N frames instead of running for --duration: "start tx_first K"
#                         (K = N / --burst full bursts, then one burst of the remainder); txonly drops
#                         the frames of a burst that finds the ring full (TX-dropped), so it tops up in
#                         further rounds, of at most a ring's worth after a round that lost frames,
#                         until the port's TX-packets is N. Then it receives (rxonly)
#                         for --drain s to take back echoes, stops, and reads the counters after another
#                         --drain s. --mode must be txonly or rxonly. Adds queue_size=1024 to devargs.
#                         With --queues Q every burst goes out on each queue: N must be a multiple of Q.
#   --round-frames R      with --packets: at most R frames per tx_first round (default 0: no limit).
#                         Frames sent back are only read between rounds (tx_first sends its bursts
#                         before forwarding starts), so with an echoing backend a limit below the RX
#                         ring size (e.g. 512) gets nearly every echo back instead of a ring's worth
#                         (each round costs ~0.2 s)
#   --warmup S            seconds between start and the first stats snapshot (default 1)
#   --drain S             seconds between stopping forwarding and the final counters (default 1)
#   --lcores MAP          EAL --lcores (default 0@1,1@1: main lcore and one forwarding lcore on CPU 1;
#                         the main lcore sleeps in the command line, only the forwarding lcore spins;
#                         with --packets the default is 0@0,1@1: tx_first makes the main lcore spin)
#   --file-prefix NAME    EAL --file-prefix (default v4j-vu-PID)
#   --vdev-args ARGS      extra virtio-user devargs, e.g. packed_vq=1,in_order=1,mrg_rxbuf=0,queue_size=1024
#   --expect-features L   comma-separated virtio feature bit numbers (e.g. 34,35 for RING_PACKED,IN_ORDER) that
#                         the backend's RESULT line must show negotiated in its features=0x... field: a
#                         check of a packed or in-order ring means nothing if the peers fell back without it.
#                         CHECK is FAIL when a bit is missing or the backend printed no features field
#   --burst N             burst size (default 32)
#   --mem MB              EAL memory (default 256)
#   --connect-timeout S   (default 30)
#   --log FILE            keep testpmd's full log in FILE (default: a temporary file, deleted)
#   --ready-file FILE     touch FILE once forwarding has started (for orchestration)
# Environment: PEERS_NO_HUGE=1 to run without hugepages, 0 to insist on them (default: hugepages when
# enough are free, else --no-huge with a warning; see lib.sh).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

sock='' backend_cmd='' backend_cpu=0 check=auto server=0 mode=txonly frame=64 queues=1 nbcores=1 duration=5 packets='' round_frames=0 warmup=1 drain=1
expect_features='' lcores=0@1,1@1 lcores_set=0 prefix="v4j-vu-$$" vdevargs='' burst=32 mem=256 ctimeout=30 keeplog='' readyfile=''
while [ $# -gt 0 ]; do
  case $1 in
    --socket) sock=$2; shift 2 ;;
    --server) server=1; shift ;;
    --backend-cmd) backend_cmd=$2; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --check) check=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --frame-size) frame=$2; shift 2 ;;
    --queues) queues=$2; shift 2 ;;
    --nb-cores) nbcores=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --packets) packets=$2; shift 2 ;;
    --round-frames) round_frames=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --drain) drain=$2; shift 2 ;;
    --lcores) lcores=$2; lcores_set=1; shift 2 ;;
    --file-prefix) prefix=$2; shift 2 ;;
    --vdev-args) vdevargs=$2; shift 2 ;;
    --expect-features) expect_features=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --connect-timeout) ctimeout=$2; shift 2 ;;
    --log) keeplog=$2; shift 2 ;;
    --ready-file) readyfile=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
case $mode in txonly | rxonly | macswap | io) ;; *) peers_die "bad --mode $mode" ;; esac
command -v dpdk-testpmd >/dev/null || peers_die "dpdk-testpmd not found: run peers/install.sh"

work=$(mktemp -d /tmp/v4j-vu.XXXXXX)
peers_on_exit_rm "$work" "/var/run/dpdk/$prefix"
if [ -z "$sock" ]; then
  [ -n "$backend_cmd" ] || usage
  sock=$work/vhost.sock
fi
log=${keeplog:-$work/testpmd.log}

fwd_mode=$mode
if [ -n "$packets" ]; then
  [ "$packets" -gt 0 ] || peers_die "--packets must be > 0"
  # the driver must not forward what comes back (io/macswap would send echoes again): receive only
  case $mode in txonly | rxonly) fwd_mode=rxonly ;; *) peers_die "--packets takes --mode txonly or rxonly" ;; esac
  [ $((packets % queues)) = 0 ] || peers_die "--packets must be a multiple of --queues (one burst per queue)"
  [ "$lcores_set" = 1 ] || lcores=0@0,1@1
  # more ring slack: txonly does not retry, a burst that finds the ring full is dropped (and counted)
  case ",$vdevargs," in *,queue_size=*) ;; *) vdevargs="${vdevargs:+$vdevargs,}queue_size=1024" ;; esac
fi

# client mode (default): the backend listens first, testpmd connects. --server: testpmd listens, then
# the backend is started and connects.
if [ "$server" = 1 ] || [ -n "$backend_cmd" ]; then
  rm -f "$sock"
  peers_on_exit_rm "$sock"
fi
if [ "$server" = 0 ] && [ -n "$backend_cmd" ]; then
  peers_backend_start "$backend_cmd" "$sock" "$backend_cpu" "$work/backend"
elif [ "$server" = 0 ]; then
  rc=0
  peers_wait_socket "$sock" "$ctimeout" || rc=$?
  [ "$rc" = 0 ] || peers_die "no vhost-user socket at $sock after ${ctimeout}s (start the backend first)"
fi

devargs="path=$sock,queues=$queues"
[ "$server" = 1 ] && devargs+=",server=1"
[ -n "$vdevargs" ] && devargs+=",$vdevargs"
nmbufs=$((8192 * queues))
[ "$nmbufs" -lt 8192 ] && nmbufs=8192

memargs=$(peers_eal_mem_args "$mem") || exit 1
# shellcheck disable=SC2086 # word splitting of the EAL memory flags is intended
tp_open "$work" "$log" -- --lcores "$lcores" --file-prefix "$prefix" $memargs --no-pci \
  --vdev "net_virtio_user0,$devargs" -- -i --forward-mode="$fwd_mode" --txpkts="$frame" --burst="$burst" \
  --nb-cores="$nbcores" --rxq="$queues" --txq="$queues" --total-num-mbufs="$nmbufs"
if [ "$server" = 1 ] && [ -n "$backend_cmd" ]; then
  rc=0
  peers_wait_socket "$sock" 90 "$TP_PID" || rc=$?
  [ "$rc" = 0 ] || { tail -n 20 "$log" >&2; peers_die "testpmd did not create $sock"; }
  peers_backend_start "$backend_cmd" "$sock" "$backend_cpu" "$work/backend"
fi
tp_wait_ready 90

if [ "$server" = 1 ]; then
  rc=0
  tp_wait_link_up "$ctimeout" || rc=$?
  [ "$rc" = 0 ] || peers_die "link not up within ${ctimeout}s: no backend connected to $sock"
fi

# SIGUSR1: end the --duration window now (see --duration); a flag, so that one that comes before the window
# (during start-up or --warmup) ends it as soon as it begins instead of killing the script (its default action).
usr1=0
trap 'usr1=1' USR1

rounds=0 cpu=na
if [ -n "$packets" ]; then
  # tx_first runs one txonly burst per launch of the forwarding lcore and waits for it on the main
  # lcore, which spins: the two must be on different CPUs (see --lcores default for --packets).
  # txonly does not retry: frames of a burst that finds the ring full are dropped (counted in the
  # forward statistics, not in the port's TX-packets). Top up until the port has sent exactly N.
  t0=$(peers_now)
  sent=0 stuck=0 cap=$round_frames
  qsize=$(sed -n 's/.*queue_size=\([0-9]*\).*/\1/p' <<<",$vdevargs,")
  while [ "$sent" -lt "$packets" ]; do
    rounds=$((rounds + 1))
    d=$((packets - sent))
    [ "$cap" -gt 0 ] && [ "$d" -gt "$cap" ] && d=$cap
    want=$d
    # tx_first sends each burst on every stream (one per queue): d / queues frames per stream
    d=$((d / queues))
    [ "$d" -gt 0 ] || peers_die "cannot send the last $((packets - sent)) frames over $queues queues"
    b=$burst
    [ "$d" -lt "$b" ] && b=$d   # the bulk in full bursts, the remainder in one burst of its size
    tp_cmd "set burst $b" || peers_die "testpmd died"
    tp_cmd "start tx_first $((d / b))" || peers_die "testpmd died"
    tp_sync 600 || peers_die "start tx_first did not complete (log: $log)"
    tp_stop_fwd 30 || peers_die "stop did not complete"
    s=$(tp_show_stats 10) || peers_die "testpmd died"
    prev=$sent
    sent=$(peers_field TX-packets "$(tp_parse_block "$s" "$log")")
    if [ "$sent" -eq "$prev" ]; then
      stuck=$((stuck + 1))
      [ "$stuck" -lt 5 ] || peers_die "the backend took nothing in 5 rounds (sent $sent of $packets)"
    else
      stuck=0
    fi
    # a round that lost frames to a full ring: from now on send at most a ring's worth per round
    if [ $((sent - prev)) -lt $((want / queues * queues)) ]; then
      [ "$cap" -eq 0 ] || [ "$cap" -gt $((qsize * queues)) ] && cap=$((qsize * queues))
    fi
  done
  [ "$sent" -eq "$packets" ] || peers_die "sent $sent frames, more than $packets"
  # now receive what the backend sends back (macswap/io) for --drain seconds
  tp_cmd "set burst $burst" || true
  tp_cmd start || peers_die "testpmd died"
  [ -n "$readyfile" ] && touch "$readyfile"
  a=$(tp_show_stats 10) || peers_die "testpmd died"
  sleep "$drain"
  b=$(tp_show_stats 10) || peers_die "testpmd died"
  window=$(peers_elapsed "$t0")
else
  tp_cmd start || peers_die "testpmd died"
  tp_wait_count 'packet forwarding packets/burst=|Packet forwarding already started' 1 30 ||
    peers_die "forwarding did not start (log: $log)"
  [ -n "$readyfile" ] && touch "$readyfile"
  sleep "$warmup"
  a=$(tp_show_stats 10) || peers_die "testpmd died"
  t0=$(peers_now)
  c0=$(peers_cputicks "$TP_PID")
  # in the background: bash runs a trap only once the foreground command ended, and wait returns on a signal; in a
  # group of its own registered for cleanup, so that a SIGTERM meanwhile (exit 143) leaves no sleep behind
  if [ "$usr1" = 0 ]; then
    peers_spawn sleep "$duration"
    wait "$PEERS_LAST_PID" || true
    kill "$PEERS_LAST_PID" 2>/dev/null || true
  fi
  b=$(tp_show_stats 10) || peers_die "testpmd died"
  c1=$(peers_cputicks "$TP_PID")
  window=$(peers_elapsed "$t0")
  cpu=$(awk -v c="$((c1 - c0))" -v hz="$(peers_clk_tck)" -v w="$window" 'BEGIN { printf "%.2f", (w > 0 ? c / hz / w : 0) }')
fi

tp_stop_fwd 30 || peers_die "stop did not complete"
sleep "$drain"
final=$(tp_show_stats 10) || peers_die "testpmd died"
tp_quit 30

A=$(tp_parse_block "$a" "$log")
B=$(tp_parse_block "$b" "$log")
F=$(tp_parse_block "$final" "$log")
W=$(tp_parse_fwd_sum "$log")
wtx=$(($(peers_field TX-packets "$B") - $(peers_field TX-packets "$A")))
wrx=$(($(peers_field RX-packets "$B") - $(peers_field RX-packets "$A")))
printf 'RESULT role=virtio-user mode=%s frame=%s queues=%s rounds=%s window_s=%s TX-packets=%s RX-packets=%s TX-dropped=%s RX-dropped=%s TX-bytes=%s RX-bytes=%s TX-pps=%s RX-pps=%s win-TX-packets=%s win-RX-packets=%s RX-missed=%s RX-nombuf=%s cpu=%s\n' \
  "$mode" "$frame" "$queues" "$rounds" "$window" \
  "$(peers_field TX-packets "$F")" "$(peers_field RX-packets "$F")" \
  "$(peers_field FWD-TX-dropped "$W")" "$(peers_field FWD-RX-dropped "$W")" \
  "$(peers_field TX-bytes "$F")" "$(peers_field RX-bytes "$F")" \
  "$(peers_field Tx-pps "$B")" "$(peers_field Rx-pps "$B")" "$wtx" "$wrx" \
  "$(peers_field RX-missed "$F")" "$(peers_field RX-nombuf "$F")" "$cpu"

if [ -n "$backend_cmd" ]; then
  bres=$(peers_backend_stop)
  if [ -z "$bres" ]; then
    echo "CHECK n/a the backend printed no RESULT line"
    exit 0
  fi
  echo "BACKEND $bres"
  dtx=$(peers_field TX-packets "$F") drx=$(peers_field RX-packets "$F")
  brx=$(peers_field RX-packets "$bres") btx=$(peers_field TX-packets "$bres")
  # the backend -> driver direction is closed (exact) only with --packets: see the header
  if [ "$check" = auto ]; then
    if [ -n "$packets" ]; then check=both; else check=tx; fi
  fi
  verdict=ok
  case $check in
    none) verdict=skipped ;;
    tx) [ "$dtx" = "$brx" ] || verdict=FAIL ;;
    both) { [ "$dtx" = "$brx" ] && [ "$drx" = "$btx" ]; } || verdict=FAIL ;;
    *) peers_die "bad --check $check" ;;
  esac
  [ -z "$packets" ] || [ "$dtx" = "$packets" ] || verdict=FAIL
  bfeat=$(peers_field features "$bres")
  for f in ${expect_features//,/ }; do
    if [ -z "$bfeat" ] || [ $(((bfeat >> f) & 1)) != 1 ]; then
      verdict=FAIL
      echo "# feature bit $f was not negotiated (backend features=${bfeat:-none})" >&2
    fi
  done
  echo "CHECK $verdict ($check) driver_tx=$dtx backend_rx=$brx backend_tx=$btx driver_rx=$drx${expect_features:+ features=$bfeat}"
  [ "$verdict" != FAIL ] || exit 1
fi
