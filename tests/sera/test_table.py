"""Ge et al. (CCGrid 2012) Table III choice and Table II lookups; table files: round trip and bad rows."""
from __future__ import annotations

from pathlib import Path

import pytest

import abtlab.sera as sera
from abtlab.errors import ConfigError

REF = Path(__file__).resolve().parents[2] / "data" / "reference"


def test_table3_type2_2mb_takes_min_edp_1_3ghz():
    prof = sera.load_profile(REF / "sera_profile_example.csv")["2MB access"]
    assert sera.target_frequency(prof) == (1.3, "II")
    # EDP = P * t^2: 1.3 GHz (152 W, 16.4 ms) beats 0.8 and 2.5 GHz
    edp = {p.freq_ghz: p.edp for p in prof.points}
    assert edp[1.3] < edp[0.8] < edp[2.5]


def test_table3_type1_keeps_highest_though_edp_is_lower_at_1_3():
    prof = sera.load_profile(REF / "sera_profile_example.csv")[
        "collective noncontiguous blocking read, 1KB"]
    assert sera.access_type(prof) == prof.given_type == "I"
    assert sera.target_frequency(prof) == (2.5, "I")
    # without the type I rule the min-EDP frequency would be 1.3 GHz
    assert sera.target_frequency(prof, threshold_s=1e-6) == (1.3, "II")


@pytest.mark.parametrize("args, want", [
    (("read", "1MB"), 1.8), (("read", "1536KB"), 1.8), (("read", "2MB"), 1.8),
    (("read", "100MB", "noncontiguous", "yes"), 1.3),
    (("read", "128GB", "strided", "yes", "yes"), 1.3),
    (("write", "2MB", "contiguous", "no", "no"), 2.5),
    (("read", "3MB"), 2.5),                     # size outside every range -> highest
    (("read", "100MB", "noncontiguous", "no"), 2.5),   # individual: no entry -> highest
    (("write", "1MB"), 2.5),                    # blocking write: no entry -> highest
])
def test_table2_lookups(args, want):
    table = sera.load(REF / "sera_target_table_example.csv")
    assert sera.lookup(table, sera.IOPattern.make(*args)) == want


def test_table2_matching_entry_is_returned():
    table = sera.load(REF / "sera_target_table_example.csv")
    f, entry = table.lookup(sera.IOPattern.make("read", "64MB", "noncontig", True))
    assert f == 1.3 and entry.size_max == 128 << 30
    assert table.lookup(sera.IOPattern.make("seek", 0)) == (2.5, None)


def test_round_trip(tmp_path):
    table = sera.load(REF / "sera_target_table_example.csv")
    path = sera.save(table, tmp_path / "t.csv", header_lines=["edited by hand is fine"])
    again = sera.load(path)
    assert again.entries == table.entries
    assert again.frequencies_ghz == (0.8, 1.3, 1.8, 2.5)
    assert "1MB" in path.read_text() and "edited by hand" in path.read_text()


def test_build_from_profiles_sets_ranges_and_types():
    def prof(size, times, label):
        pts = [sera.ProfilePoint(f, t, 100 + 30 * f) for f, t in zip((0.8, 1.3, 2.5), times)]
        return sera.Profile(label, pts, "simulated", "modelled", sera.IOPattern("write", size))
    small = prof(4096, (2e-4, 1.5e-4, 1e-4), "small")          # type I -> 2.5
    big = prof(1 << 20, (0.020, 0.0185, 0.018), "big")          # type II, min EDP
    t = sera.build([small, big], (0.8, 1.3, 2.5))
    best = min(big.points, key=lambda p: p.edp).freq_ghz
    assert [(e.size_min, e.size_max, e.freq_ghz) for e in t.entries] == \
        [(4096, (1 << 20) - 1, 2.5), (1 << 20, 1 << 20, best)]
    assert sera.lookup(t, sera.IOPattern("write", 2 << 20)) == 2.5   # above: not in table


BAD = [
    ("read,contiguous,no,yes,1MB,2MB,1.7", "target_freq_ghz"),
    ("read,contiguous,no,yes,2MB,1MB,1.8", "size_max"),
    ("read,contiguous,no,yes,1QB,2MB,1.8", "size_min"),
    ("read,contiguous,maybe,yes,1MB,2MB,1.8", "collective"),
    ("read,sideways,no,yes,1MB,2MB,1.8", "locality"),
    ("delete,contiguous,no,yes,1MB,2MB,1.8", "op_type"),
    ("read,contiguous,no,yes,1MB,2MB,fast", "target_freq_ghz"),
]


@pytest.mark.parametrize("row, field", BAD)
def test_bad_rows_name_line_and_field(tmp_path, row, field):
    p = tmp_path / "t.csv"
    p.write_text("# frequencies_ghz: 0.8,1.3,1.8,2.5\n" + ",".join(sera.table.COLUMNS) +
                 "\nwrite,contiguous,no,yes,1MB,2MB,1.3\n" + row + "\n")
    with pytest.raises(ConfigError) as err:
        sera.load(p)
    assert err.value.field == f"{p}:4:{field}"


def test_overlap_and_missing_frequencies(tmp_path):
    p = tmp_path / "t.csv"
    body = ",".join(sera.table.COLUMNS) + "\nread,contiguous,no,yes,1MB,2MB,1.3\n" \
        "read,contig,no,yes,2MB,4MB,0.8\n"
    p.write_text(body)
    with pytest.raises(ConfigError, match="frequencies_ghz"):
        sera.load(p)
    with pytest.raises(ConfigError) as err:
        sera.load(p, frequencies_ghz=[0.8, 1.3])
    assert err.value.field == f"{p}:3:size_min"
    p.write_text("op_type,size_min\nread,1MB\n")
    with pytest.raises(ConfigError, match="header"):
        sera.load(p, frequencies_ghz=[1.0])


def test_patterns_parse_and_reject():
    assert sera.parse_size("2MB") == 2 << 20 and sera.format_size(3 << 30) == "3GB"
    assert sera.posix_pattern("pwrite", 4096) == sera.IOPattern("write", 4096)
    with pytest.raises(ConfigError) as err:
        sera.IOPattern.make("read", "2MB", blocking="perhaps")
    assert err.value.field == "blocking"
    with pytest.raises(ConfigError):
        sera.posix_pattern("ioctl")
