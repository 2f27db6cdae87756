"""abtlab.data.published: the paper's stated numbers read from data/reference, the one
place they are written, by every part that quotes them."""
import csv

import pytest

from abtlab.about import REFERENCE_DATA
from abtlab.data import published as pub
from abtlab.present import paper_machine, paper_terms


def _raw(figure, metric):
    """The file's rows read by hand, to check the reader against."""
    with open(REFERENCE_DATA / pub.PUBLISHED, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return [r for r in rows if figure in r["figure"].split("/") and r["metric"] == metric]


def test_the_papers_iozone_cell_is_read_from_the_reference_file():
    p = pub.paper_iozone()
    slow = _raw("Fig1", "iozone_slowdown_high_vs_low_freq")
    assert len(slow) == 1 and "47% slower" in slow[0]["note"]
    assert p["ratio"] == pytest.approx(1 - float(slow[0]["value"]))     # "3.3GHz runs 47% slower"
    assert p["ratio"] == 0.53 and str(p["ratio"]) == "0.53"          # as the sentences print it
    assert (p["f_low"], p["f_high"], p["threads"]) == (1.6, 3.3, 256)
    counts = {pub.clocks(r["config"])[0]: int(r["value"])
              for r in _raw("Fig7a", "iozone_ext4_nonblocked_threads")}
    assert (p["unblocked_low"], p["unblocked_high"]) == (counts[1.6], counts[3.3]) == (240, 40)
    gain = _raw("Fig7a", "iozone_delayjc_over_ext4_speedup")
    assert p["delayjc_gain"] == float(gain[0]["value"]) == 3.65


def test_every_part_quotes_the_same_rows():
    assert paper_terms.PAPER_IOZONE == pub.paper_iozone()
    assert paper_machine.published is pub.published and paper_machine.paper_value is pub.paper_value


def _edited(tmp_path, old, new):
    text = (REFERENCE_DATA / pub.PUBLISHED).read_text()
    assert old in text
    path = tmp_path / "edited.csv"
    path.write_text(text.replace(old, new, 1))
    return pub.published(path)


def test_another_file_says_other_numbers(tmp_path):
    """The values come from the rows given, not from the code: an edited file moves them."""
    rows = _edited(tmp_path, "kernel 3.4.2\",0.47,", "kernel 3.4.2\",0.40,")
    rows = [dict(r, value="3.5") if r["metric"] == "iozone_delayjc_over_ext4_speedup"
            and r["figure"] == "Fig7a" else r for r in rows]
    p = pub.paper_iozone(rows)
    assert p["ratio"] == 0.6 and p["delayjc_gain"] == 3.5 and p["unblocked_low"] == 240


def test_a_missing_or_doubled_row_is_an_error_naming_it(tmp_path):
    rows = [r for r in pub.published() if not (r["metric"] == "iozone_ext4_nonblocked_threads"
                                               and "3.3GHz" in r["config"])]
    with pytest.raises(ValueError, match=r"0 values of iozone_ext4_nonblocked_threads in Fig7a at 3.3 GHz"):
        pub.paper_iozone(rows)
    gain = next(r for r in pub.published() if r["metric"] == "iozone_delayjc_over_ext4_speedup")
    with pytest.raises(ValueError, match=r"2 values of iozone_delayjc_over_ext4_speedup"):
        pub.paper_iozone(pub.published() + [gain])
    with pytest.raises(ValueError, match="iozone_slowdown_high_vs_low_freq"):
        pub.paper_iozone([r for r in pub.published() if "slowdown" not in r["metric"]])


def test_clocks_in_a_configuration():
    assert pub.clocks("256 threads, 128KB file, 32KB record; 3.3GHz vs 1.6GHz; SandyBridge") == [3.3, 1.6]
    assert pub.clocks("IOzone") == []
