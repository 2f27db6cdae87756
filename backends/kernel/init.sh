#!/bin/busybox sh
# /init of the abtlab guest: mount the virtio ext4 disk (/dev/vda), set the delayjc
# knobs, run one measurement point (/abt/run.env, written by abtlab.system.guest),
# then write /out as a tar onto the second disk (/dev/vdb) and power off.
# Every step logs to the console; a failure still writes /out and powers off.
export PATH=/bin:/sbin:/abt
mkdir -p /proc /sys /dev /tmp /mnt /out
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
. /abt/run.env

finish() {
    echo "$1" > /out/status
    dmesg > /out/dmesg
    tar -cf /dev/vdb -C /out . && sync
    echo "abtlab-guest: done ($1)"
    poweroff -f
}

knob() { echo "$2" > "/sys/module/jbd2/parameters/$1" || finish "knob $1"; }

mount -t ext4 -o "${MOUNT_OPTS:-defaults}" /dev/vda /mnt || finish "mount"
mkdir -p /mnt/data && sync
knob delayjc_window_us "$WINDOW_US"
knob delayjc_max_resets "$MAX_RESETS"
jdir=$(ls -d /proc/fs/jbd2/vda-* | head -n 1)
cat "$jdir/info" > /out/info.before
cat /sys/module/jbd2/parameters/delayjc_window_us > /out/window_us
run_workload > /out/stdout 2> /out/stderr
echo $? > /out/rc
cat "$jdir/info" > /out/info.after
knob delayjc_window_us 0
umount /mnt || finish "umount"
finish ok
