"""Every bad input is refused before anything touches the machine, naming the option the
user typed and what is accepted."""
from __future__ import annotations

import re

import pytest

from abtlab import backends
from abtlab.sweep import loop as sweep
from abtlab.cli import main
from abtlab.errors import ConfigError
from abtlab.sweep.spec import parse_spec

needs_iozone = pytest.mark.skipif(not backends.get("iozone").available(),
                                  reason="iozone cannot run here (root, loop devices, built)")


@pytest.fixture
def nothing_runs(monkeypatch):
    ran = []
    monkeypatch.setattr(sweep, "_sweep", lambda *a, **k: ran.append(a))
    return ran


@needs_iozone
@pytest.mark.parametrize("args, message", [
    (["--threads", "5000"], "--threads: got '5000'; accepted: .*<= 4096"),
    (["--threads", "64", "--file-size", "100g"], "--file-size: .*at most 21760 MiB"),
    (["--freq", "real:9.9"], "--freq: got 'real:9.9'"),
    (["--freq", "emulated:1.6,fast"], "--freq: got 'emulated:1.6,fast'"),
    (["-o", "fsync=maybe"], "fsync: got 'maybe'; accepted: true or false"),
    (["--reps", "0"], "--reps: got 0"),
])
def test_run_options_are_refused_naming_the_option(tmp_path, capsys, nothing_runs, args, message):
    out = tmp_path / "r.nc"
    assert main(["run", "iozone", *args, "--out", str(out), "--quiet"]) == 2
    assert nothing_runs == []
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(f"abtlab run: error: {message}", err), err
    assert not out.exists()


@pytest.mark.parametrize("toml, field", [
    ('backend = "sim"\n', "factors"),
    ('backend = "sim"\n[factors]\n', "factors"),
    ('backend = "sim"\n[factors]\nthreads = [4]\n[options]\nfsync = "maybe"\n', "options.fsync"),
    ('backend = "sim"\n[factors]\nthreads = [4]\n[options]\nfsync = "false"\n', "options.fsync"),
])
def test_spec_errors_name_the_toml_key(toml, field):
    import tomllib
    with pytest.raises(ConfigError) as exc:
        parse_spec(tomllib.loads(toml))
    assert exc.value.field == field


def test_a_toml_boolean_is_kept_as_a_boolean():
    import tomllib
    spec = parse_spec(tomllib.loads('backend = "sim"\n[factors]\nthreads = [4]\n'
                                    '[options]\nfsync = false\n'))
    assert spec.options == {"fsync": False}


def test_python_callers_get_the_same_checks(nothing_runs):
    with pytest.raises(ConfigError, match="^fsync: "):
        sweep.run("sim", {"threads": [4]}, options={"fsync": "false"}, quiet=True)
    with pytest.raises(ConfigError, match="^factors: "):
        sweep.run("sim", {}, quiet=True)
    assert nothing_runs == []


def test_a_frequency_mode_error_names_freq(tmp_path, capsys, monkeypatch):
    """The guest refuses an emulated frequency as freq_mode; the user typed --freq."""
    from abtlab.sweep import runner

    def guest_refuses(*a, **k):
        raise ConfigError("freq_mode", "emulated", "native in the guest (TCG has no P-states)")
    monkeypatch.setattr(runner, "run", guest_refuses)
    assert main(["run", "iozone", "--freq", "emulated:1.6", "--out", str(tmp_path / "r.nc")]) == 2
    err = capsys.readouterr().err
    assert "--freq: got 'emulated'" in err and "freq_mode" not in err, err
