#!/bin/bash
# qemu-lockstep.sh: print "PATH DATADIR" of the qemu with abtlab's lock-step clock
# (`-icount shift=0,sleep=off,lockstep=Q,mhz=F`: every vCPU runs at F MHz whatever the
# others do; qemu-lockstep.patch says how). Built from Debian's source of the qemu that
# qemu.sh runs (bookworm-backports: its orig tarball, checked against apt's SHA256) with
# the patch, once per patch + version + compiler, into $ABTLAB_QEMU_LOCKSTEP_CACHE
# (default /var/cache/abtlab/qemu-lockstep/<key>); DATADIR is qemu.sh's (the firmware).
# Build needs: libglib2.0-dev libpixman-1-dev libfdt-dev flex bison pkg-config (Debian),
# meson ninja pycotap (PyPI, in a venv of the build's own). ~2-4 min on 2 cores.
# --check: print it when built, else exit 3 and build nothing.
# Exit 3 with the reason when it cannot be had here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${ABTLAB_QEMU_LOCKSTEP_CACHE:-/var/cache/abtlab/qemu-lockstep}
fail() { echo "qemu-lockstep: $1" >&2; exit 3; }
read -r base data < <("$here/qemu.sh") || fail "no qemu (qemu.sh)"
version=$("$base" --version | sed -n 's/^QEMU emulator version \([0-9.]*\).*/\1/p')
[ -n "$version" ] || fail "cannot read the version of $base"
key=$( (cat "$here/qemu-lockstep.patch" "$here/qemu-lockstep.sh"; echo "$version"; gcc --version | head -n1) |
    sha256sum | cut -c1-16)
bin=$cache/$key/qemu-system-x86_64
if [ -x "$bin" ]; then echo "$bin ${data:-}"; exit 0; fi
[ "${1:-}" = --check ] && fail "not built yet ($bin): run native/kernel/qemu-lockstep.sh as root"
[ "$(id -u)" = 0 ] || fail "not root: cannot build it into $cache"
"$here/debs.sh" build-essential libglib2.0-dev libpixman-1-dev libfdt-dev flex bison pkg-config \
    || fail "its Debian build packages cannot be installed"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 1800 9 || fail "$cache/.lock held for 30 min"
if [ -x "$bin" ]; then echo "$bin ${data:-}"; exit 0; fi
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$cache/build-$key.log
{
    # Debian's source of the same version, from the registry qemu.sh takes the binary from
    echo "deb-src http://deb.debian.org/debian bookworm-backports main" > "$work/src.list"
    opts=(-o "Dir::Etc::SourceList=$work/src.list" -o "Dir::Etc::SourceParts=-"
          -o "Dir::State::Lists=$work/lists" -o "APT::Get::List-Cleanup=0" -qq)
    mkdir -p "$work/lists/partial"
    apt-get "${opts[@]}" update || exit 1
    line=$(apt-get "${opts[@]}" source --print-uris qemu | grep "qemu_${version}+ds.orig.tar.xz") || exit 1
    url=$(echo "$line" | cut -d"'" -f2); sum=$(echo "$line" | sed 's/.*SHA256://')
    (cd "$work" && apt-get "${opts[@]}" source --download-only qemu) || true  # the orig is enough
    echo "$sum  $work/qemu_${version}+ds.orig.tar.xz" | sha256sum -c - || exit 1
    tar -xf "$work/qemu_${version}+ds.orig.tar.xz" -C "$work"
    src=$work/qemu-$version
    patch -d "$src" -p1 < "$here/qemu-lockstep.patch" || exit 1
    # the +ds tarball drops the edk2 firmware blobs: do not unpack them
    sed -i "s/    unpack_edk2_blobs = bzip2.found()$/    unpack_edk2_blobs = false/" "$src/meson.build"
    python3 -m venv "$work/venv" && "$work/venv/bin/pip" install -q meson ninja pycotap || exit 1
    mkdir -p "$src/build" && cd "$src/build" || exit 1
    PATH=$work/venv/bin:$PATH ../configure --target-list=x86_64-softmmu --without-default-features \
        --enable-tcg --enable-fdt=system --disable-install-blobs --disable-docs --disable-werror \
        --python="$work/venv/bin/python3" || exit 1
    PATH=$work/venv/bin:$PATH nice ninja -j"${ABTLAB_KERNEL_JOBS:-2}" qemu-system-x86_64 || exit 1
    mkdir -p "$cache/$key" && cp qemu-system-x86_64 "$bin.tmp" && mv "$bin.tmp" "$bin"
    echo "built $bin from $url"
} >"$log" 2>&1 || { tail -n 15 "$log" >&2; fail "build failed (log: $log)"; }
echo "$bin ${data:-}"
