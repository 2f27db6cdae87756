#!/bin/bash
# probe-boot.sh [CPUS] [DELAY_MS]: boot the Linux 3.4.2 bzImage (../build-kernel-3.4.2.sh)
# under the abtlab guest's qemu and clock (TCG, -icount shift=0,sleep=off, the same -rtc,
# memory and serial ports as abtlab.machines.guest.qemu_argv) with probe-init.sh as /init,
# and print the console's "k342:" lines. The initramfs is the guest's own
# (../out/initramfs.cpio.gz: busybox, mke2fs, abt-iozone) plus the host's dmsetup with its
# libraries and abt-clockmark built for 3.4's tracing directory (debugfs, no tracefs).
# Environment: THREADS, FILE_SIZE, RECORD_SIZE (the IOzone point, 16 x 1m x 128k), FEATURES
# (mkfs -O), PROBE_CLOCK (trace clock), APPEND (kernel command line, e.g. brd.rq_mode=1),
# KERNEL (a bzImage other than the build script's).
# Not part of `make` or the tests: docs/kernel-3.4.2.md reports what it printed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kdir=$(dirname "$here")
cpus=${1:-1}
delay_ms=${2:-2}
kernel=${KERNEL:-$("$kdir/build-kernel-3.4.2.sh")}
base="$kdir/out/initramfs.cpio.gz"
[ -f "$base" ] || make -s -C "$kdir" out/initramfs.cpio.gz
work=$(mktemp -d /tmp/k342-probe.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/root"
(cd "$work/root" && zcat "$base" | cpio -id --quiet)
install -m 755 "$here/probe-init.sh" "$work/root/init"
sed 's#/sys/kernel/tracing/#/sys/kernel/debug/tracing/#' "$kdir/abt-clockmark.c" |
    gcc -O2 -static -x c -o "$work/root/abt/abt-clockmark" -
cp /sbin/dmsetup "$work/root/sbin/"
ldd /sbin/dmsetup | grep -o '/[^ ]*' | while read -r lib; do
    [ -e "$work/root$lib" ] || { mkdir -p "$work/root$(dirname "$lib")" && cp -L "$lib" "$work/root$lib"; }
done
# the events abtlab.system.tracefs parses; the mkfs arguments of a guest point
# (abtlab.system.geometry: the host's defaults, a 64 MiB journal here, no UUID or hash seed)
# with the features of e2fsprogs 1.42 (2012) in place of bookworm's metadata_csum and 64bit:
# 3.4 mounts metadata_csum (RO_COMPAT 0x400) read-only only
FEATURES=${FEATURES-"-O ^metadata_csum,^64bit,uninit_bg"}
events=$(python3 -c 'import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
print(" ".join(next(ast.literal_eval(n.value) for n in tree.body
      if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "EVENTS")))' \
    "$(dirname "$(dirname "$kdir")")/abtlab/system/tracefs.py")
cat > "$work/root/abt/probe.env" <<EOF
THREADS=${THREADS:-16}
FILE_SIZE=${FILE_SIZE:-1m}
RECORD_SIZE=${RECORD_SIZE:-128k}
DELAY_MS=$delay_ms
MKFS_ARGS="${MKFS_ARGS:--q -F -T default -b 4096 -E lazy_itable_init=0,lazy_journal_init=1 -J size=64 $FEATURES}"
TRACE_EVENTS="$events"
PROBE_CLOCK=${PROBE_CLOCK:-}
EOF
# the same bytes on every boot (as build-initramfs.sh packs): under the virtual clock the
# kernel's unpacking of other bytes (file times) takes other time
(cd "$work/root" && find . -exec touch -h -d @0 {} + && find . -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc -R 0:0 --reproducible --quiet) | gzip -n -1 > "$work/initrd.gz"
read -r qemu datadir < <("$kdir/qemu.sh")
firmware=()
[ -n "${datadir:-}" ] && firmware=(-L "$datadir/qemu" -L "$datadir/seabios")
start=$(date +%s.%N)
timeout "${TIMEOUT:-1800}" "$qemu" "${firmware[@]}" -accel tcg,thread=single -icount shift=0,sleep=off \
    -smp "$cpus" -m 1024 -nodefaults -display none -no-reboot \
    -rtc base=2020-01-01T00:00:00,clock=vm -kernel "$kernel" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 panic=-1 norandmaps ramdisk_size=262144 ${APPEND:-}" \
    -serial "file:$work/console" -serial null
end=$(date +%s.%N)
grep -a '^k342:' "$work/console" || { tail -n 40 "$work/console"; exit 1; }
echo "k342: host seconds $(echo "$end - $start" | bc)"
