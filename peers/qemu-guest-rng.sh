#!/usr/bin/env bash
# Usage: peers/qemu-guest-rng.sh --backend-cmd TEMPLATE [options]
#
# A real Linux guest (the cached Debian cloud kernel + busybox initramfs of peers/install.sh, QEMU TCG) on a
# vhost-user-rng-pci device served by a vhost-user-rng back-end that serves the bytes of a file: the guest's
# virtio_rng driver becomes the current hwrng, the guest reads /dev/hwrng twice (dd, 64-byte reads) and prints the
# bytes; the host finds each 64-byte read in the file.
#
# What the host can expect: the kernel's hwrng core takes bytes of the device itself (32 at registration,
# add_early_randomness; 64 every few seconds, the khwrngd thread, which no 6.1 parameter switches off), so the
# guest's reads are not a prefix of the stream. But every read of 64 bytes from /dev/hwrng is one piece of it
# (hw_random fills its 64-byte buffer with one wait-for-all read of the driver, which takes the stream in order),
# so each must be found in the file, each later than the one before (the device's stream only goes forward), all
# before the offset the back-end reports it reached (its RESULT bytes=).
# Prints on stdout:
#   GUEST reads=N/N current=NAME boot_s=S total_s=S
#   CHECK ok|FAIL found=N/N ordered=yes|no first=OFFSET skipped=BYTES served=BYTES differ=yes|no packed=GOT/ASKED
# (skipped: the bytes between the guest's reads that the kernel took itself; differ: the two reads are not equal)
# Exit status 0 when CHECK is ok.
#
# Options:
#   --backend-cmd T   the back-end ({sock}: socket path, {source}: the file of bytes to serve, {cpu}: its CPU); it
#                     listens on {sock}, stops on SIGTERM and then prints "RESULT ... bytes=N" (bytes served).
#                     E.g. './virtio4j serve rng --socket {sock} --source {source}'
#   --bytes N         bytes of each of the two reads (default 4096; a multiple of 64)
#   --source-bytes N  size of the random file served (default 1048576; larger than what the guest can take)
#   --packed          ask for a packed ring (vhost-user-rng-pci packed=on); CHECK requires it negotiated
#   --backend-cpu N   (default 0)   --cpu N   CPU for QEMU (default 1)
#   --timeout S       kill the guest after S seconds (default 120)
#   --console FILE    keep the serial console log there (default: temporary)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

backend_cmd='' bytes=4096 source_bytes=1048576 packed=0 backend_cpu=0 cpu=1 timeout=120 console=''
while [ $# -gt 0 ]; do
  case $1 in
    --backend-cmd) backend_cmd=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --source-bytes) source_bytes=$2; shift 2 ;;
    --packed) packed=1; shift ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --console) console=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$backend_cmd" ] || usage
[ $((bytes % 64)) = 0 ] && [ "$bytes" -gt 0 ] || peers_die "--bytes must be a positive multiple of 64"
peers_need_guest

t_start=$(peers_now)
work=$(mktemp -d /tmp/v4j-guest-rng.XXXXXX)
peers_on_exit_rm "$work"
console=${console:-$work/console.log}
: >"$console"
sock=$work/rng.sock
source=$work/source
head -c "$source_bytes" /dev/urandom >"$source"

# ------------------------------------------------------------------------------- the guest's /init
{
peers_guest_init_head qemu-guest-rng.sh
cat <<EOF
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_rng; do
  insmod /lib/modules/\$m.ko || die "insmod \$m"
done
i=0
until grep -q '^virtio_rng' /sys/class/misc/hw_random/rng_current 2>/dev/null; do
  i=\$((i + 1)); [ \$i -le 200 ] || die "virtio_rng is not the current hwrng: \$(cat /sys/class/misc/hw_random/rng_current)"; sleep 0.05
done
say "rng up uptime=\$(cut -d' ' -f1 /proc/uptime)"
echo "V4J-RNG current=\$(cat /sys/class/misc/hw_random/rng_current) features=\$(cat /sys/bus/virtio/devices/*/features)"
for r in 1 2; do
  # 64-byte reads: each is one fill of hw_random's buffer from the device (see the head of peers/qemu-guest-rng.sh)
  dd if=/dev/hwrng bs=64 count=$((bytes / 64)) 2>/dev/null >/tmp/read.\$r || die "dd read \$r"
  [ "\$(wc -c </tmp/read.\$r)" = $bytes ] || die "read \$r: \$(wc -c </tmp/read.\$r) bytes"
  hexdump -v -e '64/1 "%02x" "\n"' /tmp/read.\$r | sed "s/^/V4J-READ\$r /"
done
say "done uptime=\$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
EOF
} >"$work/init"
"$PEERS_DIR/install.sh" initramfs "$work/init" "$work/initramfs.cpio"
[ -e "$PEERS_KDIR/base/lib/modules/virtio_rng.ko" ] || peers_die "no virtio_rng module cached: run peers/install.sh kernel"

# ------------------------------------------------------------------------------------- the backend
template=${backend_cmd//\{source\}/$source}
peers_backend_start "$template" "$sock" "$backend_cpu" "$work/backend"

# ----------------------------------------------------------------------------------------- QEMU
device="vhost-user-rng-pci,chardev=c1"
[ "$packed" = 1 ] && device+=",packed=on"
peers_qemu tcg 1 256 "$work/initramfs.cpio" "$console" quiet loglevel=1
qemu=("${PEERS_QEMU[@]}" -chardev "socket,id=c1,path=$sock" -device "$device")
[ -n "$cpu" ] && qemu=(taskset -c "$cpu" "${qemu[@]}")
PEERS_LOG=$work/qemu.log peers_spawn "${qemu[@]}"
qpid=$PEERS_LAST_PID
peers_log "qemu pid $qpid: ${qemu[*]}"
peers_guest_finish "$qpid" "$timeout" "$console" "$work/qemu.log" '^V4J: done'
qrc=$PEERS_QEMU_STATUS
result=$PEERS_BACKEND_RESULT

# ------------------------------------------------------------------------------------- the result
# Each read's 64-byte pieces in order, found in the file: "offset" per piece (-1: not found), offsets of the hex
# string halved (a match must start on a byte, an even hex position).
od -An -tx1 -v "$source" | tr -d ' \n' >"$work/source.hex"
tr -d '\r' <"$console" | grep -E '^V4J-READ[12] [0-9a-f]{128}$' >"$work/reads" || true
awk 'NR == FNR { src = $0; next }
  { at = 0; off = -1; rest = src
    while ((i = index(rest, $2)) > 0) { if ((at + i - 1) % 2 == 0) { off = (at + i - 1) / 2; break } at += i; rest = substr(rest, i + 1) }
    print $1, off }' "$work/source.hex" "$work/reads" >"$work/offsets"
pieces=$((bytes / 64))
want=$((2 * pieces))
got=$(wc -l <"$work/offsets")
found=$(awk '$2 >= 0' "$work/offsets" | wc -l)
# ordered: each piece at least 64 bytes past the one before; skipped: the bytes between them
read -r ordered first last skipped < <(awk 'BEGIN { ok = "yes"; prev = -1 }
  { if ($2 < 0 || (prev >= 0 && $2 < prev + 64)) ok = "no"; if (prev >= 0 && $2 >= prev + 64) skip += $2 - prev - 64
    if (NR == 1) first = $2; prev = $2 }
  END { print ok, (NR ? first : -1), prev, skip + 0 }' "$work/offsets")
served=$(peers_field bytes "$result")
differ=no
[ "$(grep '^V4J-READ1 ' "$work/reads" | cut -d' ' -f2 | md5sum)" != "$(grep '^V4J-READ2 ' "$work/reads" | cut -d' ' -f2 | md5sum)" ] && differ=yes
info=$(tr -d '\r' <"$console" | grep '^V4J-RNG ' | tail -n 1)
features=$(peers_field features "$info")
gpacked=$([ "${features:34:1}" = 1 ] && echo 1 || echo 0)   # sysfs lists feature bit 0 first
boot=$(sed -n 's/^V4J: rng up uptime=\([0-9.]*\).*/\1/p' "$console" | tr -d '\r')
echo "GUEST reads=$got/$want current=$(peers_field current "$info") boot_s=${boot:-?} total_s=$(peers_elapsed "$t_start")"
verdict=ok
[ "$got" = "$want" ] && [ "$found" = "$want" ] && [ "$ordered" = yes ] && [ "$differ" = yes ] || verdict=FAIL
# the back-end served every byte the guest got, and no more than the file (a cycled file would make offsets ambiguous)
[ -n "$served" ] && [ "$((last + 64))" -le "$served" ] && [ "$served" -le "$source_bytes" ] || verdict=FAIL
[ "$gpacked" = "$packed" ] && [ "$qrc" = 0 ] || verdict=FAIL
echo "CHECK $verdict found=$found/$want ordered=$ordered first=$first skipped=$skipped served=${served:-?} differ=$differ packed=$gpacked/$packed"
[ "$verdict" = ok ] || exit 1
