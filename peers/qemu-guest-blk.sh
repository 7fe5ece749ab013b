#!/usr/bin/env bash
# Usage: peers/qemu-guest-blk.sh --backend-cmd TEMPLATE [options]
#
# A real Linux guest (the cached Debian cloud kernel + busybox initramfs of peers/install.sh, QEMU TCG) on a
# vhost-user-blk-pci device backed by a vhost-user-blk back-end, and the bytes checked on both sides:
#   1. the host writes pattern A (random) into a fresh image at --read-at before the guest boots; the guest
#      reads it with O_DIRECT and prints its MD5 (the device's read path);
#   2. the guest writes pattern B (random, carried in the initramfs) at --write-at with O_DIRECT and fsync,
#      reads it back with O_DIRECT and compares (in the guest), flushes, powers off;
#   3. the guest writes B at --discard-at too and discards it (`blkdiscard`: DISCARD, when the device offers it;
#      busybox has no BLKZEROOUT): the request must succeed (what a discarded range reads back as is the
#      conformance suite's business);
#   4. the host compares the image's bytes at --write-at with B (the device's write path, to the file).
# Prints on stdout:
#   GUEST size=BYTES ro=0|1 packed=0|1 queues=N read_md5=ok|FAIL readback=ok|FAIL discard=ok|FAIL|n/a
#         discard_max=BYTES write_zeroes_max=BYTES boot_s=S total_s=S features=BITS
#   CHECK ok|FAIL size=.. read=.. readback=.. image=.. discard=.. packed=GOT/ASKED queues=GOT/EXPECTED
# Exit status 0 when CHECK is ok.
#
# With --kills N (a reconnection test) the guest does something else: two writers, each with O_DIRECT and fsync,
# write fresh random 1 MiB chunks in turn to their slots at --write-at (16 slots of --bytes / 16... see --slots)
# and record each chunk's MD5, until the host puts a stop mark in the first sector; meanwhile the host kill -9s the
# back-end N times, each at a random moment 0.3-1.5 s after QEMU (-chardev ...,reconnect=1) reconnected to it, and
# restarts it on the same socket. Then the guest reads every slot back with O_DIRECT and checks it against the last
# MD5 it wrote there, and the host checks the image file the same way. Prints:
#   GUEST size=BYTES rounds=N slots=N verify=ok|FAIL boot_s=S total_s=S
#   CHECK ok|FAIL size=.. kills=DONE/ASKED guest=ok|FAIL image=ok|FAIL qemu=ok|FAIL inflight=yes|no packed=GOT/ASKED rounds=N
# (inflight: whether QEMU had mapped the back-end's inflight area, INFLIGHT_SHMFD, which then carried the recovery)
#
# Options:
#   --backend-cmd T   the back-end ({sock}: socket path, {img}: the image file, {cpu}: its CPU); it listens on
#                     {sock} and stops on SIGTERM. E.g. './virtio4j serve blk --socket {sock} --file {img}' or
#                     'peers/qsd.sh --socket {sock} --image {img}'
#   --size SIZE       image size (default 64M)
#   --bytes SIZE      size of each pattern (default 4M; a multiple of 64k)
#   --read-at SIZE    byte offset of pattern A (default 1M; a multiple of 64k)
#   --write-at SIZE   byte offset of pattern B (default 16M; a multiple of 64k)
#   --discard-at SIZE where B is written again and discarded (default 32M)
#   --packed          ask for a packed ring (vhost-user-blk-pci packed=on); CHECK requires it negotiated
#   --queues N        num-queues of the device (default 1; the guest gets min(N, 2) vCPUs, and CHECK wants
#                     as many hardware queues on /dev/vda)
#   --backend-cpu N   (default 0)   --cpu N   CPU for QEMU (default 1)
#   --timeout S       kill the guest after S seconds (default 120)
#   --console FILE    keep the serial console log there (default: temporary)
#   --kills N         the reconnection test above, with N kill -9s of the back-end (default 0: the normal test)
#   --slots N         --kills: 1 MiB slots the writers rotate over (default 16)
#   --seed N          --kills: seed of the kill times (default: random, printed)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
to_bytes() { numfmt --from=iec "${1^^}" 2>/dev/null || peers_die "not a size: $1"; }

backend_cmd='' size=64M bytes=4M read_at=1M write_at=16M discard_at=32M packed=0 queues=1 backend_cpu=0 cpu=1 timeout=120
console='' kills=0 slots=16 seed=$(( (RANDOM << 15) | RANDOM ))
while [ $# -gt 0 ]; do
  case $1 in
    --backend-cmd) backend_cmd=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --read-at) read_at=$2; shift 2 ;;
    --write-at) write_at=$2; shift 2 ;;
    --discard-at) discard_at=$2; shift 2 ;;
    --packed) packed=1; shift ;;
    --queues) queues=$2; shift 2 ;;
    --backend-cpu) backend_cpu=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --console) console=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$backend_cmd" ] || usage
peers_need_guest
size=$(to_bytes "$size") bytes=$(to_bytes "$bytes") read_at=$(to_bytes "$read_at") write_at=$(to_bytes "$write_at")
discard_at=$(to_bytes "$discard_at")
chunk=65536
for v in bytes read_at write_at discard_at; do
  [ $((${!v} % chunk)) = 0 ] || peers_die "--${v//_/-} must be a multiple of 64k"
done
for a in read_at write_at discard_at; do
  [ $((${!a} + bytes)) -le "$size" ] || peers_die "--${a//_/-} + --bytes is past --size"
  for b in read_at write_at discard_at; do
    [ "$a" = "$b" ] || [ $((${!a} + bytes)) -le "${!b}" ] || [ $((${!b} + bytes)) -le "${!a}" ] ||
      peers_die "--${a//_/-} and --${b//_/-} overlap"
  done
done

slot_bytes=$((1 << 20))
if [ "$kills" -gt 0 ]; then
  [ $((write_at + slots * slot_bytes)) -le "$size" ] || peers_die "--write-at + --slots MiB is past --size"
  [ $((slots % 2)) = 0 ] && [ "$slots" -ge 2 ] || peers_die "--slots must be even: two writers share them"
fi

t_start=$(peers_now)
work=$(mktemp -d /tmp/v4j-guest-blk.XXXXXX)
peers_on_exit_rm "$work"
console=${console:-$work/console.log}
: >"$console"
img=$work/disk.img
sock=$work/blk.sock
truncate -s "$size" "$img"
head -c "$bytes" /dev/urandom >"$work/a"
head -c "$bytes" /dev/urandom >"$work/b"
dd if="$work/a" of="$img" bs=$chunk seek=$((read_at / chunk)) conv=notrunc status=none

# ------------------------------------------------------------------------------- the guest's /init
{
peers_guest_init_head qemu-guest-blk.sh
peers_guest_blk_up
cat <<EOF
echo "V4J-DISK size=\$(blockdev --getsize64 /dev/vda) ro=\$(blockdev --getro /dev/vda) queues=\$(ls /sys/block/vda/mq | wc -l) features=\$(cat /sys/block/vda/device/features)"
EOF
if [ "$kills" = 0 ]; then
cat <<EOF
echo "V4J-READ md5=\$(dd if=/dev/vda bs=$chunk skip=$((read_at / chunk)) count=$((bytes / chunk)) iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
dd if=/pattern of=/dev/vda bs=$chunk seek=$((write_at / chunk)) oflag=direct conv=fsync,notrunc 2>/dev/null || die "dd write"
dd if=/dev/vda of=/tmp/back bs=$chunk skip=$((write_at / chunk)) count=$((bytes / chunk)) iflag=direct 2>/dev/null || die "dd read back"
if cmp -s /pattern /tmp/back; then echo "V4J-READBACK ok"; else echo "V4J-READBACK FAIL"; fi
rm -f /tmp/back
echo "V4J-LIMITS discard_max=\$(cat /sys/block/vda/queue/discard_max_bytes) write_zeroes_max=\$(cat /sys/block/vda/queue/write_zeroes_max_bytes)"
dd if=/pattern of=/dev/vda bs=$chunk seek=$((discard_at / chunk)) oflag=direct conv=fsync,notrunc 2>/dev/null || die "dd write for discard"
if [ "\$(cat /sys/block/vda/queue/discard_max_bytes)" -gt 0 ]; then
  if blkdiscard -o $discard_at -l $bytes /dev/vda; then echo "V4J-DISCARD ok"; else echo "V4J-DISCARD FAIL"; fi
else
  echo "V4J-DISCARD n/a"
fi
EOF
else
cat <<EOF
# two writers, each on its own slots (w, w + 2, ...), until the host's stop mark is in the first sector
writer() {
  w=\$1 r=0
  while ! dd if=/dev/vda bs=512 count=1 iflag=direct 2>/dev/null | grep -q V4J-STOP; do
    s=\$((w + 2 * (r % ($slots / 2))))
    dd if=/dev/urandom of=/tmp/chunk.\$w bs=$chunk count=$((slot_bytes / chunk)) 2>/dev/null
    if ! dd if=/tmp/chunk.\$w of=/dev/vda bs=$chunk seek=\$(($write_at / $chunk + s * $((slot_bytes / chunk)))) oflag=direct conv=fsync,notrunc 2>/dev/null; then
      echo "V4J-WRITE FAIL writer \$w round \$r slot \$s"
      break
    fi
    md5sum </tmp/chunk.\$w | cut -d' ' -f1 >/tmp/sum.\$s
    r=\$((r + 1))
  done
  echo \$r >/tmp/rounds.\$w
}
say "writes start uptime=\$(cut -d' ' -f1 /proc/uptime)"
writer 0 &
writer 1 &
wait
say "writes done uptime=\$(cut -d' ' -f1 /proc/uptime)"
sync
n=0 ok=0 bad=0 s=0
while [ \$s -lt $slots ]; do
  if [ -f /tmp/sum.\$s ]; then
    n=\$((n + 1))
    got=\$(dd if=/dev/vda bs=$chunk skip=\$(($write_at / $chunk + s * $((slot_bytes / chunk)))) count=$((slot_bytes / chunk)) iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)
    want=\$(cat /tmp/sum.\$s)
    echo "V4J-SLOT \$s \$want"
    if [ "\$got" = "\$want" ]; then ok=\$((ok + 1)); else bad=\$((bad + 1)); echo "V4J-SLOT-BAD \$s got=\$got"; fi
  fi
  s=\$((s + 1))
done
echo "V4J-VERIFY slots=\$n ok=\$ok bad=\$bad rounds=\$((\$(cat /tmp/rounds.0) + \$(cat /tmp/rounds.1)))"
EOF
fi
cat <<EOF
sync
blockdev --flushbufs /dev/vda
say "done uptime=\$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
EOF
} >"$work/init"
"$PEERS_DIR/install.sh" initramfs "$work/init" "$work/initramfs.cpio"
# pattern B rides in a second archive: the kernel unpacks concatenated newc archives in turn
mkdir "$work/extra"
cp "$work/b" "$work/extra/pattern"
(cd "$work/extra" && echo pattern | /bin/busybox cpio -o -H newc 2>/dev/null) >>"$work/initramfs.cpio"

# ------------------------------------------------------------------------------------- the backend
peers_backend_start "${backend_cmd//\{img\}/$img}" "$sock" "$backend_cpu" "$work/backend"
backend_err=$work/backend.err

# ----------------------------------------------------------------------------------------- QEMU
smp=$((queues < 2 ? 1 : 2))
device="vhost-user-blk-pci,chardev=c1,num-queues=$queues"
[ "$packed" = 1 ] && device+=",packed=on"
# QEMU reconnects to a back-end that went away only when asked (--kills). Set apart from the array: under set -e an
# assignment fails with its last command substitution, and a test that is false would end the script.
reconnect=""
if [ "$kills" -gt 0 ]; then reconnect=",reconnect=1"; fi
peers_qemu tcg "$smp" 256 "$work/initramfs.cpio" "$console" quiet loglevel=1
qemu=("${PEERS_QEMU[@]}" -chardev "socket,id=c1,path=$sock$reconnect" -device "$device")
[ -n "$cpu" ] && qemu=(taskset -c "$cpu" "${qemu[@]}")
PEERS_LOG=$work/qemu.log peers_spawn "${qemu[@]}"
qpid=$PEERS_LAST_PID
peers_log "qemu pid $qpid: ${qemu[*]}"

# ------------------------------------------------------------------------------ --kills: the chaos
# Wait up to $3 seconds for a line matching ERE $1 in file $2 while QEMU lives; 1 on time-out, 2 when QEMU died.
wait_line() { peers_wait_line "$1" "$2" "$3" "$qpid"; }
kills_done=0 qemu_alive=ok inflight=no
if [ "$kills" -gt 0 ]; then
  RANDOM=$seed
  peers_log "$kills kills of the back-end, seed $seed (replay: --seed $seed)"
  wait_line '^V4J: writes start' "$console" "$timeout" || { tail -n 30 "$console" >&2; peers_die "the guest did not start writing"; }
  for ((k = 1; k <= kills; k++)); do
    # QEMU is connected to the back-end running now, the guest writing through it
    if ! wait_line 'front-end connected' "$backend_err" 60; then
      qemu_alive=FAIL
      kill -0 "$qpid" 2>/dev/null && qemu_alive=ok
      peers_log "QEMU did not reconnect to back-end $k (qemu ${qemu_alive/FAIL/gone})"
      break
    fi
    ms=$((300 + RANDOM % 1201))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    grep -q '^V4J: writes done' "$console" && { peers_log "the guest stopped writing before kill $k"; break; }
    kill -0 "$qpid" 2>/dev/null || { qemu_alive=FAIL; peers_log "QEMU died before kill $k"; break; }
    # QEMU maps the back-end's inflight area (INFLIGHT_SHMFD) when the back-end offers one: ours and libvhost-user's
    # name their memfds so
    grep -q 'memfd:[^ ]*inflight' "/proc/$qpid/maps" 2>/dev/null && inflight=yes
    kill -KILL "$BACKEND_PID"
    rc=0
    wait "$BACKEND_PID" || rc=$?
    [ "$rc" = 137 ] || { peers_log "kill $k: the back-end exited with $rc, not 137 (SIGKILL)"; break; }
    kills_done=$k
    peers_log "kill $k after ${ms} ms: back-end $BACKEND_PID died of SIGKILL; restarting it"
    rm -f "$sock"
    peers_backend_start "${backend_cmd//\{img\}/$img}" "$sock" "$backend_cpu" "$work/backend.$k"
    backend_err=$work/backend.$k.err
  done
  # the last back-end serves the rest: QEMU reconnects, the guest writes a while, then reads the stop mark
  wait_line 'front-end connected' "$backend_err" 60 || { qemu_alive=FAIL; kill -0 "$qpid" 2>/dev/null && qemu_alive=ok; }
  sleep 1
  kill -0 "$qpid" 2>/dev/null || qemu_alive=FAIL
  printf 'V4J-STOP\n' | dd of="$img" bs=512 count=1 conv=sync,notrunc oflag=direct status=none
fi
peers_guest_finish "$qpid" "$timeout" "$console" "$work/qemu.log" '^V4J: done'
qrc=$PEERS_QEMU_STATUS

# ------------------------------------------------------------------------------------- the result
if [ "$kills" -gt 0 ]; then
  disk=$(grep '^V4J-DISK' "$console" | tail -n 1 | tr -d '\r')
  gsize=$(peers_field size "$disk")
  features=$(peers_field features "$disk")
  gpacked=$([ "${features:34:1}" = 1 ] && echo 1 || echo 0)   # sysfs lists feature bit 0 first
  v=$(grep '^V4J-VERIFY' "$console" | tail -n 1 | tr -d '\r')
  guest=FAIL image=ok
  [ -n "$v" ] && [ "$(peers_field bad "$v")" = 0 ] && [ "$(peers_field slots "$v")" -gt 0 ] &&
    ! grep -q '^V4J-WRITE FAIL' "$console" && guest=ok
  # the image holds what the guest wrote last in each slot
  while read -r _ slot want; do
    got=$(dd if="$img" bs=$chunk skip=$((write_at / chunk + slot * slot_bytes / chunk)) count=$((slot_bytes / chunk)) status=none | md5sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || { image=FAIL; peers_log "slot $slot: the image has $got, the guest wrote $want"; }
  done < <(grep '^V4J-SLOT ' "$console" | tr -d '\r')   # the serial console ends lines with CR LF
  [ "$(grep -c '^V4J-SLOT ' "$console")" -gt 0 ] || image=FAIL
  grep -E '^V4J-(WRITE|SLOT-BAD)' "$console" >&2 || true
  [ "$qrc" = 0 ] || qemu_alive=FAIL
  boot=$(sed -n 's/^V4J: disk up uptime=\([0-9.]*\).*/\1/p' "$console")
  echo "GUEST size=$gsize rounds=$(peers_field rounds "$v") slots=$(peers_field slots "$v") verify=$guest boot_s=${boot:-?} total_s=$(peers_elapsed "$t_start")"
  verdict=ok
  [ "$gsize" = "$size" ] && [ "$kills_done" = "$kills" ] && [ "$guest" = ok ] && [ "$image" = ok ] &&
    [ "$qemu_alive" = ok ] && [ "$gpacked" = "$packed" ] || verdict=FAIL
  echo "CHECK $verdict size=$gsize/$size kills=$kills_done/$kills guest=$guest image=$image qemu=$qemu_alive inflight=$inflight packed=$gpacked/$packed rounds=$(peers_field rounds "$v")"
  [ "$verdict" = ok ] || exit 1
  exit 0
fi
features=$(sed -n 's/^V4J-DISK .*features=\([01]*\).*/\1/p' "$console")
bit() { [ "${features:$1:1}" = 1 ] && echo 1 || echo 0; }   # sysfs lists feature bit 0 first
disk=$(grep '^V4J-DISK' "$console" | tail -n 1)
gsize=$(peers_field size "$disk")
read_ok=FAIL readback=FAIL image=FAIL
[ "$(sed -n 's/^V4J-READ md5=\([0-9a-f]*\).*/\1/p' "$console")" = "$(md5sum <"$work/a" | cut -d' ' -f1)" ] && read_ok=ok
grep -q '^V4J-READBACK ok' "$console" && readback=ok
cmp -s -n "$bytes" -i "0:$write_at" "$work/b" "$img" && image=ok
discard=$(sed -n 's/^V4J-DISCARD \([a-zA-Z/]*\).*/\1/p' "$console")
limits=$(grep '^V4J-LIMITS' "$console" | tail -n 1)
boot=$(sed -n 's/^V4J: disk up uptime=\([0-9.]*\).*/\1/p' "$console")
echo "GUEST size=$gsize ro=$(peers_field ro "$disk") packed=$(bit 34) queues=$(peers_field queues "$disk") read_md5=$read_ok readback=$readback discard=${discard:-?} discard_max=$(peers_field discard_max "$limits") write_zeroes_max=$(peers_field write_zeroes_max "$limits") boot_s=${boot:-?} total_s=$(peers_elapsed "$t_start") features=$features"
verdict=ok
[ "$gsize" = "$size" ] || verdict=FAIL
[ "$read_ok" = ok ] && [ "$readback" = ok ] && [ "$image" = ok ] || verdict=FAIL
[ "$discard" = ok ] || [ "$discard" = n/a ] || verdict=FAIL
[ "$packed" = 0 ] || [ "$(bit 34)" = 1 ] || verdict=FAIL
[ "$qrc" = 0 ] || verdict=FAIL
# the guest makes one hardware queue per device queue, at most one per vCPU
gq=$(peers_field queues "$disk")
[ "$gq" = "$smp" ] || verdict=FAIL
echo "CHECK $verdict size=$gsize/$size read=$read_ok readback=$readback image=$image discard=${discard:-?} packed=$(bit 34)/$packed queues=$gq/$smp"
[ "$verdict" = ok ] || exit 1
