#!/usr/bin/env bash
# Usage: peers/drive-net-check.sh --driver-cmd CMD --backend-cmd TEMPLATE [--backend-cpu N]
#
# A vhost-user net FRONT-END under test (a driver command, e.g. ours: "virtio4j drive net --socket {sock}
# --mode echo --packets N ...") against a backend (e.g. DPDK's own: 'peers/testpmd-vhost.sh --socket {sock}
# --mode macswap --lcores 0@{cpu},1@{cpu}'). Starts the backend, runs the driver to completion, stops the
# backend (SIGTERM) and prints
#   DRIVER RESULT ...   the driver's RESULT line (TX-packets, RX-packets, RX-corrupt, RX-duplicate, features)
#   BACKEND RESULT ...  the backend's RESULT line (RX-packets, TX-packets)
#   CHECK ok|FAIL driver_tx=N backend_rx=N backend_tx=N driver_rx=N
# ok when the driver exited 0, driver TX == backend RX, backend TX == driver RX, and no frame came back
# corrupt or twice. {sock} is replaced in both commands by a temporary socket path, {cpu} in the backend's.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

driver_cmd='' backend_cmd='' backend_cpu=0
while [ $# -gt 0 ]; do
  case $1 in
    --driver-cmd) driver_cmd=$2; shift 2 ;;
    --backend-cmd) backend_cmd=$2; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$driver_cmd" ] && [ -n "$backend_cmd" ] || usage

work=$(mktemp -d /tmp/v4j-drive.XXXXXX)
peers_on_exit_rm "$work"
sock=$work/vhost.sock
peers_backend_start "$backend_cmd" "$sock" "$backend_cpu" "$work/backend"
rc=0
dres=$(bash -c "exec ${driver_cmd//\{sock\}/$sock}" </dev/null 2>"$work/driver.err" | grep -E '^RESULT ' | tail -n 1) || rc=$?
[ "$rc" = 0 ] || tail -n 20 "$work/driver.err" >&2
bres=$(peers_backend_stop)
echo "DRIVER $dres"
echo "BACKEND $bres"
dtx=$(peers_field TX-packets "$dres") drx=$(peers_field RX-packets "$dres")
brx=$(peers_field RX-packets "$bres") btx=$(peers_field TX-packets "$bres")
verdict=ok
[ "$rc" = 0 ] && [ -n "$dtx" ] && [ -n "$brx" ] || verdict=FAIL
[ "$dtx" = "$brx" ] && [ "$btx" = "$drx" ] || verdict=FAIL
[ "$(peers_field RX-corrupt "$dres")" = 0 ] && [ "$(peers_field RX-duplicate "$dres")" = 0 ] || verdict=FAIL
echo "CHECK $verdict driver_tx=$dtx backend_rx=$brx backend_tx=$btx driver_rx=$drx driver_exit=$rc features=$(peers_field features "$dres")"
[ "$verdict" = ok ]
