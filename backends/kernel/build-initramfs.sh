#!/bin/bash
# build-initramfs.sh OUT: the guest's base initramfs (gzip'd newc cpio): busybox-static,
# /init, abtlab's C workloads linked statically (/abt/abt-*) and, for LD_PRELOAD runs,
# dynamic builds (/abt/abt-*-dyn) with libdelayjc.so, the loader and libc copied in.
# Exit 3: a needed Debian package is missing and cannot be installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
out=$1
"$here/debs.sh" busybox-static cpio build-essential e2fsprogs || exit 3
# staged beside OUT, not in TMPDIR: a build killed with SIGKILL (no trap runs) leaves
# its stage in the build directory, where the next build removes it
# (one build at a time: runs that start together both run make)
exec 9>"$(dirname "$out")/.initramfs.lock"
flock -w 600 9 || { echo "build-initramfs: $(dirname "$out")/.initramfs.lock held for 10 min" >&2; exit 1; }
stage="$(dirname "$out")/.initramfs-stage"
rm -rf "$stage"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,abt,out,lib64,proc,sys,dev,tmp,mnt}
cp /bin/busybox "$stage/bin/busybox"
for a in $("$stage/bin/busybox" --list); do
    [ "$a" = busybox ] || ln -s busybox "$stage/bin/$a"
done
install -m 755 "$here/init.sh" "$stage/init"
cflags="-O2 -std=gnu11 -Wall -pthread -I$src/include"
for p in iozone/abt-iozone metarates/abt-metarates delayjc/abt-fsyncers; do
    name=$(basename "$p")
    gcc $cflags -static -o "$stage/abt/$name" "$src/$p.c" -lm
    gcc $cflags -o "$stage/abt/$name-dyn" "$src/$p.c" -lm
done
gcc $cflags -static -o "$stage/abt/abt-clockmark" "$here/abt-clockmark.c"
# mkfs.ext4 and dumpe2fs of the host's e2fsprogs: the guest's scratch ext4 gets the
# host's geometry from the same mke2fs and mke2fs.conf
mkdir -p "$stage/etc" "$stage/sbin"
cp /sbin/mke2fs /sbin/dumpe2fs "$stage/sbin/" && ln -sf mke2fs "$stage/sbin/mkfs.ext4"
cp /etc/mke2fs.conf "$stage/etc/"
gcc $cflags -fPIC -shared -o "$stage/abt/libdelayjc.so" "$src/delayjc/libdelayjc.c" -ldl
# the loader and every library the dynamic builds and the preload need, at their paths
for f in "$stage"/abt/*-dyn "$stage/abt/libdelayjc.so" "$stage"/sbin/mke2fs "$stage"/sbin/dumpe2fs; do
    ldd "$f" | grep -o '/[^ ]*' 
done | sort -u | while read -r lib; do
    mkdir -p "$stage$(dirname "$lib")" && cp -L "$lib" "$stage$lib"
done
(cd "$stage" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) | gzip -6 > "$out.tmp"
mv "$out.tmp" "$out"
