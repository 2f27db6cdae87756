#!/bin/bash
# Build Linux 3.4.2, the paper's kernel, as an x86_64 bzImage with Debian bookworm's gcc:
# the pristine import (github.com/allenzhangt/linux-3.4.2, its first commit; the later
# commits port it to an ARM board) + k342/*.patch (each says the error it fixes) +
# k342/guest.config on `make allnoconfig` (+ ../include/abt_disk.h, the drive model brd
# includes), built as build.env says. Cached under
# $ABTLAB_K342_CACHE (default /var/cache/abtlab/kernel-3.4.2) in a folder named by a hash of
# the series, config, build.env and compiler version, so each variant builds once. Prints
# the bzImage's path. Not part of `make` or the tests (docs/kernel-3.4.2.md).
# The source: $ABTLAB_K342_SRC (default /var/cache/abtlab/linux-3.4.2), a directory with
# the import's tree, or else made from a git directory of the import ($ABTLAB_K342_GIT).
# CC: $ABTLAB_K342_CC (default gcc). Exit 3: no source, or a needed Debian package missing.
# --check: build nothing; print the cached bzImage's path if there is one, exit 3 (saying
# what to provide) when it would have to be built and there is no source to build it from.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${ABTLAB_K342_CACHE:-/var/cache/abtlab/kernel-3.4.2}
src=${ABTLAB_K342_SRC:-/var/cache/abtlab/linux-3.4.2}
cc=${ABTLAB_K342_CC:-gcc}
pristine=17754946984d63585ccc1492b77441e88493d934   # "linux-3.4.2 源码", the import
jobs=${ABTLAB_KERNEL_JOBS:-2}
series=("$here"/k342/[0-9][0-9]-*.patch)
disk_h="$here/../include/abt_disk.h"   # the drive model brd times requests with (k342/09)
key=$( (cd "$here" && cat "${series[@]}" "$disk_h" k342/guest.config build.env; "$cc" --version | head -n 1) |
    sha256sum | cut -c1-16)
. "$here/build.env"
[ -f "$cache/$key/bzImage" ] && { echo "$cache/$key/bzImage"; exit 0; }
no_source() {
    echo "build-kernel-3.4.2: no source at $src: set ABTLAB_K342_SRC to a tree of the" \
         "linux-3.4.2 import or ABTLAB_K342_GIT to a git directory of" \
         "github.com/allenzhangt/linux-3.4.2 (docs/kernel-3.4.2.md, Source)" >&2; exit 3
}
if [ "${1:-}" = --check ]; then
    [ -f "$src/Makefile" ] || [ -n "${ABTLAB_K342_GIT:-}" ] || no_source
    exit 0
fi

"$here/debs.sh" build-essential bc bison flex perl || exit 3
command -v "$cc" >/dev/null || { echo "build-kernel-3.4.2: no $cc" >&2; exit 3; }
if [ ! -f "$src/Makefile" ]; then
    [ -n "${ABTLAB_K342_GIT:-}" ] || no_source
    mkdir -p "$src.tmp" && git --git-dir="$ABTLAB_K342_GIT" archive "$pristine" | tar -x -C "$src.tmp"
    mv -T "$src.tmp" "$src"
fi
grep -qx 'SUBLEVEL = 2' "$src/Makefile" || { echo "build-kernel-3.4.2: $src is not 3.4.2" >&2; exit 3; }

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 1800 9 || { echo "build-kernel-3.4.2: $cache/.lock held for 30 min" >&2; exit 1; }
[ -f "$cache/$key/bzImage" ] && { echo "$cache/$key/bzImage"; exit 0; }
tree="$cache/tree"    # a fresh copy per variant: 3.4's tree has no clean way to unpatch
rm -rf "$tree" && cp -a "$src" "$tree" && cd "$tree"
for p in "${series[@]}"; do patch -s -p1 < "$p"; done
cp "$disk_h" drivers/block/abt_disk.h
log="$cache/build-$key.log"
ARCH=x86_64 scripts/kconfig/merge_config.sh -n "$here/k342/guest.config" >"$log" 2>&1
missing=$(grep '^CONFIG_.*=y$' "$here/k342/guest.config" | while read -r line; do
    grep -qx "$line" .config || echo "$line"; done)
[ -z "$missing" ] || { echo "build-kernel-3.4.2: config lost: $missing" >&2; exit 1; }
echo "building Linux 3.4.2 $key with $cc (log: $log)" >&2
if ! nice -n 19 make ARCH=x86_64 CC="$cc" HOSTCC="$cc" -j"$jobs" bzImage >>"$log" 2>&1; then
    grep -m 5 -E 'error|Error' "$log" >&2; exit 1
fi
mkdir -p "$cache/$key"
cp arch/x86/boot/bzImage "$cache/$key/bzImage.tmp" && cp .config "$cache/$key/config"
mv "$cache/$key/bzImage.tmp" "$cache/$key/bzImage"
echo "$cache/$key/bzImage"
