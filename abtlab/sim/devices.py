"""The simulator's devices (us), each number with its source, in one table.

`hdd7200` is the paper's disk with its write cache on: the drive model of
backends/include/abt_disk.h (Seagate Barracuda 7200.12 ST3250318AS, 8 MiB volatile
cache; docs/device.md has the datasheet sources), reduced to the simulator's terms and
fitted to that C model by `fit_cache` (tests/sim/test_devices.py checks the table
against the fit). A write completes at interface speed while it fits in the cache; the
platter writes the cache back behind; a FLUSH returns when the cache is clean, and a
commit's record then goes to the platter (FUA). `hdd7200-nocache` is the simulator's
earlier hdd7200 (every write-back pays the platter at once): ~100 MB/s media rate
(10 us/KiB), a lone data write-back a short seek plus part of a rotation (~2 ms), a
commit a seek to the journal, 4.17 ms mean rotational latency and the commit block with
a flush/FUA (~10 ms, as the paper's Fig. 8a mean waits of 18-25 ms for two commits
suggest), ~0.2 ms a file for data a commit writes. loop: this kind of VM's loop device,
~1 ms fsync. ssd-sata: ~500 MB/s, ~100 us flushes.

Fields: flush_* a data write-back (fixed + per KiB; with a cache, its interface time);
commit_* a commit without a cache (fixed, per journal block, per member file's data);
inode_write_us an inode written in place (NOJC; with a cache its command overhead);
commit_record_us the part of a commit after its log blocks (shadow_wait only; 0 =
unknown: the wait ends with the commit; with a cache it ends when the log is in the
cache); cache_kib the write cache (0: none); media_us_per_kib, destage_us_per_file,
destage_fixed_us the platter's write-back (per KiB, per extent, one positioning when it
starts from idle).
"""
from __future__ import annotations

import numpy as np

from ..system.disk_model import DiskModel

__all__ = ["DEVICES", "SOURCES", "fit_cache"]

_NO_CACHE = dict(cache_kib=0.0, media_us_per_kib=0.0, destage_us_per_file=0.0, destage_fixed_us=0.0)

DEVICES = {
    "loop": dict(flush_fixed_us=150.0, flush_us_per_kib=0.5, commit_fixed_us=800.0,
                 commit_us_per_block=4.0, commit_us_per_file=20.0, inode_write_us=150.0,
                 commit_record_us=0.0, **_NO_CACHE),
    "hdd7200": dict(flush_fixed_us=100.0, flush_us_per_kib=1024 / 300.0, commit_fixed_us=8360.0,
                    commit_us_per_block=0.0, commit_us_per_file=100.0, inode_write_us=100.0,
                    commit_record_us=0.0, cache_kib=8192.0, media_us_per_kib=1024 / 125.0,
                    destage_us_per_file=34.0, destage_fixed_us=6900.0),
    "hdd7200-nocache": dict(flush_fixed_us=2000.0, flush_us_per_kib=10.0, commit_fixed_us=10000.0,
                            commit_us_per_block=40.0, commit_us_per_file=200.0,
                            inode_write_us=6000.0, commit_record_us=0.0, **_NO_CACHE),
    "ssd-sata": dict(flush_fixed_us=60.0, flush_us_per_kib=2.0, commit_fixed_us=150.0,
                     commit_us_per_block=8.0, commit_us_per_file=10.0, inode_write_us=60.0,
                     commit_record_us=0.0, **_NO_CACHE),
}

# where hdd7200's numbers come from (abt_disk.h's profile; docs/device.md cites the datasheets)
SOURCES = {
    "flush_fixed_us": "command overhead 0.1 ms (abt_disk.h, an estimate)",
    "flush_us_per_kib": "SATA 3.0 Gb/s interface, 300 MB/s",
    "commit_fixed_us": "the FUA commit record after the flush: one turn (8.33 ms, the next "
                       "sector has just passed) + overhead; abt_disk.h gives 8.36 ms (fit_cache)",
    "commit_us_per_file": "command overhead per file a commit writes (data=ordered without delalloc)",
    "inode_write_us": "command overhead of the inode's write into the cache",
    "cache_kib": "8192 KB (hdparm -I of an ST3250318AS)",
    "media_us_per_kib": "outer-zone sustained rate 125 MB/s (Barracuda 7200.12 manual); "
                        "abtlab's scratch images sit on the outer tracks",
    "destage_us_per_file": "fitted to abt_disk.h: cache write-back of N contiguous 128 KiB "
                           "files, N = 4..64 (fit_cache)",
    "destage_fixed_us": "same fit: the write-back's start from idle (1 ms idle delay, seek, "
                        "rotational latency)",
}


def fit_cache(profile: str = "hdd7200") -> dict:
    """destage_fixed_us, destage_us_per_file and commit_fixed_us of abt_disk.h's `profile`,
    from the C model itself (abtlab.system.disk_model; needs backends/disk/libabtdisk.so):
    N contiguous 128 KiB writes (a 4 KiB gap between files, as ext4 lays out small
    files) back to back, then a FLUSH, at three start offsets; least squares of the
    flush's end on N after the media transfer. commit_fixed_us: a FUA block right after
    a flushed 12-block log."""
    media = DEVICES[profile]["media_us_per_kib"]
    rows = []
    for n in (4, 8, 16, 32, 48, 64):
        for start_mib in (10, 37, 81):
            d, t, off, first = DiskModel(profile), 0, start_mib << 20, None
            for _ in range(n):
                t = d.write(off, 128 << 10, t)
                first = first or t
                off += (128 + 4) << 10
            rows.append((n, (d.flush(t) - first) / 1e3 - n * 128 * media))
    r = np.array(rows, float)
    per_file, fixed = np.polyfit(r[:, 0], r[:, 1], 1)
    d = DiskModel(profile)
    log = d.write(200 << 20, 12 * 4096, 0)
    flushed = d.flush(log)
    record = d.write((200 << 20) + 12 * 4096, 4096, flushed, fua=True)
    return {"destage_fixed_us": float(fixed), "destage_us_per_file": float(per_file),
            "commit_fixed_us": (record - flushed) / 1e3}
