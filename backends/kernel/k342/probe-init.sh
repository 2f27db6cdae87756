#!/bin/busybox sh
# /init of the Linux 3.4.2 probe boot (probe-boot.sh): prints, one "k342:" line each,
# what abtlab's guest /init (../init.sh) needs and this kernel has or lacks, then runs one
# small IOzone point on each disk 3.4 offers in place of null_blk: brd (RAM disk) bare,
# brd with a request queue and DELAY_MS per request (with k342/07-brd-rq-mode.patch and
# brd.rq_mode=1), and dm-delay over brd (DELAY_MS per bio). Nothing leaves but the
# console (ttyS0).
export PATH=/bin:/sbin:/abt
mkdir -p /proc /sys /dev /tmp /mnt
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
say() { echo "k342: $*"; }
try() { if "$@" 2>/tmp/err; then say "ok: $*"; else say "FAIL: $* ($(head -c 200 /tmp/err))"; fi; }
. /abt/probe.env   # THREADS FILE_SIZE RECORD_SIZE DELAY_MS MKFS_ARGS TRACE_EVENTS [PROBE_CLOCK]

say "uname $(uname -r) cpus $(grep -c ^processor /proc/cpuinfo)"
say "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
try mount -t debugfs debugfs /sys/kernel/debug
try mount -t tracefs tracefs /sys/kernel/tracing
try mount -t configfs configfs /sys/kernel/config
T=/sys/kernel/debug/tracing
say "tracing dir $T: $(ls -d $T 2>&1)"
# the trace clock: mono where this kernel has it (k342/06-trace-clock-mono.patch), else local
CLOCK=${PROBE_CLOCK:-local}
grep -qw mono $T/trace_clock && CLOCK=${PROBE_CLOCK:-mono}
say "trace_clock: $(cat $T/trace_clock)"
try sh -c "echo mono > $T/trace_clock"
say "instances: $(ls -d $T/instances 2>&1)"
say "nullb in configfs: $(ls -d /sys/kernel/config/nullb 2>&1)"
for ev in $TRACE_EVENTS; do say "event $ev: $([ -d $T/events/$ev ] && echo present || echo absent)"; done
say "jbd2_run_stats format: $(grep -o 'print fmt: "[^"]*"' $T/events/jbd2/jbd2_run_stats/format)"
for k in sched_latency_ns sched_min_granularity_ns sched_wakeup_granularity_ns sched_tunable_scaling; do
    say "/proc/sys/kernel/$k $(cat /proc/sys/kernel/$k 2>&1)"
done
say "debugfs sched dir: $(ls -d /sys/kernel/debug/sched 2>&1)"
say "ram0 scheduler: $(cat /sys/block/ram0/queue/scheduler)"
say "dm targets: $(dmsetup targets 2>&1 | tr '\n' ' ')"

fresh() {   # a fresh disk per point, as null_blk's per-point device: BLKFLSBUF frees a RAM
            # disk's pages, which then read as zeros (mkfs skips zeroing the journal)
    blockdev --flushbufs /dev/ram0 && cmp -s -n 67108864 /dev/ram0 /dev/zero &&
        say "ram0 flushed: its first 64 MiB read as zeros"
}

point() {   # point NAME DEV: mkfs, mount, traced IOzone, report
    say "== point $1 on $2 ($(cat /sys/block/${2#/dev/}/queue/scheduler 2>&1))"
    [ "$2" = /dev/ram0 ] && fresh
    mkfs.ext4 $MKFS_ARGS "$2" > /tmp/mkfs.log 2>&1 || { say "mkfs failed: $(cat /tmp/mkfs.log)"; return; }
    say "features: $(dumpe2fs -h "$2" 2>/dev/null | sed -n 's/^Filesystem features: *//p')"
    mount -t ext4 "$2" /mnt 2>/tmp/err || { say "mount failed: $(cat /tmp/err) $(dmesg | tail -n 2)"; return; }
    mkdir -p /mnt/data && sync
    mm=$(cat /sys/block/${2#/dev/}/dev); devt=$(( (${mm%%:*} << 20) | ${mm#*:} ))
    echo 0 > $T/tracing_on; echo > $T/trace; echo "$CLOCK" > $T/trace_clock
    for ev in $TRACE_EVENTS; do
        echo "dev == $devt" > $T/events/$ev/filter && echo 1 > $T/events/$ev/enable
    done
    echo 1 > $T/tracing_on
    abt-clockmark 3 > /tmp/clock.before
    abt-iozone --dir /mnt/data --no-record --threads "$THREADS" --file-size "$FILE_SIZE" \
        --record-size "$RECORD_SIZE" --fsync > /tmp/io.out 2>&1
    say "iozone rc $? $(tr '\n' ' ' < /tmp/io.out)"
    abt-clockmark 3 > /tmp/clock.after
    echo 0 > $T/tracing_on
    for ev in $TRACE_EVENTS; do echo 0 > $T/events/$ev/enable; done
    cat /tmp/clock.before /tmp/clock.after | sed 's/^/k342: clock /'
    grep abtlab-clock $T/trace | sed 's/^/k342: marker /'
    # abtlab's clock check: each marker's time within its two CLOCK_MONOTONIC reads. 3.4
    # prints times rounded to the nearest us (ns2usecs adds 500 ns), later kernels truncate
    grep abtlab-clock $T/trace > /tmp/markers
    awk -v clock="$CLOCK" '
        FILENAME != "/tmp/markers" { lo[$1] = $2; hi[$1] = $3; next }
        { split($0, a, "tracing_mark_write: "); name = a[2]
          for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) t = $i
          sub(":", "", t); split(t, s, "."); sub(/^0+/, "", s[2])   # busybox awk: 0... is octal
          ns = s[1] * 1e9 + s[2] * 1e3
          off = ns - lo[name]; ok = (ns - 500 <= hi[name] && ns + 500 >= lo[name])
          n++; good += ok; printf "k342: offset %s %s %.0f ns\n", clock, name, off }
        END { printf "k342: clock check %s: %d of %d markers inside\n", clock, good, n }
    ' /tmp/clock.before /tmp/clock.after /tmp/markers
    say "trace lines $(grep -vc '^#' $T/trace)"
    say "cpu0 stats: $(tr '\n' ' ' < $T/per_cpu/cpu0/stats)"
    for ev in $TRACE_EVENTS; do say "count ${ev#*/} $(grep -c " ${ev#*/}:" $T/trace)"; done
    grep ' jbd2_run_stats:' $T/trace | tail -n 2 | sed 's/^/k342: stats /'
    grep ' jbd2_end_commit:' $T/trace | tail -n 2 | sed 's/^/k342: end /'
    umount /mnt
}

point brd /dev/ram0
BP=/sys/module/brd/parameters
if [ "$(cat $BP/rq_mode 2>/dev/null)" = Y ]; then   # k342/07-brd-rq-mode.patch
    echo $((DELAY_MS * 1000000)) > $BP/completion_nsec
    say "brd rq_mode: completion_nsec $(cat $BP/completion_nsec)"
    point "brd rq_mode" /dev/ram0
    echo 0 > $BP/completion_nsec
fi
sectors=$(cat /sys/block/ram0/size)
fresh
if echo "0 $sectors delay /dev/ram0 0 $DELAY_MS" | dmsetup create --noudevsync slow 2>/tmp/err; then
    dev=/dev/$(ls /sys/block | grep '^dm-' | head -n 1)
    say "dm-delay $DELAY_MS ms: $(dmsetup table slow)"
    point "dm-delay" "$dev"
    dmsetup remove --noudevsync slow
else
    say "dm-delay failed: $(cat /tmp/err)"
fi
dmesg | grep -iE 'BUG|WARNING|EXT4-fs|jbd2' | sed 's/^/k342: dmesg /'
say "done"
poweroff -f
