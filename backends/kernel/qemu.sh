#!/bin/bash
# qemu.sh: print the qemu-system-x86_64 the guest runs with. The virtual clock
# (-icount) with more than one vCPU needs qemu 8 or later (7.2's icount guest hangs
# bringing up the second CPU): the system's qemu when it is that new, else Debian
# bookworm-backports' qemu unpacked into the cache (not installed: the system's qemu and
# apt sources are left alone). Prints "PATH DATADIR" (DATADIR empty for the system's).
# Exit 3 with the reason when no qemu can be had.
set -uo pipefail
cache=${ABTLAB_QEMU_CACHE:-/var/cache/abtlab/qemu}
major() { "$@" --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9]*\).*/\1/p'; }
sys=$(command -v qemu-system-x86_64 || true)
if [ -n "$sys" ] && [ "$(major "$sys")" -ge 8 ] 2>/dev/null; then echo "$sys"; exit 0; fi
bin=$cache/root/usr/bin/qemu-system-x86_64
if [ "$(major "$bin")" -ge 8 ] 2>/dev/null; then echo "$bin $cache/root/usr/share"; exit 0; fi
fallback() {  # the system's qemu (one vCPU under the virtual clock) or nothing
    echo "qemu.sh: $1" >&2
    if [ -n "$sys" ]; then echo "$sys"; exit 0; fi
    "$(dirname "$0")/debs.sh" qemu-system-x86 || exit 3
    command -v qemu-system-x86_64 && exit 0
    exit 3
}
[ "$(id -u)" = 0 ] || fallback "not root: cannot fetch qemu 8+ into $cache"
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || fallback "no backports qemu for ${VERSION_CODENAME:-this system}"
# a source list of our own for this one download; the system's apt sources are not changed
work=$(mktemp -d "$cache.XXXXXX" 2>/dev/null || { mkdir -p "$(dirname "$cache")"; mktemp -d "$cache.XXXXXX"; })
trap 'rm -rf "$work"' EXIT
echo "deb http://deb.debian.org/debian bookworm-backports main" > "$work/bpo.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/bpo.list" -o "Dir::Etc::SourceParts=-"
          -o "Dir::State::Lists=$work/lists" -o "APT::Get::List-Cleanup=0" -qq)
mkdir -p "$work/lists/partial" "$work/debs"
apt-get "${apt_opts[@]}" update >/dev/null 2>&1 || fallback "apt-get update of bookworm-backports failed"
(cd "$work/debs" && apt-get "${apt_opts[@]}" download qemu-system-x86 qemu-system-common \
    qemu-system-data seabios >/dev/null 2>&1) || fallback "downloading qemu from bookworm-backports failed"
for d in "$work"/debs/*.deb; do dpkg -x "$d" "$work/root"; done
[ "$(major "$work/root/usr/bin/qemu-system-x86_64")" -ge 8 ] 2>/dev/null \
    || fallback "the backports qemu does not run here (libraries?)"
rm -rf "$cache" && mv "$work/root" "$cache.root.tmp" && mkdir -p "$cache" && mv "$cache.root.tmp" "$cache/root"
echo "$bin $cache/root/usr/share"
