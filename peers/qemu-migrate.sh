#!/usr/bin/env bash
# Usage: peers/qemu-migrate.sh --backend-cmd TEMPLATE [options]
#
# Live migration of a running Linux guest (the cached kernel + busybox initramfs of peers/install.sh, QEMU TCG)
# whose disk is a vhost-user-blk-pci device: two QEMU processes on this machine, guest RAM in shared memfd
# backends, each QEMU on its own back-end socket (two back-end processes on the SAME image file), the
# destination started with -incoming unix:PATH; the migration is driven over QMP (migrate, then query-migrate
# until completed).
#
# What the guest does (its serial console goes to the source's log, then, after the move, to the destination's):
#   - a reader: reads the read area (random bytes the host put in the image, --read-mib 1 MiB blocks) one block
#     at a time WITHOUT O_DIRECT, so the back-end's reads land straight in the guest's page cache, which nothing in
#     the guest copies or touches afterwards: a page the back-end filled during the migration reaches the
#     destination only if the back-end marked it in the dirty log;
#   - a writer: fresh random 64 KiB chunks with O_DIRECT and fsync over 16 slots of the write area, each chunk's MD5
#     recorded;
#   both until the host puts a stop mark in the first sector (after the migration completed). Then, on the
#   destination, the guest checks every block the reader read (from the page cache: the bytes as they arrived)
#   against the host's MD5s, and every slot (O_DIRECT) against the MD5 it wrote last; the host checks the slots
#   in the image file too.
# Prints on stdout:
#   MIGRATE status=completed|... total_ms=N downtime_ms=N setup_ms=N transferred=BYTES dirty_sync=N
#   GUEST blocks=N during=N bad=N rounds=N slots=N write_bad=N
#   CHECK ok|FAIL migrate=.. guest_read=ok|FAIL guest_write=ok|FAIL image=ok|FAIL dst_console=ok|FAIL qemu_rc=N
#         packed=GOT/ASKED
# (during: blocks the reader read while the migration ran; bad: blocks whose bytes differed after the move)
# The guest kernel runs with init_on_alloc=0: Debian's kernel zeroes every page it allocates, and that CPU write
# would mark the page cache's fresh pages dirty just before the back-end fills them, so QEMU would send them again
# anyway and the negative control would pass (seen: 0 bad blocks without the back-end's marks).
# Exit status 0 when CHECK is ok.
#
# The negative control: a source back-end that does not mark the data it reads in the dirty log (serve blk's
# TEST-ONLY --debug-no-dirty-log, through --src-backend-cmd) must make bad > 0.
#
# Options:
#   --backend-cmd T      both back-ends ({sock}: socket path, {img}: the image file, {cpu}: ""); it listens on
#                        {sock} and stops on SIGTERM. E.g. './virtio4j serve blk --socket {sock} --file {img}'
#   --src-backend-cmd T  the source's back-end instead (default: --backend-cmd)
#   --read-mib N         blocks of the read area (default 96)
#   --pace S             the reader's pause between blocks, seconds (default 0.05)
#   --bandwidth MIB      cap the migration at MIB MiB/s (default 4096: no cap to speak of; QEMU's own default is 32)
#   --packed             a packed ring (vhost-user-blk-pci packed=on)
#   --timeout S          give up after S seconds (default 180)
#   --keep DIR           keep both consoles and the QEMU/back-end logs in DIR
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

bandwidth=4096 backend_cmd='' src_backend_cmd='' read_mib=96 pace=0.05 packed=0 timeout=180 keep=''
while [ $# -gt 0 ]; do
  case $1 in
    --backend-cmd) backend_cmd=$2; shift 2 ;;
    --src-backend-cmd) src_backend_cmd=$2; shift 2 ;;
    --read-mib) read_mib=$2; shift 2 ;;
    --pace) pace=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --packed) packed=1; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$backend_cmd" ] || usage
src_backend_cmd=${src_backend_cmd:-$backend_cmd}
command -v qemu-system-x86_64 >/dev/null || peers_die "qemu-system-x86_64 not found: run peers/install.sh"
command -v python3 >/dev/null || peers_die "python3 not found (the QMP client)"
kdir="$PEERS_CACHE/kernel/current"
[ -e "$kdir/.complete" ] || peers_die "no guest kernel cached: run peers/install.sh kernel"
[ "$read_mib" -ge 1 ] && [ "$read_mib" -le 160 ] || peers_die "--read-mib must be in [1, 160] (the page cache of a 256M guest)"

mib=$((1 << 20)) chunk=65536 slots=16
read_at=$mib                            # MiB 0 holds the stop mark
write_at=$((read_at + read_mib * mib))  # 16 slots of 64 KiB
size=$((write_at + mib))

t_start=$(peers_now)
work=$(mktemp -d /tmp/v4j-migrate.XXXXXX)
peers_on_exit_rm "$work"
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  keep_logs() { cp -f "$work"/*.log "$work"/*.err "$work"/*.out "$keep"/ 2>/dev/null || true; }
  peers_on_exit_call keep_logs
fi
img=$work/disk.img
truncate -s "$size" "$img"
head -c $((read_mib * mib)) /dev/urandom >"$work/a"
dd if="$work/a" of="$img" bs=$mib seek=1 conv=notrunc status=none
mkdir "$work/extra"
for ((i = 0; i < read_mib; i++)); do
  dd if="$work/a" bs=$mib skip=$i count=1 status=none | md5sum | cut -d' ' -f1
done >"$work/extra/sums"
rm -f "$work/a"

# ------------------------------------------------------------------------------- the guest's /init
{
peers_guest_init_head qemu-migrate.sh
cat <<EOF
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk; do
  insmod /lib/modules/\$m.ko || die "insmod \$m"
done
i=0
while [ ! -b /dev/vda ]; do i=\$((i + 1)); [ \$i -le 200 ] || die "no /dev/vda"; sleep 0.05; done
say "disk up uptime=\$(cut -d' ' -f1 /proc/uptime)"
echo "V4J-DISK features=\$(cat /sys/block/vda/device/features)"
# held open to the end: the kernel drops a block device's page cache when its last opener closes it
exec 3</dev/vda
# bs=4096: busybox dd page-aligns (mmaps) only buffers of a page or more, and an O_DIRECT read into a smaller, unaligned
# one falls back to the page cache, which the open fd above keeps: the stop mark would never be seen
stopped() { dd if=/dev/vda bs=4096 count=1 iflag=direct 2>/tmp/stop.err >/tmp/stop || { echo "V4J-STOPERR \$(cat /tmp/stop.err)"; return 1; }; grep -q V4J-STOP /tmp/stop; }
reader() {
  i=0
  while [ \$i -lt $read_mib ] && ! stopped; do
    # buffered: the back-end's read lands in the page cache, and stays there untouched until the check
    dd if=/dev/vda of=/dev/null bs=$mib skip=\$((1 + i)) count=1 2>/dev/null || echo "V4J-READ FAIL block \$i"
    i=\$((i + 1))
    echo \$i >/tmp/blocks
    echo "V4J-R \$i"
    sleep $pace
  done
  while ! stopped; do sleep 0.2; done
}
writer() {
  r=0
  while ! stopped; do
    s=\$((r % $slots))
    dd if=/dev/urandom of=/tmp/chunk bs=$chunk count=1 2>/dev/null
    if ! dd if=/tmp/chunk of=/dev/vda bs=$chunk seek=\$(($write_at / $chunk + s)) oflag=direct conv=fsync,notrunc 2>/dev/null; then
      echo "V4J-WRITE FAIL round \$r slot \$s"
      break
    fi
    md5sum </tmp/chunk | cut -d' ' -f1 >/tmp/sum.\$s
    r=\$((r + 1))
    echo \$r >/tmp/rounds
  done
}
echo 0 >/tmp/blocks
echo 0 >/tmp/rounds
say "working uptime=\$(cut -d' ' -f1 /proc/uptime)"
reader &
writer &
wait
say "stopped uptime=\$(cut -d' ' -f1 /proc/uptime)"
n=\$(cat /tmp/blocks) bad=0 i=0
# sectors read so far (field 3 of the disk's stat): the check below must add none (all from the page cache)
sec0=\$(awk '{ print \$3 }' /sys/block/vda/stat)
echo "V4J-RA kb=\$(cat /sys/block/vda/queue/read_ahead_kb) \$(grep -E '^(MemFree|Cached):' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
while [ \$i -lt \$n ]; do
  want=\$(sed -n "\$((i + 1))p" /sums)
  # buffered again: the page cache's bytes, as they arrived on the destination
  got=\$(dd if=/dev/vda bs=$mib skip=\$((1 + i)) count=1 2>/dev/null | md5sum | cut -d' ' -f1)
  [ "\$got" = "\$want" ] || { bad=\$((bad + 1)); echo "V4J-BLOCK-BAD \$i"; }
  i=\$((i + 1))
done
echo "V4J-CACHED reread_sectors=\$((\$(awk '{ print \$3 }' /sys/block/vda/stat) - sec0))"
wn=0 wbad=0 s=0
while [ \$s -lt $slots ]; do
  if [ -f /tmp/sum.\$s ]; then
    wn=\$((wn + 1))
    got=\$(dd if=/dev/vda bs=$chunk skip=\$(($write_at / $chunk + s)) count=1 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)
    want=\$(cat /tmp/sum.\$s)
    echo "V4J-SLOT \$s \$want"
    [ "\$got" = "\$want" ] || { wbad=\$((wbad + 1)); echo "V4J-SLOT-BAD \$s got=\$got"; }
  fi
  s=\$((s + 1))
done
echo "V4J-VERIFY blocks=\$n bad=\$bad rounds=\$(cat /tmp/rounds) slots=\$wn write_bad=\$wbad"
say "done uptime=\$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
EOF
} >"$work/init"
"$PEERS_DIR/install.sh" initramfs "$work/init" "$work/initramfs.cpio"
# the MD5s ride in a second archive: the kernel unpacks concatenated newc archives in turn
(cd "$work/extra" && echo sums | /bin/busybox cpio -o -H newc 2>/dev/null) >>"$work/initramfs.cpio"

# ------------------------------------------------------------------------------------- the back-ends
peers_backend_start "${src_backend_cmd//\{img\}/$img}" "$work/src.sock" "" "$work/backend.src"
src_backend=$BACKEND_PID
peers_backend_start "${backend_cmd//\{img\}/$img}" "$work/dst.sock" "" "$work/backend.dst"
dst_backend=$BACKEND_PID

# ------------------------------------------------------------------------------------------ QMP
cat >"$work/qmp.py" <<'EOF'
# qmp.py SOCKET JSON...: runs each command on a fresh QMP session, prints each reply's "return" as JSON
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def reply():
    while True:
        m = json.loads(f.readline())
        if "return" in m or "error" in m:
            return m
f.readline()  # greeting
f.write('{"execute":"qmp_capabilities"}\n'); f.flush(); reply()
for c in sys.argv[2:]:
    f.write(c + "\n"); f.flush()
    m = reply()
    if "error" in m:
        print(json.dumps(m["error"]), file=sys.stderr)
        sys.exit(1)
    print(json.dumps(m["return"]))
EOF
qmp() { python3 "$work/qmp.py" "$@"; }

# ----------------------------------------------------------------------------------------- QEMU
device="vhost-user-blk-pci,chardev=c1,num-queues=1"
[ "$packed" = 1 ] && device+=",packed=on"
qemu_args() {   # $1: src|dst; sets the array qemu
  qemu=(qemu-system-x86_64 -machine pc,accel=tcg -smp 1 -m 256M
    -object memory-backend-memfd,id=mem,size=256M,share=on -numa node,memdev=mem
    -kernel "$kdir/vmlinuz" -initrd "$work/initramfs.cpio"
    -append "console=ttyS0 ipv6.disable=1 panic=-1 mitigations=off quiet loglevel=1 init_on_alloc=0"
    -nodefaults -no-user-config -display none -monitor none -serial "file:$work/console.$1.log" -no-reboot
    -qmp "unix:$work/qmp.$1,server=on,wait=off"
    -chardev "socket,id=c1,path=$work/$1.sock" -device "$device")
}
: >"$work/console.src.log"
: >"$work/console.dst.log"
qemu_args src
PEERS_LOG=$work/qemu.src.log peers_spawn "${qemu[@]}"
src_qemu=$PEERS_LAST_PID
qemu_args dst
PEERS_LOG=$work/qemu.dst.log peers_spawn "${qemu[@]}" -incoming "unix:$work/mig.sock"
dst_qemu=$PEERS_LAST_PID
peers_log "qemu source pid $src_qemu, destination pid $dst_qemu"

# Wait up to $3 seconds for a line matching ERE $1 in file $2 while process $4 lives; 1 on time-out, 2 when it died.
wait_line() {
  local deadline=$(($(date +%s) + $3))
  until grep -qE -- "$1" "$2" 2>/dev/null; do
    kill -0 "$4" 2>/dev/null || return 2
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.05
  done
}
fail_tail() { tail -n 30 "$work/console.src.log" "$work/console.dst.log" "$work/qemu.src.log" "$work/qemu.dst.log" \
  "$work/backend.src.err" "$work/backend.dst.err" >&2 || true; peers_die "$*"; }
wait_line '^V4J: working' "$work/console.src.log" "$timeout" "$src_qemu" || fail_tail "the guest did not start working"
for t in $(seq 100); do [ -S "$work/qmp.dst" ] && [ -S "$work/mig.sock" ] && break; sleep 0.1; done
[ -S "$work/mig.sock" ] || fail_tail "the destination does not listen on $work/mig.sock"
sleep 1   # let the reader get going: blocks before the migration are fine, the ones during it are the test

# ---------------------------------------------------------------------------------------- migrate
# --bandwidth (QEMU's default cap is 32 MiB/s); downtime-limit stays at its default (300 ms)
qmp "$work/qmp.src" "{\"execute\":\"migrate-set-parameters\",\"arguments\":{\"max-bandwidth\":$((bandwidth * mib))}}" >/dev/null
last_block() { { grep -a '^V4J-R ' "$1" || true; } | tail -n 1 | tr -d '\r' | cut -d' ' -f2; }
at_start=$(last_block "$work/console.src.log")
peers_log "migrating"
qmp "$work/qmp.src" "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:$work/mig.sock\"}}" >/dev/null ||
  fail_tail "migrate refused"
deadline=$(($(date +%s) + timeout))
status=none info='{}'
while :; do
  info=$(qmp "$work/qmp.src" '{"execute":"query-migrate"}' 2>/dev/null) || info='{}'
  status=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("status","none"))' "$info")
  case $status in completed | failed | cancelled) break ;; esac
  [ "$(date +%s)" -ge "$deadline" ] && break
  sleep 0.1
done
mig=$(python3 -c '
import json, sys
m = json.loads(sys.argv[1]); r = m.get("ram", {})
print("status=%s total_ms=%s downtime_ms=%s setup_ms=%s transferred=%s dirty_sync=%s" % (m.get("status"),
      m.get("total-time", "?"), m.get("downtime", "?"), m.get("setup-time", "?"), r.get("transferred", "?"),
      r.get("dirty-sync-count", "?")))' "$info")
echo "MIGRATE $mig"
peers_log "migration: $mig"
[ "$status" = completed ] || fail_tail "migration $status"
# the source stays paused (postmigrate): quit it, and its back-end
qmp "$work/qmp.src" '{"execute":"quit"}' >/dev/null 2>&1 || true
peers_wait_gone "$src_qemu" 20 || kill -KILL -- "-$src_qemu" 2>/dev/null || true
peers_stop_group "$src_backend" 30 TERM
# the guest goes on on the destination: a second of work there, then the stop mark
sleep 1
printf 'V4J-STOP\n' | dd of="$img" bs=512 count=1 conv=sync,notrunc oflag=direct status=none
peers_wait_gone "$dst_qemu" "$timeout" || fail_tail "the guest did not power off on the destination"
qrc=0
wait "$dst_qemu" || qrc=$?
peers_stop_group "$dst_backend" 30 TERM

# ------------------------------------------------------------------------------------- the result
dcon=$work/console.dst.log
dst_console=FAIL
grep -q '^V4J: done' "$dcon" && grep -q '^V4J-VERIFY' "$dcon" && dst_console=ok
v=$(grep '^V4J-VERIFY' "$dcon" | tail -n 1 | tr -d '\r')
grep -E '^V4J-(READ FAIL|WRITE FAIL|BLOCK-BAD|SLOT-BAD)' "$dcon" >&2 || true
# blocks read while the migration ran: from the last one the source's console showed when it started to the first
# one the destination's shows (the reader's progress lines)
at_end=$({ grep -a '^V4J-R ' "$dcon" || true; } | head -n 1 | tr -d '\r' | cut -d' ' -f2)
blocks=$(peers_field blocks "$v") bad=$(peers_field bad "$v") wbad=$(peers_field write_bad "$v")
guest_read=FAIL guest_write=FAIL image=ok
[ -n "$blocks" ] && [ "$blocks" -gt 0 ] && [ "$bad" = 0 ] && ! grep -q '^V4J-READ FAIL' "$dcon" && guest_read=ok
[ -n "$wbad" ] && [ "$wbad" = 0 ] && [ "$(peers_field slots "$v")" -gt 0 ] && ! grep -q '^V4J-WRITE FAIL' "$dcon" && guest_write=ok
while read -r _ slot want; do
  got=$(dd if="$img" bs=$chunk skip=$((write_at / chunk + slot)) count=1 status=none | md5sum | cut -d' ' -f1)
  [ "$got" = "$want" ] || { image=FAIL; peers_log "slot $slot: the image has $got, the guest wrote $want"; }
done < <(grep '^V4J-SLOT ' "$dcon" | tr -d '\r')   # the serial console ends lines with CR LF
[ "$(grep -c '^V4J-SLOT ' "$dcon")" -gt 0 ] || image=FAIL
during=$(( ${at_end:-${blocks:-0}} - ${at_start:-0} ))
echo "GUEST blocks=${blocks:-?} during=$during bad=${bad:-?} rounds=$(peers_field rounds "$v") slots=$(peers_field slots "$v") write_bad=${wbad:-?} total_s=$(peers_elapsed "$t_start")"
# the ring format negotiated (sysfs lists feature bit 0 first; 34 is RING_PACKED)
features=$(sed -n 's/^V4J-DISK features=\([01]*\).*/\1/p' "$work/console.src.log")
gpacked=$([ "${features:34:1}" = 1 ] && echo 1 || echo 0)
verdict=ok
[ "$gpacked" = "$packed" ] || verdict=FAIL
[ "$status" = completed ] && [ "$guest_read" = ok ] && [ "$guest_write" = ok ] && [ "$image" = ok ] &&
  [ "$dst_console" = ok ] && [ "$qrc" = 0 ] || verdict=FAIL
echo "CHECK $verdict migrate=$status guest_read=$guest_read guest_write=$guest_write image=$image dst_console=$dst_console qemu_rc=$qrc packed=$gpacked/$packed"
[ "$verdict" = ok ] || exit 1
