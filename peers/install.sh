#!/usr/bin/env bash
# Usage: peers/install.sh [all|packages|hugepages [N]|kernel|initramfs INIT OUT|status]
#
# Idempotent installer for the real peers on a Debian 12 machine (run as root):
#   packages        apt-get install, only when something is missing: dpdk-dev (dpdk-testpmd and the
#                   vhost / virtio-user PMDs), qemu-system-x86 (+ qemu-system-common: QEMU and
#                   qemu-storage-daemon), busybox-static (the guest's userland). Runs apt-get update first
#                   only when it has to install.
#   hugepages [N]   make sure at least N (default $PEERS_HUGEPAGES or 512) 2 MiB hugepages are reserved
#                   (/proc/sys/vm/nr_hugepages; never lowers it) and hugetlbfs is mounted on /dev/hugepages.
#   kernel          fetch the guest kernel once: `apt-get download` the versioned
#                   linux-image-<ver>-cloud-amd64 that linux-image-cloud-amd64 depends on (or
#                   $PEERS_KERNEL_PKG), unpack vmlinuz and the virtio/pktgen/rng modules and build the busybox
#                   base tree, all under $PEERS_CACHE (default /var/cache/virtio4j-peers). A later run finds
#                   the cache and downloads nothing; it unpacks the cached package again when the module list
#                   below changed (the tree records the list it holds). Prints the kernel directory.
#   initramfs INIT OUT   write a newc cpio to OUT: the cached base tree (busybox, /lib/modules/*.ko) plus
#                   INIT as /init (a busybox sh script written by the test).
#   all             packages, hugepages, kernel (the default).
#   status          what is there.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(dpdk-dev qemu-system-x86 qemu-system-common busybox-static)
# load order matters: the cloud kernel ships no modules.dep, insmod has no dependency resolution
GUEST_MODULES=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover
  net_failover virtio_net virtio_blk virtio_rng pktgen)

need_root() { [ "$(id -u)" = 0 ] || peers_die "must run as root"; }

apt_updated=0
apt_update_once() {
  [ "$apt_updated" = 1 ] && return
  peers_log "apt-get update"
  apt-get update -qq >&2
  apt_updated=1
}

do_packages() {
  need_root
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} = 0 ]; then
    peers_log "packages present: ${PACKAGES[*]}"
    return
  fi
  apt_update_once
  peers_log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  if ! command -v dpdk-testpmd >/dev/null || ! command -v qemu-system-x86_64 >/dev/null ||
      ! command -v qemu-storage-daemon >/dev/null || [ ! -x /bin/busybox ]; then
    peers_die "install finished but a tool is missing"
  fi
}

do_hugepages() {
  need_root
  local want=${1:-${PEERS_HUGEPAGES:-512}} have
  have=$(cat /proc/sys/vm/nr_hugepages)
  if [ "$have" -lt "$want" ]; then
    echo "$want" >/proc/sys/vm/nr_hugepages
    have=$(cat /proc/sys/vm/nr_hugepages)
    [ "$have" -ge "$want" ] || peers_log "WARNING: asked for $want hugepages, the kernel gave $have"
  fi
  if ! peers_hugepages_mounted; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages
  fi
  peers_log "hugepages: total $have, free $(peers_hugepages_free), hugetlbfs mounted"
}

# Name of the versioned cloud kernel package to use.
kernel_pkg() {
  if [ -n "${PEERS_KERNEL_PKG:-}" ]; then echo "$PEERS_KERNEL_PKG"; return; fi
  if [ -L "$PEERS_CACHE/kernel/current" ] && [ -e "$PEERS_CACHE/kernel/current/.complete" ]; then
    basename "$(readlink "$PEERS_CACHE/kernel/current")"
    return
  fi
  local p
  p=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-cloud-amd64$/ { print $2; exit }')
  if [ -z "$p" ]; then
    apt_update_once
    p=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-cloud-amd64$/ { print $2; exit }')
  fi
  [ -n "$p" ] || peers_die "cannot resolve linux-image-cloud-amd64 to a versioned package"
  echo "$p"
}

# Whether the unpacked tree $1 is complete and holds exactly the modules of GUEST_MODULES.
kernel_tree_current() {
  [ -e "$1/.complete" ] && [ "$(cat "$1/base/lib/modules/order" 2>/dev/null)" = "$(printf '%s\n' "${GUEST_MODULES[@]}")" ]
}

do_kernel() {
  need_root
  [ -x /bin/busybox ] || peers_die "/bin/busybox missing: peers/install.sh packages"
  local pkg dir deb tmp m f ver lock
  pkg=$(kernel_pkg)
  dir="$PEERS_CACHE/kernel/$pkg"
  mkdir -p "$PEERS_CACHE/kernel"
  # One unpacker at a time (guest tests may run side by side and each find the tree stale); the lock is released when
  # this shell exits.
  exec {lock}>"$PEERS_CACHE/kernel/.lock"
  flock "$lock"
  if kernel_tree_current "$dir"; then
    ln -sfn "$pkg" "$PEERS_CACHE/kernel/current"
    peers_log "kernel cached: $dir"
    echo "$dir"
    return
  fi
  mkdir -p "$PEERS_CACHE/debs" "$PEERS_CACHE/kernel"
  deb=$(find "$PEERS_CACHE/debs" -maxdepth 1 -name "${pkg}_*_amd64.deb" | sort | tail -n 1)
  if [ -z "$deb" ]; then
    peers_log "downloading $pkg"
    (cd "$PEERS_CACHE/debs" && apt-get download -o APT::Sandbox::User=root "$pkg" >&2) || {
      apt_update_once
      (cd "$PEERS_CACHE/debs" && apt-get download -o APT::Sandbox::User=root "$pkg" >&2)
    }
    deb=$(find "$PEERS_CACHE/debs" -maxdepth 1 -name "${pkg}_*_amd64.deb" | sort | tail -n 1)
    [ -n "$deb" ] || peers_die "download of $pkg failed"
  fi
  tmp=$(mktemp -d /tmp/v4j-kernel.XXXXXX)
  peers_on_exit_rm "$tmp"
  dpkg-deb -x "$deb" "$tmp/x"
  rm -rf "$dir.new"
  mkdir -p "$dir.new/base/bin" "$dir.new/base/lib/modules"
  cp "$tmp"/x/boot/vmlinuz-* "$dir.new/vmlinuz"
  cp "$tmp"/x/boot/config-* "$dir.new/config" 2>/dev/null || true
  ver=$(basename "$(find "$tmp/x/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n 1)")
  for m in "${GUEST_MODULES[@]}"; do
    # a module's file may spell its name with dashes (virtio_rng is virtio-rng.ko)
    f=$(find "$tmp/x/lib/modules/$ver" \( -name "$m.ko*" -o -name "${m//_/-}.ko*" \) | head -n 1)
    [ -n "$f" ] || peers_die "module $m not in $pkg"
    case $f in
      *.ko) cp "$f" "$dir.new/base/lib/modules/$m.ko" ;;
      *.ko.xz) xz -dc "$f" >"$dir.new/base/lib/modules/$m.ko" ;;
      *.ko.zst) zstd -qdc "$f" >"$dir.new/base/lib/modules/$m.ko" ;;
      *) peers_die "unknown module format: $f" ;;
    esac
  done
  printf '%s\n' "${GUEST_MODULES[@]}" >"$dir.new/base/lib/modules/order"
  echo "$ver" >"$dir.new/release"
  cp /bin/busybox "$dir.new/base/bin/busybox"
  mkdir -p "$dir.new/base/"{dev,proc,sys,tmp,etc,root,sbin,mnt}
  # the kernel opens /dev/console before running /init: it must be in the archive
  mknod -m 600 "$dir.new/base/dev/console" c 5 1
  mknod -m 666 "$dir.new/base/dev/null" c 1 3
  touch "$dir.new/.complete"
  # swapped by two renames, so that a guest script copying the tree meanwhile sees it whole for all but an instant
  rm -rf "$dir.old"
  [ -e "$dir" ] && mv "$dir" "$dir.old"
  mv "$dir.new" "$dir"
  rm -rf "$dir.old"
  ln -sfn "$pkg" "$PEERS_CACHE/kernel/current"
  peers_log "kernel $pkg ($ver) unpacked to $dir"
  echo "$dir"
}

# initramfs INIT OUT: base tree + INIT as /init, newc cpio (uncompressed: the kernel unpacks it fastest).
do_initramfs() {
  local init=$1 out=$2 kdir stage lock
  [ -f "$init" ] || peers_die "no init script $init"
  stage=$(mktemp -d /tmp/v4j-initramfs.XXXXXX)
  peers_on_exit_rm "$stage"
  # The check and the copy under do_kernel's lock, shared: a re-unpack (exclusive) cannot move the tree aside and
  # delete it between them or under the copy. Released before do_kernel runs (it takes the lock exclusively, from
  # a subshell of ours: holding ours would deadlock it) and taken again for the copy.
  mkdir -p "$PEERS_CACHE/kernel"
  exec {lock}>>"$PEERS_CACHE/kernel/.lock"
  flock -s "$lock"
  kdir="$PEERS_CACHE/kernel/current"
  if ! kernel_tree_current "$kdir"; then
    flock -u "$lock"
    kdir=$(do_kernel)
    flock -s "$lock"
  fi
  cp -a "$kdir/base/." "$stage/"
  exec {lock}>&-
  install -m 0755 "$init" "$stage/init"
  (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | /bin/busybox cpio -o -H newc 2>/dev/null) >"$out.tmp"
  mv "$out.tmp" "$out"
}

do_status() {
  local p
  for p in "${PACKAGES[@]}"; do
    printf '%-22s %s\n' "$p" "$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || echo missing)"
  done
  printf '%-22s %s total, %s free, hugetlbfs %s\n' hugepages "$(cat /proc/sys/vm/nr_hugepages)" \
    "$(peers_hugepages_free)" "$(peers_hugepages_mounted && echo mounted || echo 'not mounted')"
  if [ -e "$PEERS_CACHE/kernel/current/.complete" ]; then
    printf '%-22s %s\n' kernel "$(readlink -f "$PEERS_CACHE/kernel/current") ($(cat "$PEERS_CACHE/kernel/current/release"))"
  else
    printf '%-22s %s\n' kernel "not cached"
  fi
}

cmd=${1:-all}
case $cmd in
  all) do_packages; do_hugepages "${2:-}"; do_kernel >/dev/null ;;
  packages) do_packages ;;
  hugepages) do_hugepages "${2:-}" ;;
  kernel) do_kernel ;;
  initramfs) [ $# = 3 ] || peers_die "usage: $0 initramfs INIT OUT"; do_initramfs "$2" "$3" ;;
  status) do_status ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2 ;;
  *) peers_die "unknown command $cmd (try --help)" ;;
esac
