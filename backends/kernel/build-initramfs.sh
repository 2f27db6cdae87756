#!/bin/bash
# build-initramfs.sh OUT: the guest's base initramfs (gzip'd newc cpio): busybox-static,
# /init, abtlab's C workloads linked statically (/abt/abt-*) and, for LD_PRELOAD runs,
# dynamic builds (/abt/abt-*-dyn) with libdelayjc.so, the loader and libc copied in.
# Beside OUT, fio.cpio.gz: Debian's /usr/bin/fio with the libraries the base lacks, appended
# to the base for fio points only (fio links ~80 MB of libraries: ceph, gluster, ICU data,
# which every other point's boot would unpack); removed when the host has no fio.
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
# the same bytes from any checkout: no source paths in the binaries
cflags="-O2 -std=gnu11 -Wall -pthread -I$src/include -ffile-prefix-map=$src=native"
for p in iozone/abt-iozone metarates/abt-metarates fsyncers/abt-fsyncers; do
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
copy_libs() {   # copy_libs ROOT FILE...: the loader and libraries FILEs need, at their
                # paths under ROOT, but for those the base stage has already
    local root=$1; shift
    for f in "$@"; do ldd "$f" | grep -o '/[^ ]*'; done | sort -u | while read -r lib; do
        [ -e "$stage$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
    done
}
# the loader and every library the dynamic builds and the preload need
copy_libs "$stage" "$stage"/abt/*-dyn "$stage/abt/libdelayjc.so" "$stage"/sbin/{mke2fs,dumpe2fs}
pack() {   # pack DIR OUT: the same bytes for the same files on any machine and any day
           # (sorted names, mtimes 0, inode numbers from cpio, no name or time in gzip's header)
    (cd "$1" && find . -exec touch -h -d @0 {} + && find . -print0 | LC_ALL=C sort -z |
        cpio --null -o -H newc -R 0:0 --reproducible --quiet) | gzip -n -6 > "$2"
}
fio_out="$(dirname "$out")/fio.cpio.gz"
rm -f "$fio_out.tmp"
if [ -x /usr/bin/fio ]; then
    fstage="$stage.fio"
    rm -rf "$fstage" && mkdir -p "$fstage/usr/bin"
    trap 'rm -rf "$stage" "$fstage"' EXIT
    cp /usr/bin/fio "$fstage/usr/bin/fio"
    copy_libs "$fstage" /usr/bin/fio
    pack "$fstage" "$fio_out.tmp"
else
    rm -f "$fio_out"
fi
pack "$stage" "$out.tmp"
[ ! -f "$fio_out.tmp" ] || mv "$fio_out.tmp" "$fio_out"
mv "$out.tmp" "$out"
