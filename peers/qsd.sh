#!/usr/bin/env bash
# Usage: peers/qsd.sh --socket PATH (--image FILE | --size SIZE | --null SIZE) [options]
#
# QEMU's own vhost-user-blk back-end, qemu-storage-daemon (package qemu-system-common), in the peers'
# backend contract: it listens on PATH, serves one front-end after another, and SIGTERM stops it. It runs in
# the foreground (exec), so a harness's SIGTERM reaches the daemon itself.
#
#   --socket PATH     vhost-user socket to listen on (a stale file there is removed first)
#   --image FILE      export FILE (raw; driver=file, discard=unmap so DISCARD and WRITE_ZEROES with the unmap
#                     flag punch holes)
#   --size SIZE       export a fresh sparse raw image of SIZE bytes (truncate -s SIZE: 64M, 1G, ...) in a
#                     temporary directory removed on exit; with --image, the image is created with that size
#                     when it does not exist
#   --null SIZE       export QEMU's null-co block driver of SIZE bytes (reads return zeros, writes are
#                     dropped): the benchmark's "no storage" peer
#   --read-zeroes on|off   null-co: whether reads fill the buffer with zeros (default on); off leaves it as it
#                     was, as `serve blk --null` does (the benchmark's setting)
#   --queues N        num-queues of the export (default 1)
#   --read-only       export read-only (writable=off: the device offers VIRTIO_BLK_F_RO)
#   --block-size B    logical-block-size of the export (default 512)
#   --cpu N           pin the daemon to CPU N (taskset)
#   --iothread        serve the export from an IOThread (--object iothread): QEMU's adaptive polling of the
#                     kick (poll-max-ns, 32 us by default) instead of the main loop's plain wait
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

sock='' image='' size='' null='' zeroes=on queues=1 writable=on bsize=512 cpu='' iothread=0
while [ $# -gt 0 ]; do
  case $1 in
    --socket) sock=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --null) null=$2; shift 2 ;;
    --read-zeroes) zeroes=$2; shift 2 ;;
    --queues) queues=$2; shift 2 ;;
    --read-only) writable=off; shift ;;
    --block-size) bsize=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --iothread) iothread=1; shift ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$sock" ] || usage
command -v qemu-storage-daemon >/dev/null || peers_die "qemu-storage-daemon not found: run peers/install.sh packages"
to_bytes() {   # 64M -> 67108864 (K, M, G, T: powers of 1024)
  numfmt --from=iec "${1^^}" 2>/dev/null || peers_die "not a size: $1"
}

if [ -n "$null" ]; then
  [ -z "$image" ] && [ -z "$size" ] || peers_die "--null excludes --image and --size"
  blockdev="driver=null-co,node-name=b0,size=$(to_bytes "$null"),read-zeroes=$zeroes"
else
  if [ -z "$image" ]; then
    [ -n "$size" ] || peers_die "one of --image, --size, --null is needed"
    work=$(mktemp -d /tmp/v4j-qsd.XXXXXX)
    image=$work/disk.img
  fi
  [ -e "$image" ] || [ -z "$size" ] || truncate -s "$(to_bytes "$size")" "$image"
  [ -f "$image" ] || peers_die "no image file $image"
  blockdev="driver=file,node-name=b0,filename=$image,discard=unmap"
fi
rm -f "$sock"
export_opts="type=vhost-user-blk,id=e0,node-name=b0,addr.type=unix,addr.path=$sock,writable=$writable"
export_opts+=",num-queues=$queues,logical-block-size=$bsize"
cmd=(qemu-storage-daemon --blockdev "$blockdev")
if [ "$iothread" = 1 ]; then
  cmd+=(--object iothread,id=io0)
  export_opts+=",iothread=io0"
fi
cmd+=(--export "$export_opts")
[ -z "$cpu" ] || cmd=(taskset -c "$cpu" "${cmd[@]}")
peers_log "${cmd[*]}"
if [ -z "${work:-}" ]; then
  exec "${cmd[@]}"
fi
# a temporary image: stay around to remove it, and hand SIGTERM on to the daemon
"${cmd[@]}" &
qsd=$!
trap 'kill -TERM "$qsd" 2>/dev/null; wait "$qsd"; rm -rf "$work" "$sock"; exit 0' TERM INT
wait "$qsd" || true
rm -rf "$work"
