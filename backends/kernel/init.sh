#!/bin/busybox sh
# /init of the abtlab guest: runs a batch of measurement points, each on a fresh ext4 made
# inside the guest on a fresh null_blk disk (latency on a guest timer), with the jbd2/ext4
# tracepoints on the CLOCK_MONOTONIC of the op records. /abt/batch.env (written by
# abtlab.machines.guest) sets NPOINTS, TRACE_KB and TRACE_EVENTS; /abt/pN.env sets point N's
# disk, mkfs arguments, mount options, kernel writes and its run_workload function.
# Each point's results (/out/pN) leave as a base64 tar on the second serial port (ttyS1)
# as soon as the point ends; slot 0 (dmesg) comes last, then the guest powers off. The
# guest has no disk on the host: a serial write is synchronous in qemu, whereas a virtio
# disk's completions arrive whenever the host finishes them, which made runs under the
# virtual clock differ by a few instructions. A failing point records where it failed
# and the batch goes on. Linux 3.4.2 (docs/kernel-3.4.2.md) runs the same script: where the
# kernel lacks null_blk's configfs, the disk is brd in request mode (k342/07-brd-rq-mode.patch,
# booted with brd.rq_mode=1), and its tracing lives in debugfs (no tracefs before 4.1).
export PATH=/bin:/sbin:/abt
mkdir -p /proc /sys /dev /tmp /mnt /out
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null
T=/sys/kernel/tracing
[ -e $T/trace ] || T=/sys/kernel/debug/tracing
ln -sf $T/tracing_on /tmp/trace-go
NB=/sys/kernel/config/nullb
BRD=/sys/module/brd/parameters
. /abt/batch.env

fail() { echo "$1" > "$O/status"; return 1; }

if [ -d "$NB" ]; then
disk_up() {   # DISK_ATTRS: "name=value ..." for the null_blk configfs device
    mkdir "$NB/nullb$1" || return 1
    for kv in $DISK_ATTRS; do
        echo "${kv#*=}" > "$NB/nullb$1/${kv%%=*}" || { echo "nullb ${kv%%=*}" > "$O/where"; return 1; }
    done
    echo 1 > "$NB/nullb$1/power" || return 1
    DEV=/dev/nullb$1
    [ -b "$DEV" ]
}

disk_down() {
    umount /mnt 2>/dev/null
    [ -d "$NB/nullb$1" ] && { echo 0 > "$NB/nullb$1/power"; rmdir "$NB/nullb$1"; }
}
else
disk_up() {   # DISK_ATTRS: "name=value ..." for brd's parameters; one RAM disk for every
              # point, emptied first: --flushbufs frees its pages, which then read as zeros
    DEV=/dev/ram0
    [ "$(cat $BRD/rq_mode 2>/dev/null)" = Y ] || { echo "brd rq_mode" > "$O/where"; return 1; }
    blockdev --flushbufs $DEV || return 1
    for kv in $DISK_ATTRS; do
        echo "${kv#*=}" > "$BRD/${kv%%=*}" || { echo "brd ${kv%%=*}" > "$O/where"; return 1; }
    done
    cat /sys/block/ram0/queue/max_sectors_kb > "$O/max_sectors_kb"
}

disk_down() {
    umount /mnt 2>/dev/null
    blockdev --flushbufs /dev/ram0
}
fi

trace_on() {   # the global buffer: nobody else traces in the guest. The clock before the
               # reset: 3.4 keeps the buffer when the clock changes and hides events
               # older than the reset's time, read on the clock then in force
    echo 0 > $T/tracing_on; echo mono > $T/trace_clock
    echo > $T/trace; echo "$TRACE_KB" > $T/buffer_size_kb
    mm=$(cat /sys/block/${DEV#/dev/}/dev); devt=$(( (${mm%%:*} << 20) | ${mm#*:} ))
    for ev in $TRACE_EVENTS; do
        [ -d $T/events/$ev ] || { echo "$ev" >> "$O/trace.missing"; continue; }
        case $ev in   # scheduler events have no device: the workload's threads by name
        sched/*) [ -n "$SLEEP_COMM" ] || continue
                 f="prev_comm == \"$SLEEP_COMM\" || next_comm == \"$SLEEP_COMM\"" ;;
        *) f="dev == $devt" ;;
        esac
        echo "$f" > $T/events/$ev/filter && echo 1 > $T/events/$ev/enable || return 1
    done
    stacks_on || return 1
    # TRACE_AT_GO: the workload turns tracing on at its go (abt-iozone --go-file
    # /tmp/trace-go): IOzone's polling start, a switch per poll, is left out
    [ -n "$TRACE_AT_GO" ] || echo 1 > $T/tracing_on
}

SW=$T/events/sched/sched_switch
stacks_on() {   # where a workload thread slept: its kernel stack at every switch-out
    [ -n "$SLEEP_COMM" ] && [ "$(cat $SW/enable 2>/dev/null)" = 1 ] || return 0
    if [ -e $SW/trigger ]; then
        echo "stacktrace if prev_comm == \"$SLEEP_COMM\"" > $SW/trigger
    else   # 3.4 has no triggers: a stack after every enabled event
        echo 1 > $T/options/stacktrace
    fi
}

stacks_off() {
    [ -e $SW/trigger ] && echo '!stacktrace' > $SW/trigger 2>/dev/null
    [ -e $SW/trigger ] || echo 0 > $T/options/stacktrace 2>/dev/null
    return 0
}

trace_off() {
    echo 0 > $T/tracing_on
    cat $T/trace > "$O/trace"
    cat $T/per_cpu/cpu*/stats | grep -E '^(overrun|dropped events):' > "$O/trace.stats"
    stacks_off
    for ev in $TRACE_EVENTS; do [ -d $T/events/$ev ] && echo 0 > $T/events/$ev/enable; done
}

knobs() {   # KNOBS: "path=value ..." written in order, then read back; a switch that is
            # off ("0") and absent from this kernel is stock behaviour, recorded as absent
    for kv in $KNOBS; do
        [ ! -e "${kv%%=*}" ] && [ "${kv#*=}" = 0 ] && continue
        echo "${kv#*=}" > "${kv%%=*}" || { echo "knob ${kv%%=*}" > "$O/where"; return 1; }
    done
    for kv in $KNOBS; do
        if [ -e "${kv%%=*}" ]; then echo "${kv%%=*} $(cat "${kv%%=*}")"; else echo "${kv%%=*} absent"; fi
    done > "$O/knobs"
}

snap() {   # snap PREFIX: the CPUs' time split, interrupts and the scheduler's view
    cat /proc/stat > "$1.stat"; cat /proc/interrupts > "$1.interrupts"
    cat /proc/softirqs > "$1.softirqs" 2>/dev/null
    cat /proc/sched_debug > "$1.sched" 2>/dev/null || cat /sys/kernel/debug/sched/debug > "$1.sched" 2>/dev/null
}

stalled() {   # the workload outlived DEADLINE_US (us of the guest's clock): every task's state and
              # CPU time and the trace as they were then, and the workload killed
    echo "$DEADLINE_US" > "$1/stalled"
    echo 0 > $T/tracing_on
    snap "$1/stall"
    for t in /proc/[0-9]*/task/[0-9]*; do
        echo "$(cat $t/stat 2>/dev/null) wchan=$(cat $t/wchan 2>/dev/null)"
    done > "$1/stall.tasks"
    killall -9 "$SLEEP_COMM" 2>/dev/null
}

run_point() {
    O=/out/p$1; mkdir -p "$O"; echo 1 > "$O/where"
    disk_up "$1" || { fail "disk"; return; }
    echo "$DEV" > "$O/device"
    /sbin/mkfs.ext4 $MKFS_ARGS "$DEV" $DISK_SIZE > "$O/mkfs.log" 2>&1 || { fail "mkfs"; return; }
    /sbin/dumpe2fs -h "$DEV" > "$O/dumpe2fs" 2>/dev/null
    mount -t ext4 -o "${MOUNT_OPTS:-defaults}" "$DEV" /mnt || { fail "mount"; return; }
    mkdir -p /mnt/data && sync
    knobs || { fail "knobs"; return; }
    jdir=$(ls -d /proc/fs/jbd2/${DEV#/dev/}-* 2>/dev/null | head -n 1)
    [ -n "$jdir" ] && cat "$jdir/info" > "$O/info.before"
    trace_on || { fail "trace"; return; }
    if [ -n "$TRACE_AT_GO" ]; then   # the clock's markers traced, then off until the go
        echo 1 > $T/tracing_on; /abt/abt-clockmark 3 > "$O/clock.before"; echo 0 > $T/tracing_on
    else
        /abt/abt-clockmark 3 > "$O/clock.before"
    fi
    if [ -n "$DEADLINE_US" ]; then  # a point that may not end: killed, and seen, at the deadline
        snap "$O/before"
        run_workload > "$O/stdout" 2> "$O/stderr" &
        wl=$!
        ( read -r me _ < /proc/self/stat; renice -n -20 -p "$me" >/dev/null 2>&1
          usleep "$DEADLINE_US"; stalled "$O" ) &
        dl=$!
        wait $wl; echo $? > "$O/rc"
        kill $dl 2>/dev/null; wait $dl 2>/dev/null
    else
        run_workload > "$O/stdout" 2> "$O/stderr"
        echo $? > "$O/rc"
    fi
    /abt/abt-clockmark 3 > "$O/clock.after"
    [ -n "$jdir" ] && cat "$jdir/info" > "$O/info.after"
    trace_off
    for kv in $KNOBS_RESET; do echo "${kv#*=}" > "${kv%%=*}"; done
    umount /mnt || { fail "umount"; return; }
    echo ok > "$O/status"
}

emit() {   # emit N DIR: slot N as a base64 gzip tar between marker lines on ttyS1
    { echo "abtlab-slot $1"; tar -czf - -C "$2" . | base64; echo "abtlab-end $1"; } > /dev/ttyS1
}

stty -F /dev/ttyS1 raw -echo 2>/dev/null
i=1
while [ "$i" -le "$NPOINTS" ]; do
    . "/abt/p$i.env"
    echo "abtlab-guest: point $i of $NPOINTS"
    run_point "$i"
    disk_down "$i"
    emit "$i" "/out/p$i"
    rm -rf "/out/p$i"
    i=$((i + 1))
done
mkdir -p /out/p0 && dmesg > /out/p0/dmesg && echo ok > /out/p0/status
emit 0 /out/p0
echo "abtlab-guest: done"
poweroff -f
