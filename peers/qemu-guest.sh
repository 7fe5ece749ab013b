#!/usr/bin/env bash
# Usage: peers/qemu-guest.sh --socket PATH [options]
#
# Boots a real Linux guest (Debian cloud kernel + busybox initramfs, QEMU TCG) whose virtio-net-pci
# device is backed by the vhost-user backend on PATH. The guest's generated /init loads the virtio
# modules, brings eth0 up with a static IP and a static ARP entry (IPv6 is disabled on the kernel
# command line, so the guest sends nothing by itself), sends exactly the frames asked for (ping, pktgen,
# or a custom script), prints its eth0 counters, and powers off. Prints on stdout:
#
#   GUEST tx_packets=N rx_packets=N tx_bytes=N rx_bytes=N tx_dropped=N rx_dropped=N pre_tx=N pre_rx=N
#         ping_sent=N pktgen_sent=N expected_tx=N boot_s=S qemu_s=S total_s=S txqs=N packed=0|1
#         event_idx=0|1 mrg_rxbuf=0|1 features=<the device's negotiated feature bits, bit 0 first>
#   BACKEND RESULT ...      (with --backend-cmd, the backend's own RESULT line if it printed one)
#   CHECK ok|FAIL ...       (with --backend-cmd and a RESULT line: guest tx == backend RX, backend TX ==
#                           guest rx, guest tx == expected_tx, and with --packed the ring negotiated packed)
# Exit status: 0 when the guest powered off cleanly and, if there is a CHECK line, it is ok (--check:
# a CHECK line is required).
#
# Options:
#   --socket PATH        vhost-user socket (required). QEMU connects to it as a client (backend listens)
#   --server             QEMU listens on PATH (server=on,wait=on: the guest starts once the backend has
#                        connected); a --backend-cmd is then started after QEMU and must connect as client
#   --backend-cmd CMD    start this backend first ({sock} and {cpu} are replaced), stop it with SIGTERM
#                        after the guest is off, print its RESULT line. E.g.
#                        'peers/testpmd-vhost.sh --socket {sock} --mode rxonly --lcores 0@{cpu},1@{cpu}'
#   --backend-cpu N      CPU for the backend (default 0)
#   --check              exit 1 unless CHECK is ok (needs --backend-cmd whose backend prints RESULT)
#   --ping N             ICMP echo requests to the peer (default 10; 0: none)
#   --ping-interval S    (default 0.02)
#   --pktgen N           frames to send with the kernel's pktgen (default 0)
#   --pkt-size B         pktgen frame size, without FCS (default 60)
#   --script FILE        busybox sh snippet run in the guest after the network is up (after ping and
#                        pktgen); it can use $GUEST_IP $PEER_IP $PEER_MAC and the function say
#   --queues N           queue pairs (netdev queues=N, device mq=on; guest gets N vCPUs, at most 2)
#   --packed             ask for a packed ring (device packed=on)
#   --guest-ip / --peer-ip / --guest-mac / --peer-mac   (defaults 192.0.2.2 / 192.0.2.1 /
#                        52:54:00:12:34:56 / 02:00:00:00:00:01; a documentation range, the frames never
#                        leave the vhost-user socket)
#   --cpu N              CPU for QEMU (default 1)
#   --accel A            tcg (default) or kvm (/dev/kvm exists on this kind of machine, but a KVM guest
#                        with this kernel hangs without a line of output: nested PVM)
#   --mem MB             guest RAM, a shared memfd (default 256)
#   --timeout S          kill the guest after S seconds (default 100)
#   --console FILE       keep the serial console log there (default: temporary)
#   --verbose            kernel messages on the console (default: quiet)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

sock='' server=0 backend_cmd='' backend_cpu=0 check=0 ping=10 ping_interval=0.02 pktgen=0 pkt_size=60
script='' queues=1 packed=0 guest_ip=192.0.2.2 peer_ip=192.0.2.1 guest_mac=52:54:00:12:34:56
peer_mac=02:00:00:00:00:01 cpu=1 accel=tcg mem=256 timeout=100 console='' verbose=0
while [ $# -gt 0 ]; do
  case $1 in
    --socket) sock=$2; shift 2 ;;
    --server) server=1; shift ;;
    --backend-cmd) backend_cmd=$2; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --check) check=1; shift ;;
    --ping) ping=$2; shift 2 ;;
    --ping-interval) ping_interval=$2; shift 2 ;;
    --pktgen) pktgen=$2; shift 2 ;;
    --pkt-size) pkt_size=$2; shift 2 ;;
    --script) script=$2; shift 2 ;;
    --queues) queues=$2; shift 2 ;;
    --packed) packed=1; shift ;;
    --guest-ip) guest_ip=$2; shift 2 ;;
    --peer-ip) peer_ip=$2; shift 2 ;;
    --guest-mac) guest_mac=$2; shift 2 ;;
    --peer-mac) peer_mac=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --accel) accel=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --console) console=$2; shift 2 ;;
    --verbose) verbose=1; shift ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$sock" ] || usage
[ -z "$script" ] || [ -f "$script" ] || peers_die "no such script: $script"
peers_need_guest

t_start=$(peers_now)
work=$(mktemp -d /tmp/v4j-guest.XXXXXX)
peers_on_exit_rm "$work"
console=${console:-$work/console.log}
: >"$console"

# ------------------------------------------------------------------------------- the guest's /init
smp=1
[ "$queues" -gt 1 ] && smp=$((queues < 2 ? queues : 2))
{
  peers_guest_init_head qemu-guest.sh
  peers_guest_net_up "$guest_ip" "$peer_ip" "$peer_mac"
  printf 'PING=%s\nPING_INTERVAL=%s\nPKTGEN=%s\nPKT_SIZE=%s\n' "$ping" "$ping_interval" "$pktgen" "$pkt_size"
  cat <<'EOF'
sleep 0.2
counters pre
if [ "$PING" -gt 0 ]; then
  ping -q -c "$PING" -i "$PING_INTERVAL" -W 1 "$PEER_IP" | sed 's/^/V4J-PING: /'
fi
echo "V4J-PING-SENT $PING"
if [ "$PKTGEN" -gt 0 ]; then
  insmod /lib/modules/pktgen.ko 2>/dev/null
  echo "add_device eth0" >/proc/net/pktgen/kpktgend_0
  pg=/proc/net/pktgen/eth0
  for c in "count $PKTGEN" "pkt_size $PKT_SIZE" "delay 0" "clone_skb 0" "burst 1" \
      "dst $PEER_IP" "dst_mac $PEER_MAC" "src_min $GUEST_IP" "src_max $GUEST_IP"; do
    echo "$c" >$pg || die "pktgen: $c"
  done
  t0=$(cut -d' ' -f1 /proc/uptime)
  echo start >/proc/net/pktgen/pgctrl
  t1=$(cut -d' ' -f1 /proc/uptime)
  sent=$(sed -n 's/.*pkts-sofar: \([0-9]*\).*/\1/p' $pg)
  errors=$(sed -n 's/.*pkts-sofar: [0-9]*  *errors: \([0-9]*\).*/\1/p' $pg)
  grep -E 'Result|pkts-sofar' $pg | sed 's/^/V4J-PKTGEN: /'
  echo "V4J-PKTGEN-SENT ${sent:-0} errors=${errors:-0} t0=$t0 t1=$t1"
fi
EOF
  if [ -n "$script" ]; then
    echo "# --- user script"
    cat "$script"
    echo
  fi
  peers_guest_net_end
} >"$work/init"
"$PEERS_DIR/install.sh" initramfs "$work/init" "$work/initramfs.cpio"

# ------------------------------------------------------------------------------------- the backend
# client mode (default): the backend listens first, QEMU connects. --server: QEMU listens (and waits
# for the connection before starting the guest), then the backend is started and connects.
if [ -n "$backend_cmd" ] || [ "$server" = 1 ]; then
  rm -f "$sock"
  peers_on_exit_rm "$sock"
fi
if [ -n "$backend_cmd" ] && [ "$server" = 0 ]; then
  peers_backend_start "$backend_cmd" "$sock" "$backend_cpu" "$work/backend"
elif [ "$server" = 0 ]; then
  rc=0
  peers_wait_socket "$sock" 30 || rc=$?
  [ "$rc" = 0 ] || peers_die "no vhost-user socket at $sock (start the backend first)"
fi

# ----------------------------------------------------------------------------------------- QEMU
kargs=()
[ "$verbose" = 1 ] || kargs=(quiet loglevel=1)
chardev="socket,id=c0,path=$sock"
[ "$server" = 1 ] && chardev+=",server=on,wait=on"
netdev="vhost-user,id=n0,chardev=c0"
device="virtio-net-pci,netdev=n0,vectors=0,mac=$guest_mac"   # vectors=0: QEMU 7.2 TCG + MSI-X segfaults
if [ "$queues" -gt 1 ]; then netdev+=",queues=$queues"; device+=",mq=on"; fi
[ "$packed" = 1 ] && device+=",packed=on"
peers_qemu "$accel" "$smp" "$mem" "$work/initramfs.cpio" "$console" "${kargs[@]}"
qemu=("${PEERS_QEMU[@]}" -chardev "$chardev" -netdev "$netdev" -device "$device")
[ -n "$cpu" ] && qemu=(taskset -c "$cpu" "${qemu[@]}")
PEERS_LOG=$work/qemu.log peers_spawn "${qemu[@]}"
qpid=$PEERS_LAST_PID
peers_log "qemu pid $qpid: ${qemu[*]}"
t_qemu=$(peers_now)
if [ "$server" = 1 ]; then
  rc=0
  peers_wait_socket "$sock" 30 "$qpid" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/qemu.log" >&2; peers_die "QEMU did not create $sock"; }
  [ -z "$backend_cmd" ] || peers_backend_start "$backend_cmd" "$sock" "$backend_cpu" "$work/backend"
fi
peers_guest_finish "$qpid" "$timeout" "$console" "$work/qemu.log" '^V4J-COUNTERS final'
qrc=$PEERS_QEMU_STATUS
qemu_s=$(peers_elapsed "$t_qemu" "$PEERS_QEMU_GONE_AT")
total=$(peers_elapsed "$t_start" "$PEERS_QEMU_GONE_AT")
backend_line=$PEERS_BACKEND_RESULT

# ------------------------------------------------------------------------------------- the result
field() { grep -E "^$1" "$console" | tail -n 1 | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'; }
features=$(sed -n 's/^V4J-DEVICE features=\([01]*\).*/\1/p' "$console")
txqs=$(field V4J-DEVICE txqs)
bit() { [ "${features:$1:1}" = 1 ] && echo 1 || echo 0; }   # sysfs lists feature bit 0 first
boot=$(sed -n 's/^V4J: net up uptime=\([0-9.]*\).*/\1/p' "$console")
ping_sent=$(sed -n 's/^V4J-PING-SENT \([0-9]*\).*/\1/p' "$console")
pktgen_sent=$(sed -n 's/^V4J-PKTGEN-SENT \([0-9]*\).*/\1/p' "$console")
pktgen_sent=${pktgen_sent:-0}
tx=$(field 'V4J-COUNTERS final' tx_packets)
rx=$(field 'V4J-COUNTERS final' rx_packets)
expected=$((ping_sent + pktgen_sent))
printf 'GUEST tx_packets=%s rx_packets=%s tx_bytes=%s rx_bytes=%s tx_dropped=%s rx_dropped=%s pre_tx=%s pre_rx=%s ping_sent=%s pktgen_sent=%s expected_tx=%s boot_s=%s qemu_s=%s total_s=%s txqs=%s packed=%s event_idx=%s mrg_rxbuf=%s features=%s\n' \
  "$tx" "$rx" "$(field 'V4J-COUNTERS final' tx_bytes)" "$(field 'V4J-COUNTERS final' rx_bytes)" \
  "$(field 'V4J-COUNTERS final' tx_dropped)" "$(field 'V4J-COUNTERS final' rx_dropped)" \
  "$(field 'V4J-COUNTERS pre' tx_packets)" "$(field 'V4J-COUNTERS pre' rx_packets)" \
  "$ping_sent" "$pktgen_sent" "$expected" "${boot:-?}" "$qemu_s" "$total" \
  "$txqs" "$(bit 34)" "$(bit 29)" "$(bit 15)" "$features"
grep -E '^V4J-(PING|PKTGEN)' "$console" | sed 's/^/# /' >&2 || true

status=0
if [ -n "$backend_line" ]; then
  echo "BACKEND $backend_line"
  brx=$(peers_field RX-packets "$backend_line")
  btx=$(peers_field TX-packets "$backend_line")
  verdict=ok
  [ "$tx" = "$brx" ] || verdict=FAIL
  [ "$rx" = "$btx" ] || verdict=FAIL
  [ -z "$script" ] && [ "$tx" != "$expected" ] && verdict=FAIL
  # a packed ring was asked for: the check means nothing if the guest fell back to a split one
  [ "$packed" = 1 ] && [ "$(bit 34)" != 1 ] && verdict=FAIL
  echo "CHECK $verdict packed=$(bit 34) guest_tx=$tx backend_rx=$brx backend_tx=$btx guest_rx=$rx expected_tx=$expected"
  [ "$verdict" = ok ] || status=1
elif [ "$check" = 1 ]; then
  echo "CHECK FAIL no backend RESULT line to compare with"
  status=1
fi
[ "$qrc" = 0 ] || status=1
exit "$status"
