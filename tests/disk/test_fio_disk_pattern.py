"""fio's IOzone pattern as a disk benchmark (benchmarks/disk_machines.py, docs/device.md):
-o direct, rw and fsync_every reach fio's command line, bad values are refused by name."""
from __future__ import annotations

import pytest

from abtlab.backends.fio import fio_argv, pattern_options
from abtlab.errors import ConfigError

POINT = {"threads": 1, "file_size": 1 << 20, "record_size": 4096}


def test_the_default_pattern_is_unchanged_and_options_add_fio_flags():
    plain = fio_argv("fio", POINT, ".")
    assert "--rw=write" in plain and not any(a.startswith(("--direct=", "--fsync=")) for a in plain)
    argv = fio_argv("fio", POINT, ".", pattern=pattern_options(
        {"direct": True, "rw": "randwrite", "fsync_every": 32}))
    assert {"--direct=1", "--rw=randwrite", "--fsync=32", "--randrepeat=1"} <= set(argv)
    assert "--rw=write" not in argv


@pytest.mark.parametrize("option, value", [("direct", "1"), ("rw", "read"),
                                           ("fsync_every", "-1"), ("fsync_every", True)])
def test_bad_pattern_options_name_the_option(option, value):
    with pytest.raises(ConfigError) as err:
        pattern_options({option: value})
    assert err.value.field == option
