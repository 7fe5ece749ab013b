#!/usr/bin/env bash
# Usage: peers/qemu-migrate.sh --backend-cmd TEMPLATE [--device blk|net] [options]
#
# Live migration of a running Linux guest (the cached kernel + busybox initramfs of peers/install.sh, QEMU TCG)
# whose device is served by a vhost-user back-end: two QEMU processes on this machine, guest RAM in shared memfd
# backends, each QEMU on its own back-end socket (two back-end processes), the destination started with
# -incoming unix:PATH; the migration is driven over QMP (migrate, then query-migrate until completed). The guest's
# serial console goes to the source's log, then, after the move, to the destination's.
#
# --device blk (the default): a vhost-user-blk-pci disk, both back-ends on the SAME image file.
#   - a reader: reads the read area (random bytes the host put in the image, --read-mib 1 MiB blocks) one block
#     at a time WITHOUT O_DIRECT, so the back-end's reads land straight in the guest's page cache, which nothing in
#     the guest copies or touches afterwards: a page the back-end filled during the migration reaches the
#     destination only if the back-end marked it in the dirty log;
#   - a writer: fresh random 64 KiB chunks with O_DIRECT and fsync over 16 slots of the write area, each chunk's MD5
#     recorded;
#   both until the host puts a stop mark in the first sector (after the migration completed). Then, on the
#   destination, the guest checks every block the reader read (from the page cache: the bytes as they arrived)
#   against the host's MD5s, and every slot (O_DIRECT) against the MD5 it wrote last; the host checks the slots
#   in the image file too. Prints on stdout:
#     MIGRATE status=completed|... total_ms=N downtime_ms=N setup_ms=N transferred=BYTES dirty_sync=N
#     GUEST blocks=N during=N bad=N rounds=N slots=N write_bad=N
#     CHECK ok|FAIL migrate=.. guest_read=ok|FAIL guest_write=ok|FAIL image=ok|FAIL dst_console=ok|FAIL qemu_rc=N
#           packed=GOT/ASKED
#   (during: blocks the reader read while the migration ran; bad: blocks whose bytes differed after the move)
#   The guest kernel runs with init_on_alloc=0: Debian's kernel zeroes every page it allocates, and that CPU write
#   would mark the page cache's fresh pages dirty just before the back-end fills them, so QEMU would send them again
#   anyway and the negative control would pass (seen: 0 bad blocks without the back-end's marks).
#   The negative control: a source back-end that does not mark the data it reads in the dirty log (serve blk's
#   TEST-ONLY --debug-no-dirty-log, through --src-backend-cmd) must make bad > 0.
#
# --device net: a virtio-net-pci NIC (vhost-user netdev) on a back-end that sends every frame back (macswap, or
#   loopback). The peer's address is the guest's own too, but the guest's own packets to it are routed out of eth0 (a
#   policy rule for locally sent packets) and taken in when they come back (accept_local), so the guest talks to
#   itself through the back-end. Until the host, after the move, writes a line to the destination's second serial
#   port (a pipe; the source's is null), the guest
#   - pings without pause, in rounds of 25 echo requests (--ping-interval apart): each request comes back MACs
#     swapped, the guest's kernel checks and answers it through lo, so ping counts one reply per request the
#     back-end returned, and a frame that came back damaged or twice shows as lost or DUP;
#   - writes a TCP stream of numbered 1328-byte lines to itself, ~10 a second, whose reader is stopped (SIGSTOP)
#     until after the move: the segments wait in its socket, their bytes (all but the first 128 of each frame) in the
#     very receive buffers the back-end wrote, untouched by the guest (as blk's page cache). On the destination the
#     reader reads them and the guest compares every line with what was written: a page the back-end filled during
#     the migration arrives intact only if the back-end marked it in the dirty log.
#   Then the guest waits for its tx counter to settle (the last frames handed back) and prints eth0's counters; the
#   host stops each back-end (SIGTERM) and takes its RESULT line. Frames in flight at the switch are counted, not
#   guessed: a frame is the source's or the destination's, never both nor neither, so
#     guest tx == source RX + destination RX, guest rx == source TX + destination TX, and
#     source RX + destination RX == source TX + destination TX + both RX-dropped (a frame not given back is counted).
#   Prints on stdout:
#     MIGRATE status=... total_ms=N downtime_ms=N setup_ms=N transferred=BYTES dirty_sync=N
#     BACKEND src RESULT ...      BACKEND dst RESULT ...
#     GUEST tx_packets=N rx_packets=N ping_sent=N ping_received=N ping_dup=N rounds=N dst_rounds=N dst_rx=N
#           stream_lines=N stream_bytes=GOT/WANT during=N stream_bad=N total_s=S
#     CHECK ok|FAIL migrate=.. tx=ok|FAIL rx=ok|FAIL dropped=ok|FAIL dst=ok|FAIL ping=ok|FAIL stream=ok|FAIL
#           dst_console=ok|FAIL qemu_rc=N packed=GOT/ASKED
#   (dst_rounds / dst_rx: ping rounds the guest finished on the destination, frames it received there; dst: the
#   destination back-end took and returned frames and the guest received some on the destination; ping: every
#   request came back answered once; during: stream lines written while the migration ran; stream_bad: lines that
#   differed on the destination)
#   The negative control: a source back-end that does not mark the frames it writes in the dirty log (serve net's
#   TEST-ONLY --debug-no-dirty-log, through --src-backend-cmd) must make stream_bad > 0, and only that fail.
# Exit status 0 when CHECK is ok.
#
# Options:
#   --device blk|net     (default blk)
#   --backend-cmd T      both back-ends ({sock}: socket path, {img}: the image file (blk), {cpu}: ""); it listens on
#                        {sock} and stops on SIGTERM. E.g. './virtio4j serve blk --socket {sock} --file {img}' or
#                        './virtio4j serve net --socket {sock} --mode macswap --notify notify'
#   --src-backend-cmd T  the source's back-end instead (default: --backend-cmd)
#   --bandwidth MIB      cap the migration at MIB MiB/s (default 4096: no cap to speak of; QEMU's own default is 32)
#   --packed             a packed ring (the device's packed=on)
#   --timeout S          give up after S seconds (default 180)
#   --keep DIR           keep both consoles and the QEMU/back-end logs in DIR
#   blk: --read-mib N    blocks of the read area (default 96)
#        --pace S        the reader's pause between blocks, seconds (default 0.05)
#   net: --ping-interval S   between echo requests (default 0.02)
#        --guest-ip / --peer-ip / --guest-mac / --peer-mac   (defaults 192.0.2.2 / 192.0.2.1 / 52:54:00:12:34:56 /
#                        02:00:00:00:00:01)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

device=blk bandwidth=4096 backend_cmd='' src_backend_cmd='' read_mib=96 pace=0.05 packed=0 timeout=180 keep=''
ping_interval=0.02 guest_ip=192.0.2.2 peer_ip=192.0.2.1 guest_mac=52:54:00:12:34:56 peer_mac=02:00:00:00:00:01
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2; shift 2 ;;
    --backend-cmd) backend_cmd=$2; shift 2 ;;
    --src-backend-cmd) src_backend_cmd=$2; shift 2 ;;
    --read-mib) read_mib=$2; shift 2 ;;
    --pace) pace=$2; shift 2 ;;
    --ping-interval) ping_interval=$2; shift 2 ;;
    --guest-ip) guest_ip=$2; shift 2 ;;
    --peer-ip) peer_ip=$2; shift 2 ;;
    --guest-mac) guest_mac=$2; shift 2 ;;
    --peer-mac) peer_mac=$2; shift 2 ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --packed) packed=1; shift ;;
    --timeout) timeout=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) usage ;;
    *) peers_log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$backend_cmd" ] || usage
case $device in blk | net) ;; *) peers_die "--device must be blk or net, not $device" ;; esac
src_backend_cmd=${src_backend_cmd:-$backend_cmd}
peers_need_guest
command -v python3 >/dev/null || peers_die "python3 not found (the QMP client)"
[ "$read_mib" -ge 1 ] && [ "$read_mib" -le 160 ] || peers_die "--read-mib must be in [1, 160] (the page cache of a 256M guest)"

t_start=$(peers_now)
work=$(mktemp -d /tmp/v4j-migrate.XXXXXX)
peers_on_exit_rm "$work"
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  keep_logs() { cp -f "$work"/*.log "$work"/*.err "$work"/*.out "$keep"/ 2>/dev/null || true; }
  peers_on_exit_call keep_logs
fi

# =============================================================================================== blk
mib=$((1 << 20)) chunk=65536 slots=16
read_at=$mib                            # MiB 0 holds the stop mark
write_at=$((read_at + read_mib * mib))  # 16 slots of 64 KiB
img=$work/disk.img

blk_prepare() {   # the image, its read area's MD5s, and the guest's /init
  truncate -s $((write_at + mib)) "$img"
  head -c $((read_mib * mib)) /dev/urandom >"$work/a"
  dd if="$work/a" of="$img" bs=$mib seek=1 conv=notrunc status=none
  mkdir "$work/extra"
  for ((i = 0; i < read_mib; i++)); do
    dd if="$work/a" bs=$mib skip=$i count=1 status=none | md5sum | cut -d' ' -f1
  done >"$work/extra/sums"
  rm -f "$work/a"
  {
  peers_guest_init_head qemu-migrate.sh
  peers_guest_blk_up
  cat <<EOF
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
}

blk_qemu_device() {   # $1: src|dst; appends the device to the array qemu
  local d="vhost-user-blk-pci,chardev=c1,num-queues=1"
  [ "$packed" = 1 ] && d+=",packed=on"
  qemu+=(-chardev "socket,id=c1,path=$work/$1.sock" -device "$d")
}

last_block() { { grep -a '^V4J-R ' "$1" || true; } | tail -n 1 | tr -d '\r' | cut -d' ' -f2; }
blk_before() { at_start=$(last_block "$work/console.src.log"); }

blk_stop_guest() {   # a second of work on the destination, then the stop mark
  sleep 1
  printf 'V4J-STOP\n' | dd of="$img" bs=512 count=1 conv=sync,notrunc oflag=direct status=none
}

blk_result() {
  local dcon=$work/console.dst.log v at_end blocks bad wbad guest_read=FAIL guest_write=FAIL image=ok during features gpacked
  local verdict=ok
  grep -q '^V4J-VERIFY' "$dcon" || dst_console=FAIL
  v=$(grep '^V4J-VERIFY' "$dcon" | tail -n 1 | tr -d '\r')
  grep -E '^V4J-(READ FAIL|WRITE FAIL|BLOCK-BAD|SLOT-BAD)' "$dcon" >&2 || true
  # blocks read while the migration ran: from the last one the source's console showed when it started to the first
  # one the destination's shows (the reader's progress lines)
  at_end=$({ grep -a '^V4J-R ' "$dcon" || true; } | head -n 1 | tr -d '\r' | cut -d' ' -f2)
  blocks=$(peers_field blocks "$v") bad=$(peers_field bad "$v") wbad=$(peers_field write_bad "$v")
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
  [ "$gpacked" = "$packed" ] || verdict=FAIL
  [ "$status" = completed ] && [ "$guest_read" = ok ] && [ "$guest_write" = ok ] && [ "$image" = ok ] &&
    [ "$dst_console" = ok ] && [ "$qrc" = 0 ] || verdict=FAIL
  echo "CHECK $verdict migrate=$status guest_read=$guest_read guest_write=$guest_write image=$image dst_console=$dst_console qemu_rc=$qrc packed=$gpacked/$packed"
  [ "$verdict" = ok ]
}

# =============================================================================================== net
net_prepare() {   # the guest's /init
  # the destination's second serial port (QEMU's pipe chardev: PATH.in and PATH.out), apart from the logs --keep copies
  mkdir "$work/ctl"
  mkfifo "$work/ctl/serial.in" "$work/ctl/serial.out"
  {
  peers_guest_init_head qemu-migrate.sh
  peers_guest_net_up "$guest_ip" "$peer_ip" "$peer_mac"
  printf 'PING_INTERVAL=%s\n' "$ping_interval"
  cat <<'EOF'
# The peer's address is ours too: packets we send to it are routed out of eth0 (a rule for locally sent packets,
# "iif lo", ahead of the local table), and the frame the back-end sends back is taken in (accept_local: its source
# is one of ours) and answered through lo.
ip addr add "$PEER_IP/32" dev eth0
ip route add "$PEER_IP" dev eth0 src "$GUEST_IP" table 100
ip rule add pref 10 iif lo to "$PEER_IP" table 100
ip rule del pref 0
ip rule add pref 100 table local
for k in all.accept_local=1 eth0.accept_local=1 all.rp_filter=0 eth0.rp_filter=0; do
  sysctl -qw "net.ipv4.conf.$k" || die "sysctl $k"
done
# the host's stop: a line on the second serial port (null on the source, a pipe on the destination)
stty -F /dev/ttyS1 clocal -echo 2>/dev/null || die "no /dev/ttyS1"
( read -r line </dev/ttyS1; : >/tmp/stop ) &
# A TCP stream from the guest to itself through the back-end, whose reader is stopped until after the move, so what
# it receives waits in the socket's queue (a large receive buffer: no collapsing), in the very receive buffers the
# back-end wrote, which nothing in the guest writes until the reader reads them on the destination (as blk's page
# cache). A page the back-end filled during the migration reaches the destination only if the back-end marked it in
# the dirty log. Lines of 1328 bytes: a frame that large leaves no room in its 1536-byte buffer for the skb's shared
# info, so virtio-net copies its first 128 bytes out and leaves the rest in place; a smaller one would be made an skb
# in place, the shared info written by the guest at the buffer's end, and that CPU write would send the page again
# anyway (the negative control would pass).
echo "4096 16777216 16777216" >/proc/sys/net/ipv4/tcp_rmem
PAD=$(i=0; while [ $i -lt 60 ]; do printf 'v4j-mig-%02d-abcdefghij/' $i; i=$((i + 1)); done)
line() { printf '%06d %s\n' "$1" "$PAD"; }
sleep 86400 | nc -l -p 9000 >/tmp/stream.out 2>/tmp/stream.err &
reader=$!
i=0
until netstat -ltn | grep -q ':9000 '; do i=$((i + 1)); [ $i -le 200 ] || die "no listener on 9000"; sleep 0.05; done
kill -STOP $reader
writer() {
  i=0
  while [ ! -e /tmp/stop ]; do line $i; i=$((i + 1)); echo $i >/tmp/lines; echo "V4J-L $i" >&2; sleep 0.05; done
}
echo 0 >/tmp/lines
writer | nc "$PEER_IP" 9000 &
s=/sys/class/net/eth0/statistics
pinger() {
  r=0 sent=0 got=0 dup=0
  while [ ! -e /tmp/stop ]; do
    # -W: how long ping waits for the round's last replies (the move's downtime is well under a second)
    ping -q -c 25 -i "$PING_INTERVAL" -W 5 "$PEER_IP" >/tmp/ping.out 2>&1
    l=$(grep 'packets transmitted' /tmp/ping.out)
    t=$(echo "$l" | sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p')
    g=$(echo "$l" | sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
    d=$(echo "$l" | sed -n 's/.* \([0-9]*\) duplicates.*/\1/p')
    sent=$((sent + ${t:-0})) got=$((got + ${g:-0})) dup=$((dup + ${d:-0})) r=$((r + 1))
    echo "V4J-TICK $r sent=$sent got=$got dup=$dup tx=$(cat $s/tx_packets) rx=$(cat $s/rx_packets) lines=$(cat /tmp/lines)"
  done
  echo "V4J-PINGS sent=$sent received=$got dup=$dup rounds=$r"
}
counters pre
say "working uptime=$(cut -d' ' -f1 /proc/uptime)"
pinger
say "stopped uptime=$(cut -d' ' -f1 /proc/uptime)"
# the reader goes on: it reads everything, from the receive buffers as they arrived on the destination
sleep 0.5
n=$(cat /tmp/lines)
want=$((n * (${#PAD} + 8)))
kill -CONT $reader
i=0
while [ "$(stat -c %s /tmp/stream.out)" -lt "$want" ]; do i=$((i + 1)); [ $i -le 300 ] || break; sleep 0.1; done
i=0
while [ $i -lt "$n" ]; do line $i; i=$((i + 1)); done >/tmp/expect
# bad: lines (records of a fixed size, whatever the bytes read hold) with a byte that differs, or missing
got=$(stat -c %s /tmp/stream.out)
bad=$({ cmp -l /tmp/expect /tmp/stream.out 2>/dev/null || true; } | awk -v r=$((${#PAD} + 8)) '{ print int(($1 - 1) / r) }' | uniq | wc -l)
[ "$got" -ge "$want" ] || bad=$((bad + n - got / (${#PAD} + 8)))
cmp -s /tmp/expect /tmp/stream.out && c=ok || c=FAIL
echo "V4J-STREAM lines=$n bytes=$got/$want bad=$bad cmp=$c"
EOF
  peers_guest_net_end
  } >"$work/init"
  "$PEERS_DIR/install.sh" initramfs "$work/init" "$work/initramfs.cpio"
}

net_qemu_device() {   # $1: src|dst; appends the NIC and the second serial port to the array qemu
  local d="virtio-net-pci,netdev=n0,vectors=0,mac=$guest_mac" ctl=null   # vectors=0: QEMU 7.2 TCG + MSI-X segfaults
  [ "$packed" = 1 ] && d+=",packed=on"
  [ "$1" = dst ] && ctl="pipe:$work/ctl/serial"
  qemu+=(-chardev "socket,id=c1,path=$work/$1.sock" -netdev vhost-user,id=n0,chardev=c1 -device "$d" -serial "$ctl")
}

last_line() { { grep -a '^V4J-L ' "$1" || true; } | tail -n 1 | tr -d '\r' | cut -d' ' -f2; }
net_before() { at_start=$(last_line "$work/console.src.log"); }

net_stop_guest() {   # the first ping round that ends on the destination, a whole one after it, then the stop line
  local r
  peers_wait_line '^V4J-TICK ' "$work/console.dst.log" "$timeout" "$dst_qemu" || fail_tail "no ping round ended on the destination"
  r=$(grep -a '^V4J-TICK ' "$work/console.dst.log" | head -n 1 | cut -d' ' -f2)
  peers_wait_line "^V4J-TICK $((r + 1)) " "$work/console.dst.log" "$timeout" "$dst_qemu" ||
    fail_tail "the guest did not ping on the destination"
  peers_log "stopping the guest after ping round $((r + 1))"
  # opened read-write: a FIFO opened for writing alone would block for ever if QEMU had just died
  local fd
  exec {fd}<>"$work/ctl/serial.in"
  printf 'stop\n' >&"$fd"
  exec {fd}>&-
}

net_result() {
  local dcon=$work/console.dst.log fin pings gtx grx srx stx sdr drx dtx ddr tx=FAIL rx=FAIL dropped=FAIL dst=FAIL
  local ping=FAIL stream=FAIL sv features gpacked first last dst_rounds dst_rx during verdict=ok
  echo "BACKEND src $src_line"
  echo "BACKEND dst $dst_line"
  fin=$(grep -a '^V4J-COUNTERS final' "$dcon" | tail -n 1 | tr -d '\r')
  pings=$(grep -a '^V4J-PINGS' "$dcon" | tail -n 1 | tr -d '\r')
  sv=$(grep -a '^V4J-STREAM' "$dcon" | tail -n 1 | tr -d '\r')
  [ -n "$fin" ] && [ -n "$pings" ] && [ -n "$sv" ] || dst_console=FAIL
  gtx=$(peers_field tx_packets "$fin") grx=$(peers_field rx_packets "$fin")
  srx=$(peers_field RX-packets "$src_line") stx=$(peers_field TX-packets "$src_line") sdr=$(peers_field RX-dropped "$src_line")
  drx=$(peers_field RX-packets "$dst_line") dtx=$(peers_field TX-packets "$dst_line") ddr=$(peers_field RX-dropped "$dst_line")
  # the guest's progress lines on the destination: the first one printed there and the last
  first=$(grep -a '^V4J-TICK ' "$dcon" | head -n 1 | tr -d '\r')
  last=$(grep -a '^V4J-TICK ' "$dcon" | tail -n 1 | tr -d '\r')
  dst_rounds=$({ grep -ac '^V4J-TICK ' "$dcon" || true; })
  dst_rx=$(( ${grx:-0} - $(peers_field rx "${first:-rx=0}") ))
  # stream lines written while the migration ran: from the last one the source's console showed when it started to the
  # first one the destination's shows (the writer's progress lines)
  during=$(( $({ grep -a '^V4J-L ' "$dcon" || true; } | head -n 1 | tr -d '\r' | cut -d' ' -f2) - ${at_start:-0} ))
  if [ -n "$gtx" ] && [ -n "$srx" ] && [ -n "$drx" ] && [ -n "$sdr" ] && [ -n "$ddr" ]; then
    [ "$gtx" = $((srx + drx)) ] && tx=ok
    [ "$grx" = $((stx + dtx)) ] && rx=ok
    [ $((srx + drx)) = $((stx + dtx + sdr + ddr)) ] && dropped=ok
    # the destination's back-end took and returned frames, and the guest received some after its first round there
    [ "$drx" -gt 0 ] && [ "$dtx" -gt 0 ] && [ "$dst_rounds" -ge 2 ] &&
      [ "$(peers_field rx "$last")" -gt "$(peers_field rx "$first")" ] && dst=ok
  fi
  [ -n "$pings" ] && [ "$(peers_field sent "$pings")" -gt 0 ] &&
    [ "$(peers_field sent "$pings")" = "$(peers_field received "$pings")" ] && [ "$(peers_field dup "$pings")" = 0 ] && ping=ok
  [ -n "$sv" ] && [ "$(peers_field lines "$sv")" -gt 0 ] && [ "$(peers_field bad "$sv")" = 0 ] &&
    [ "$(peers_field cmp "$sv")" = ok ] && stream=ok
  echo "GUEST tx_packets=${gtx:-?} rx_packets=${grx:-?} ping_sent=$(peers_field sent "$pings") ping_received=$(peers_field received "$pings") ping_dup=$(peers_field dup "$pings") rounds=$(peers_field rounds "$pings") dst_rounds=$dst_rounds dst_rx=$dst_rx stream_lines=$(peers_field lines "$sv") stream_bytes=$(peers_field bytes "$sv") during=$during stream_bad=$(peers_field bad "$sv") total_s=$(peers_elapsed "$t_start")"
  features=$(sed -n 's/^V4J-DEVICE features=\([01]*\).*/\1/p' "$work/console.src.log")
  gpacked=$([ "${features:34:1}" = 1 ] && echo 1 || echo 0)
  [ "$gpacked" = "$packed" ] || verdict=FAIL
  [ "$status" = completed ] && [ "$tx" = ok ] && [ "$rx" = ok ] && [ "$dropped" = ok ] && [ "$dst" = ok ] &&
    [ "$ping" = ok ] && [ "$stream" = ok ] && [ "$dst_console" = ok ] && [ "$qrc" = 0 ] || verdict=FAIL
  echo "CHECK $verdict migrate=$status tx=$tx rx=$rx dropped=$dropped dst=$dst ping=$ping stream=$stream dst_console=$dst_console qemu_rc=$qrc packed=$gpacked/$packed"
  [ "$verdict" = ok ]
}

# ============================================================================================== both
"${device}_prepare"

peers_backend_start "${src_backend_cmd//\{img\}/$img}" "$work/src.sock" "" "$work/backend.src"
src_backend=$BACKEND_PID src_out=$BACKEND_OUT
peers_backend_start "${backend_cmd//\{img\}/$img}" "$work/dst.sock" "" "$work/backend.dst"
dst_backend=$BACKEND_PID dst_out=$BACKEND_OUT

qemu_args() {   # $1: src|dst; sets the array qemu
  peers_qemu tcg 1 256 "$work/initramfs.cpio" "$work/console.$1.log" quiet loglevel=1 init_on_alloc=0
  qemu=("${PEERS_QEMU[@]}" -qmp "unix:$work/qmp.$1,server=on,wait=off")
  "${device}_qemu_device" "$1"
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

fail_tail() { tail -n 30 "$work/console.src.log" "$work/console.dst.log" "$work/qemu.src.log" "$work/qemu.dst.log" \
  "$work/backend.src.err" "$work/backend.dst.err" >&2 || true; peers_die "$*"; }
peers_wait_line '^V4J: working' "$work/console.src.log" "$timeout" "$src_qemu" || fail_tail "the guest did not start working"
for t in $(seq 100); do [ -S "$work/qmp.dst" ] && [ -S "$work/mig.sock" ] && break; sleep 0.1; done
[ -S "$work/mig.sock" ] || fail_tail "the destination does not listen on $work/mig.sock"
sleep 1   # let the guest get going: work before the migration is fine, the work during it is the test

"${device}_before"
peers_log "migrating"
status=none
mig=$(peers_migrate "$work/qmp.src" "unix:$work/mig.sock" "$bandwidth" "$timeout") || true
status=$(peers_field status "$mig")
echo "MIGRATE $mig"
peers_log "migration: $mig"
[ "$status" = completed ] || fail_tail "migration $status"
# the source stays paused (postmigrate): quit it, and its back-end
peers_qmp "$work/qmp.src" '{"execute":"quit"}' >/dev/null 2>&1 || true
peers_wait_gone "$src_qemu" 20 || kill -KILL -- "-$src_qemu" 2>/dev/null || true
src_line=$(peers_backend_stop "$src_backend" "$src_out")
# the guest goes on on the destination a while, then the host stops it
"${device}_stop_guest"
peers_wait_gone "$dst_qemu" "$timeout" || fail_tail "the guest did not power off on the destination"
qrc=0
wait "$dst_qemu" || qrc=$?
dst_line=$(peers_backend_stop "$dst_backend" "$dst_out")

dst_console=FAIL
grep -q '^V4J: done' "$work/console.dst.log" && dst_console=ok
"${device}_result" || exit 1
