#!/bin/bash
# (Edit by writing a new file and renaming it over this one: a running build reads this
# file as it goes, and an edit in place changes what it reads next.)
# Build the guest bzImage: Debian's linux-source-6.1 + the patch series (delayjc.patch,
# legacy.patch, then nullblk-disk.patch, which includes ../include/abt_disk.h, copied
# into the tree) + guest.config, built as build.env says. Cached under $ABTLAB_KERNEL_CACHE (default
# /var/cache/abtlab/kernel) in a folder named by a hash of the series, config and build.env, so
# a machine builds each variant once. Links out/bzImage.
# Exit 3: a needed Debian package is missing and cannot be installed (reason on stderr).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${ABTLAB_KERNEL_CACHE:-/var/cache/abtlab/kernel}
# nproc alone obeys OMP_NUM_THREADS, which numerical libraries set to 1 under test runners
jobs=${ABTLAB_KERNEL_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}
series=(delayjc.patch legacy.patch nullblk-disk.patch)  # applied in this order
disk_h="$here/../include/abt_disk.h"   # the disk model null_blk times requests with
key=$(cd "$here" && cat "${series[@]}" "$disk_h" guest.config build.env | sha256sum | cut -c1-16)
. "$here/build.env"
mkdir -p "$cache" "$here/out"

# a symlink swapped in by rename, through a name of this process: two runs starting at once
# both link (a shared .tmp name raced: "mv: cannot stat")
link() { ln -sfn "$cache/$key/bzImage" "$here/out/bzImage.tmp.$$" && mv -T "$here/out/bzImage.tmp.$$" "$here/out/bzImage"; }
[ -f "$cache/$key/bzImage" ] && { link; echo "$cache/$key/bzImage"; exit 0; }

"$here/debs.sh" linux-source-6.1 build-essential bc bison flex libelf-dev libssl-dev lz4 || exit 3

exec 9>"$cache/.lock"
flock -w 1800 9 || { echo "build-kernel: $cache/.lock held for 30 min" >&2; exit 1; }
[ -f "$cache/$key/bzImage" ] && { link; echo "$cache/$key/bzImage"; exit 0; }

tree="$cache/linux-source-6.1"
if [ ! -f "$tree/Makefile" ]; then
    rm -rf "$cache/unpack" && mkdir "$cache/unpack"
    tar -C "$cache/unpack" -xJf /usr/src/linux-source-6.1.tar.xz
    rm -rf "$tree" && mv "$cache/unpack/linux-source-6.1" "$tree" && rmdir "$cache/unpack"
fi
cd "$tree"
# .abtlab-applied/NN.patch: the series applied to the tree, reverted in reverse order
# when the wanted series differs (.abtlab-patch: one applied patch, the older layout)
mkdir -p .abtlab-applied
[ -f .abtlab-patch ] && mv .abtlab-patch .abtlab-applied/01.patch
same=1
applied=(.abtlab-applied/*.patch)
[ -e "${applied[0]}" ] || applied=()
[ ${#applied[@]} -eq ${#series[@]} ] || same=0
for i in "${!applied[@]}"; do
    cmp -s "${applied[$i]}" "$here/${series[$i]}" || same=0
done
if [ $same -eq 0 ]; then
    for ((i = ${#applied[@]} - 1; i >= 0; i--)); do
        patch -s -R -p1 < "${applied[$i]}" && rm "${applied[$i]}"
    done
    for i in "${!series[@]}"; do
        patch -s -p1 --dry-run < "$here/${series[$i]}"
        patch -s -p1 < "$here/${series[$i]}"
        cp "$here/${series[$i]}" ".abtlab-applied/$(printf %02d $((i + 1))).patch"
    done
fi

cp "$disk_h" drivers/block/null_blk/abt_disk.h

log="$cache/build-$key.log"
{
    make -s tinyconfig
    scripts/kconfig/merge_config.sh -m .config "$here/guest.config" >/dev/null
    make -s olddefconfig
} >"$log" 2>&1
missing=$(grep '^CONFIG_.*=y$' "$here/guest.config" | while read -r line; do
    grep -qx "$line" .config || echo "$line"; done)
[ -z "$missing" ] || { echo "build-kernel: config lost: $missing" >&2; exit 1; }
# the built-in (empty) initramfs is generated once per tree: made again, it carries
# build.env's time like a fresh tree's does
rm -f usr/initramfs_data.cpio
echo "building guest kernel $key (log: $log)" >&2
if ! nice -n 10 make -j"$jobs" bzImage >>"$log" 2>&1; then
    tail -30 "$log" >&2; exit 1
fi
mkdir -p "$cache/$key"
cp arch/x86/boot/bzImage "$cache/$key/bzImage.tmp" && cp .config "$cache/$key/config"
mv "$cache/$key/bzImage.tmp" "$cache/$key/bzImage"
link
echo "$cache/$key/bzImage"
