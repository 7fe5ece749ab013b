#!/usr/bin/env bash
# Usage: peers/selftest.sh [--backend TEMPLATE] [--driver TEMPLATE] [--quick] [--no-guest]
#
# Exact-counter checks of a vhost-user net backend against real peers, ending with the line
# "N passed, M failed" (exit 1 if any failed). TEMPLATE is a backend command line with {sock}, {cpu}
# and {mode} (rxonly|macswap|loopback) replaced; the default is DPDK's own backend, which validates the
# harness itself:
#   'peers/testpmd-vhost.sh --socket {sock} --mode {mode} --lcores 0@{cpu},1@{cpu}'  (loopback -> io)
# Ours, once it exists:
#   peers/selftest.sh --backend './virtio4j serve net --socket {sock} --mode {mode}'
# The backend must print "RESULT ... RX-packets=N TX-packets=N" when it exits on SIGTERM.
#
# Checks (each a fresh backend):
#   1. virtio-user txonly 64 B for 3 s -> backend rxonly: driver TX-packets == backend RX-packets
#   2. virtio-user sends exactly 10007 frames -> backend macswap -> virtio-user: both directions exact
#   2a. virtio-user listens (server=1) and the backend connects to it as a client (ours: --connect PATH)
#   2b. the same as 2 over 2 queue pairs (10008 frames; both sides started with 2 queues)
#   2c. packed ring: 1 with packed_vq=1; 2 with packed_vq=1,in_order=1; 2 with in_order=1 on a split ring
#       (ours must report the features negotiated: RING_PACKED, IN_ORDER)
#   3. the same with backend loopback, 1500 B frames, packed ring
#   4. Linux guest (QEMU TCG): 10 pings + 20000 pktgen frames -> backend rxonly: guest tx == backend RX
#   5. Linux guest: 10 pings + 5000 pktgen frames -> backend macswap: both directions exact
#   6. the same as 5 on a packed ring (virtio-net-pci packed=on; the guest must have negotiated it)
# With --driver TEMPLATE (a front-end's command line with {sock}, e.g. ours:
#   './virtio4j drive net --socket {sock}') the front-end is checked against DPDK's own backend too:
#   7. our front-end sends 10007 frames -> DPDK net_vhost macswap -> back: split, then packed with IN_ORDER;
#      both directions exact, every echoed frame intact
# --quick: skips 3, 5 and 6. --no-guest: skips 4, 5 and 6.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tmpl='' driver='' quick=0 guest=1
while [ $# -gt 0 ]; do
  case $1 in
    --backend) tmpl=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-guest) guest=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    *) peers_die "unknown argument: $1" ;;
  esac
done

backend_for() {   # backend_for MODE -> command template
  local mode=$1
  if [ -z "$tmpl" ]; then
    [ "$mode" = loopback ] && mode=io
    echo "$PEERS_DIR/testpmd-vhost.sh --socket {sock} --mode $mode --lcores 0@{cpu},1@{cpu}"
  else
    echo "${tmpl//\{mode\}/$mode}"
  fi
}

work=$(mktemp -d /tmp/v4j-selftest.XXXXXX)
peers_on_exit_rm "$work"
passed=0 failed=0
check() {   # check NAME command...
  local name=$1 t0 out rc=0
  shift
  t0=$(peers_now)
  out=$("$@" 2>"$work/err") || rc=$?
  if [ "$rc" = 0 ] && grep -q '^CHECK ok' <<<"$out"; then
    passed=$((passed + 1))
    echo "PASS $name ($(peers_elapsed "$t0") s): $(grep '^CHECK' <<<"$out")"
  else
    failed=$((failed + 1))
    echo "FAIL $name ($(peers_elapsed "$t0") s, exit $rc)"
    printf '%s\n' "$out" | sed 's/^/    /'
    tail -n 15 "$work/err" | sed 's/^/    /'
  fi
}

vu="$PEERS_DIR/testpmd-virtio-user.sh"
qg="$PEERS_DIR/qemu-guest.sh"
check "virtio-user txonly 64B 3s -> rxonly" \
  "$vu" --backend-cmd "$(backend_for rxonly)" --mode txonly --frame-size 64 --duration 3
check "virtio-user 10007 frames -> macswap -> virtio-user" \
  "$vu" --backend-cmd "$(backend_for macswap)" --packets 10007 --round-frames 512
client_backend() {   # the rxonly backend, connecting out to a front-end that listens
  local t
  t=$(backend_for rxonly)
  if [ -z "$tmpl" ]; then echo "$t --client"; else echo "${t/--socket /--connect }"; fi
}
check "virtio-user listens (server=1), backend connects as client -> rxonly" \
  "$vu" --server --backend-cmd "$(client_backend)" --mode txonly --frame-size 64 --duration 2
check "virtio-user 2 queue pairs, 10008 frames -> macswap -> virtio-user" \
  "$vu" --backend-cmd "$(backend_for macswap) --queues 2" --packets 10008 --round-frames 512 --queues 2
# Ours prints the negotiated features in its RESULT line: the packed and in-order checks make sure the ring
# really was packed (in order), not a split one the two sides fell back to. DPDK's backend prints none.
expect() { [ -n "$tmpl" ] && echo "--expect-features $1" || true; }
# shellcheck disable=SC2046
check "virtio-user txonly 64B packed 3s -> rxonly" \
  "$vu" --backend-cmd "$(backend_for rxonly)" --mode txonly --frame-size 64 --duration 3 --vdev-args packed_vq=1 $(expect 34)
# shellcheck disable=SC2046
check "virtio-user 10007 frames packed+in_order -> macswap -> virtio-user" \
  "$vu" --backend-cmd "$(backend_for macswap)" --packets 10007 --round-frames 512 --vdev-args packed_vq=1,in_order=1 $(expect 34,35)
# shellcheck disable=SC2046
check "virtio-user 10007 frames split in_order -> macswap -> virtio-user" \
  "$vu" --backend-cmd "$(backend_for macswap)" --packets 10007 --round-frames 512 --vdev-args in_order=1 $(expect 35)
if [ "$quick" = 0 ]; then
  # shellcheck disable=SC2046
  check "virtio-user 10007 x 1500B packed -> loopback -> virtio-user" \
    "$vu" --backend-cmd "$(backend_for loopback)" --packets 10007 --round-frames 512 --frame-size 1500 --vdev-args packed_vq=1 $(expect 34)
fi
if [ -n "$driver" ]; then
  dpdk_macswap="$PEERS_DIR/testpmd-vhost.sh --socket {sock} --mode macswap --lcores 0@{cpu},1@{cpu}"
  check "our front-end split 10007 frames -> DPDK net_vhost macswap -> back" \
    "$PEERS_DIR/drive-net-check.sh" --backend-cmd "$dpdk_macswap" \
    --driver-cmd "$driver --mode echo --packets 10007 --ring split"
  check "our front-end packed+in_order 10007 frames -> DPDK net_vhost macswap -> back" \
    "$PEERS_DIR/drive-net-check.sh" --backend-cmd "$dpdk_macswap" \
    --driver-cmd "$driver --mode echo --packets 10007 --ring packed --in-order on --queue-size 1000"
fi
if [ "$guest" = 1 ]; then
  check "guest ping 10 + pktgen 20000 -> rxonly" \
    "$qg" --backend-cmd "$(backend_for rxonly)" --socket "$work/g1.sock" --ping 10 --pktgen 20000 --check
  if [ "$quick" = 0 ]; then
    check "guest ping 10 + pktgen 5000 -> macswap -> guest" \
      "$qg" --backend-cmd "$(backend_for macswap)" --socket "$work/g2.sock" --ping 10 --pktgen 5000 --check
    check "guest packed ring: ping 10 + pktgen 5000 -> macswap -> guest" \
      "$qg" --backend-cmd "$(backend_for macswap)" --socket "$work/g3.sock" --ping 10 --pktgen 5000 --packed --check
  fi
fi
echo "selftest: $passed passed, $failed failed"
[ "$failed" = 0 ]
