import pytest

from abtlab import policies
from abtlab.errors import ConfigError


@pytest.mark.parametrize("spec", ["ext4", "nojc", "delayjc:window=16ms,max_resets=8",
                                  "delayjc:adaptive", "batch:min_us=0,max_us=15000",
                                  "delayjc:window=500us,max_resets=0,max_age=2s"])
def test_label_round_trip(spec):
    p = policies.parse(spec)
    assert policies.parse(p.label) == p


def test_delayjc_env():
    env = policies.parse("delayjc:window=16ms,max_resets=8").preload_env()
    assert env == {"ABT_DELAYJC_POLICY": "fixed", "ABT_DELAYJC_WINDOW_US": "16000",
                   "ABT_DELAYJC_MAX_RESETS": "8", "ABT_DELAYJC_MAX_AGE_US": "1000000"}
    assert "ABT_DELAYJC_WINDOW_US" not in policies.parse("delayjc:adaptive").preload_env()
    assert policies.parse("ext4").preload_env() == {}


def test_batch_mount_options():
    assert policies.parse("batch:min_us=100,max_us=2ms").mount_options() == \
        "min_batch_time=100,max_batch_time=2000"
    assert not policies.parse("nojc").journal


@pytest.mark.parametrize("spec,field", [
    ("ext5", "policy"), ("delayjc", "policy delayjc.window"),
    ("delayjc:window=abc", "policy delayjc.window"),
    ("delayjc:window=1ms,max_resets=-1", "policy delayjc.max_resets"),
    ("delayjc:window=1ms,speed=3", "policy delayjc.speed"),
    ("batch:min_us=10", "policy batch"), ("batch:min_us=10,max_us=5", "policy batch.max_us"),
    ("ext4:x=1", "policy ext4")])
def test_bad_specs_name_field(spec, field):
    with pytest.raises(ConfigError) as e:
        policies.parse(spec)
    assert e.value.field == field


def test_parse_list():
    assert [p.label for p in policies.parse_list("ext4,nojc")] == ["ext4", "nojc"]
    got = policies.parse_list("ext4;delayjc:window=16ms,max_resets=4")
    assert [p.kind for p in got] == ["ext4", "delayjc"]
