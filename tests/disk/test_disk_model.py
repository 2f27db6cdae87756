"""The disk model (backends/include/abt_disk.h) on a fake clock, through libabtdisk.so:
each figure against the datasheet it was built from or the model's own closed form."""
from __future__ import annotations

import random

import pytest

from abtlab.errors import ConfigError
from abtlab.system.disk_model import DiskModel

MB = 10**6


@pytest.fixture(scope="module", autouse=True)
def _built(built_native):
    return built_native


def _seek_mean(d, span_tracks):
    """Mean seek over uniformly random start and end tracks within span_tracks
    (distance k has weight 2 (S - k) / S^2, k = 0 .. S-1), summed from the curve."""
    s = span_tracks
    step = max(1, s // 4000)
    total = sum(2 * (s - k) * d.seek_ns(k) * step for k in range(0, s, step))
    return total / s**2


def test_seek_curve_meets_the_datasheet_points():
    d = DiskModel("hdd7200")
    assert d.seek_ns(1) == d["seek_t2t_ns"] == 1_000_000
    assert abs(d.seek_ns(d["tracks"]) - d["seek_full_ns"]) < 10_000
    # the average over all start/end pairs is the datasheet's 8.5 ms average seek
    assert _seek_mean(d, d["tracks"]) == pytest.approx(8.5e6, rel=0.01)
    seeks = [d.seek_ns(k) for k in range(1, d["tracks"], 997)]
    assert seeks == sorted(seeks)


@pytest.mark.parametrize("zone, rate", [("outer", 125 * MB), ("inner", 65 * MB)])
def test_sequential_write_runs_at_the_zone_rate(zone, rate):
    """One 64 MiB transfer, write cache off: positioning + 64 MiB at the zone's sustained
    rate (a turn plus a track switch per track)."""
    d = DiskModel("hdd7200-nocache")
    start = 0 if zone == "outer" else d["inner_lba"] * 512
    d.write(start, 4096, 0)                       # head on the zone
    t0 = 10**9
    n = 64 << 20
    t1 = d.write(start + (1 << 28), n, t0)
    # one positioning (< 30 ms) is under 3% of the ~0.5-1 s transfer
    assert n / ((t1 - t0) / 1e9) == pytest.approx(rate, rel=0.03)


def test_random_4k_writes_cache_off_cost_seek_plus_half_a_turn():
    """Depth 1, 4 KiB writes uniformly over 8 GiB at the outer edge, no cache: each pays
    overhead + a seek over the span + half a turn on average + the transfer."""
    d = DiskModel("hdd7200-nocache")
    span = 8 << 30
    r, t, n = random.Random(7), 0, 3000
    for _ in range(n):
        t = d.write(r.randrange(span // 4096) * 4096, 4096, t)
    iops = n / (t / 1e9)
    span_tracks = span // 512 // d["spt_outer"]
    per_op = (d["overhead_ns"] + _seek_mean(d, span_tracks) + d["rev_ns"] / 2
              + 8 * d["rev_ns"] / d["spt_outer"])
    assert iops == pytest.approx(1e9 / per_op, rel=0.05)
    assert 150 < iops < 220   # 4.5-6.5 ms an op: a short-stroked 7200 rpm disk


def test_write_cache_absorbs_random_writes_until_it_is_full():
    """Cache on: writes complete at interface speed while they fit; then each new one
    waits for a destage, which the C-LOOK order makes shorter than a random seek."""
    d = DiskModel("hdd7200")
    off = DiskModel("hdd7200-nocache")
    span, r = 8 << 30, random.Random(7)
    offsets = [r.randrange(span // 4096) * 4096 for _ in range(3000)]
    t = t_off = 0
    fast = d["overhead_ns"] + 4096 * 10**9 // d["iface_Bps"]
    first = []
    for i, o in enumerate(offsets):
        t1 = d.write(o, 4096, t)
        if i < 100:
            first.append(t1 - t)
        t = t1
        t_off = off.write(o, 4096, t_off)
    assert set(first) == {fast}   # ~0.11 ms: the interface, not the platter
    assert t < t_off              # reordered destaging beats write-through
    assert 1.1 < t_off / t < 3


def test_append_and_flush_cost_about_a_turn_each():
    """One thread appends 4 KiB and flushes, back to back: the write lands in the
    cache, the flush writes it to the sector just after the last one, which has
    passed under the head by then: nearly a full turn each (~120/s)."""
    d = DiskModel("hdd7200")
    t, n = 0, 500
    for i in range(n):
        t = d.write(i * 4096, 4096, t)
        t = d.flush(t)
    per_s = n / (t / 1e9)
    rev = d["rev_ns"]
    assert per_s == pytest.approx(1e9 / (rev + 8 * rev / d["spt_outer"]), rel=0.02)
    nocache = DiskModel("hdd7200-nocache")
    t = 0
    for i in range(n):
        t = nocache.write(i * 4096, 4096, t)
        t = nocache.flush(t)
    assert n / (t / 1e9) == pytest.approx(per_s, rel=0.05)   # the same turn, paid earlier


@pytest.mark.parametrize("n", [16, 128])
def test_flush_after_n_scattered_writes_pays_a_positioning_for_each_left(n):
    """N 4 KiB writes scattered over 8 GiB go into the cache back to back while the
    media writes back what has waited idle_ns; the flush then writes the rest in C-LOOK
    order: k x (seek over span/k + half a turn), k = what was left, after the write-back
    in progress."""
    d = DiskModel("hdd7200")
    span, r = 8 << 30, random.Random(n)
    t = 0
    for _ in range(n):
        t = d.write(r.randrange(span // 4096) * 4096, 4096, t)
    left = d["ndirty"]
    t1 = d.flush(t)
    assert d["destages"] == n and d["dirty_sectors"] == 0
    assert 0 < left <= n and (n == 16 or left < n)   # 128 writes outlast idle_ns
    gap = span // 512 // d["spt_outer"] // left
    predicted = d["overhead_ns"] + left * (d.seek_ns(gap) + d["rev_ns"] / 2)
    assert (t1 - t) == pytest.approx(predicted, rel=0.25)


def test_an_empty_flush_costs_only_the_command():
    d = DiskModel("hdd7200")
    assert d.flush(5_000) - 5_000 == d["overhead_ns"] + d["flush_ns"]


def test_idle_drive_destages_in_the_background():
    """Dirty data left alone is written back once the drive has idled idle_ns: a flush
    much later finds the cache clean."""
    d = DiskModel("hdd7200")
    for k in range(8):
        d.write(k * (1 << 26), 4096, k * 200_000)
    later = 10**9
    assert d.flush(later) - later == d["overhead_ns"] + d["flush_ns"]
    assert d["destages"] == 8


def test_fua_write_goes_to_the_media():
    d = DiskModel("hdd7200")
    t = d.write(1 << 30, 4096, 0, fua=True)
    assert t > d["rev_ns"] / 8 and d["dirty_sectors"] == 0


def test_fixed_profile_is_the_old_guest_disk():
    d = DiskModel("fixed", fixed_ns=12_670_000)
    assert d.write(0, 512 << 10, 0) == 12_670_000
    assert d.flush(12_670_000) == 2 * 12_670_000
    assert d.write(0, 4096, 10**9) == 10**9 + 12_670_000


def test_ssd_costs_an_access_and_the_transfer():
    d = DiskModel("ssd-sata")
    t = d.write(123 << 20, 1 << 20, 0)
    assert t == 60_000 + (1 << 20) * 10**9 // (520 * MB)
    assert d.flush(t) - t == 1_000_000


def test_same_requests_at_the_same_times_give_the_same_completions():
    def run():
        d, r, t, out = DiskModel("hdd7200"), random.Random(11), 0, []
        for _ in range(2000):
            kind = r.random()
            if kind < 0.1:
                t = d.flush(t)
            elif kind < 0.9:
                t = d.write(r.randrange(1 << 34), r.choice([4096, 65536, 1 << 20]), t)
            else:
                t = d.read(r.randrange(1 << 34), 4096, t)
            out.append(t)
            t += r.randrange(3_000_000)
        return out
    a, b = run(), run()
    assert a == b and len(set(a)) > 1900


def test_unknown_profile_is_a_device_error():
    with pytest.raises(ConfigError) as err:
        DiskModel("hdd5400")
    assert err.value.field == "device"


def test_streaming_through_the_cache_runs_at_the_media_rate():
    """1 MiB writes back to back, cache on: the first 8 MiB go in at interface speed,
    then the cache stays full and each write waits for room, which the media makes
    at the outer zone's sustained rate while the interface takes the next write."""
    d = DiskModel("hdd7200")
    t, marks = 0, {}
    for k in range(512):
        t = d.write(k << 20, 1 << 20, t)
        marks[k] = t
    mbps = 256 * (1 << 20) / ((marks[511] - marks[255]) / 1e9)
    assert mbps == pytest.approx(125 * MB, rel=0.03)
    assert marks[7] == 8 * (d["overhead_ns"] + (1 << 20) * 10**9 // d["iface_Bps"])
