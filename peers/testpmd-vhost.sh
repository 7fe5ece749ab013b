#!/usr/bin/env bash
# Usage: peers/testpmd-vhost.sh --socket PATH [options]
#
# Runs DPDK's own vhost-user BACKEND (testpmd with --vdev net_vhost0) on PATH, the reference backend
# for the harness. It forwards in --mode until SIGINT/SIGTERM (or --duration), then stops forwarding,
# reads the final port counters and prints one machine-readable line on stdout:
#
#   RESULT role=vhost mode=rxonly queues=1 RX-packets=N TX-packets=N RX-dropped=N TX-dropped=N
#          RX-bytes=N TX-bytes=N RX-missed=N cpu=C
#
# cpu = CPUs' worth of time testpmd got while forwarding (its forwarding lcore spins: ~1.00 alone on
# its CPU). RX = frames the backend took from the front-end's TX ring(s), TX = frames it put into the front-end's
# RX ring(s); TX-dropped = frames it wanted to send but found no room for (front-end RX ring full).
#
# Options:
#   --socket PATH        socket path (required); listened on (server, default) or connected to (--client)
#   --client             connect to a front-end listening on PATH (devarg client=1)
#   --mode M             rxonly|macswap|io|txonly|icmpecho (default rxonly). icmpecho answers ARP and
#                        ICMP echo requests (a guest's ping gets replies); macswap/io send every frame back
#   --frame-size B       frame length for txonly (default 64)
#   --queues N           queue pairs (default 1)
#   --nb-cores N         forwarding lcores (default 1)
#   --duration S         stop by itself after S seconds (default: run until signalled)
#   --lcores MAP         EAL --lcores (default 0@0,1@0: main and forwarding lcore on CPU 0)
#   --file-prefix NAME   EAL --file-prefix (default v4j-vh-PID)
#   --vdev-args ARGS     extra net_vhost devargs (e.g. linear-buffer=1)
#   --mem MB             EAL memory (default 256)
#   --log FILE           keep testpmd's log in FILE (default: temporary, deleted)
#   --ready-file FILE    touch FILE once the socket exists and forwarding runs
# Environment: PEERS_NO_HUGE=1 to run without hugepages, 0 to insist on them (default: hugepages when
# enough are free, else --no-huge with a warning; see lib.sh).
# Stop it with SIGTERM (or SIGINT) to the script's pid: it then prints the RESULT line and exits 0.
# A shell without job control starts background jobs with SIGINT ignored, and an ignored signal cannot
# be trapped: use SIGTERM from scripts.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

sock='' client=0 mode=rxonly frame=64 queues=1 nbcores=1 duration='' lcores=0@0,1@0 prefix="v4j-vh-$$"
vdevargs='' mem=256 keeplog='' readyfile=''
while [ $# -gt 0 ]; do
  case $1 in
    --socket) sock=$2; shift 2 ;;
    --client) client=1; shift ;;
    --mode) mode=$2; shift 2 ;;
    --frame-size) frame=$2; shift 2 ;;
    --queues) queues=$2; shift 2 ;;
    --nb-cores) nbcores=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --lcores) lcores=$2; shift 2 ;;
    --file-prefix) prefix=$2; shift 2 ;;
    --vdev-args) vdevargs=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --log) keeplog=$2; shift 2 ;;
    --ready-file) readyfile=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$sock" ] || usage
case $mode in txonly | rxonly | macswap | io | mac | icmpecho) ;; *) peers_die "bad --mode $mode" ;; esac
command -v dpdk-testpmd >/dev/null || peers_die "dpdk-testpmd not found: run peers/install.sh"

stop_requested=0
trap 'stop_requested=1' INT TERM

work=$(mktemp -d /tmp/v4j-vh.XXXXXX)
peers_on_exit_rm "$work" "/var/run/dpdk/$prefix"
[ "$client" = 1 ] || { rm -f "$sock"; peers_on_exit_rm "$sock"; }
log=${keeplog:-$work/testpmd.log}

devargs="iface=$sock,queues=$queues"
[ "$client" = 1 ] && devargs+=",client=1"
[ -n "$vdevargs" ] && devargs+=",$vdevargs"
nmbufs=$((8192 * queues))

memargs=$(peers_eal_mem_args "$mem") || exit 1
# shellcheck disable=SC2086 # word splitting of the EAL memory flags is intended
tp_open "$work" "$log" -- --lcores "$lcores" --file-prefix "$prefix" $memargs --no-pci \
  --vdev "net_vhost0,$devargs" -- -i --forward-mode="$mode" --txpkts="$frame" \
  --nb-cores="$nbcores" --rxq="$queues" --txq="$queues" --total-num-mbufs="$nmbufs"
tp_wait_ready 90
tp_cmd start || peers_die "testpmd died"
tp_wait_count 'packet forwarding packets/burst=|Packet forwarding already started' 1 30 ||
  peers_die "forwarding did not start (log: $log)"
if [ "$client" = 0 ]; then
  peers_wait_socket "$sock" 30 "$TP_PID" || peers_die "testpmd did not create $sock"
fi
[ -n "$readyfile" ] && touch "$readyfile"
peers_log "vhost backend ready on $sock (mode $mode)"

t0=$(peers_now)
c0=$(peers_cputicks "$TP_PID")
deadline=''
[ -n "$duration" ] && deadline=$(($(date +%s) + duration))
while [ "$stop_requested" = 0 ]; do
  kill -0 "$TP_PID" 2>/dev/null || { tail -n 20 "$log" >&2; peers_die "testpmd exited unexpectedly"; }
  [ -n "$deadline" ] && [ "$(date +%s)" -ge "$deadline" ] && break
  sleep 0.2
done

c1=$(peers_cputicks "$TP_PID")
cpu=$(awk -v c="$((c1 - c0))" -v hz="$(peers_clk_tck)" -v w="$(peers_elapsed "$t0")" 'BEGIN { printf "%.2f", (w > 0 ? c / hz / w : 0) }')
tp_stop_fwd 30 || peers_die "stop did not complete"
final=$(tp_show_stats 10) || peers_die "testpmd died"
tp_quit 30
F=$(tp_parse_block "$final" "$log")
W=$(tp_parse_fwd "$log")
printf 'RESULT role=vhost mode=%s queues=%s RX-packets=%s TX-packets=%s RX-dropped=%s TX-dropped=%s RX-bytes=%s TX-bytes=%s RX-missed=%s cpu=%s\n' \
  "$mode" "$queues" "$(peers_field RX-packets "$F")" "$(peers_field TX-packets "$F")" \
  "$(peers_field FWD-RX-dropped "$W")" "$(peers_field FWD-TX-dropped "$W")" \
  "$(peers_field RX-bytes "$F")" "$(peers_field TX-bytes "$F")" "$(peers_field RX-missed "$F")" "$cpu"
