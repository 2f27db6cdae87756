"""The dataset conventions: validate() names the first thing that breaks them, and the
time stamps every dataset carries are ISO 8601 UTC."""
import datetime as dt

import pytest
import xarray as xr

from abtlab.data import schema
from abtlab.errors import ConfigError


def _good():
    attrs = {k: "x" for k in schema.REQUIRED_ATTRS}
    attrs["freq_mode"] = "simulated"
    return xr.Dataset({"throughput": (("rep",), [1.0, 2.0], {"units": "MB/s"})},
                      coords={"rep": [0, 1]}, attrs=attrs)


def test_a_dataset_that_follows_the_conventions_passes():
    """It passes, and it is the least that passes: without any one of its required attrs
    it is refused, naming that attr (a validate() that checked nothing fails here)."""
    assert schema.validate(_good()) is None
    for key in schema.REQUIRED_ATTRS:
        ds = _good()
        del ds.attrs[key]
        with pytest.raises(ConfigError) as err:
            schema.validate(ds)
        assert err.value.field == f"attrs.{key}"


@pytest.mark.parametrize("breaks, field", [
    (lambda ds: ds.attrs.pop("command"), "attrs.command"),
    (lambda ds: ds.attrs.update(freq_mode="guessed"), "attrs.freq_mode"),
    (lambda ds: ds["throughput"].attrs.pop("units"), "throughput.attrs.units"),
])
def test_each_broken_convention_is_named(breaks, field):
    ds = _good()
    breaks(ds)
    with pytest.raises(ConfigError) as err:
        schema.validate(ds)
    assert err.value.field == field


def test_time_stamps_are_utc_seconds():
    stamp = schema.timestamp()
    parsed = dt.datetime.fromisoformat(stamp)
    assert parsed.utcoffset() == dt.timedelta(0) and parsed.microsecond == 0
