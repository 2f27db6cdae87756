"""An executed gallery copy knows which stored results it read, each with its file's
fingerprint, and is stale when one of them changes (abtlab.results.gallery)."""
from abtlab.results import registry
from abtlab.results.gallery import changed_results


def _registry(folder, name="r1", content=b"first"):
    (folder / f"{name}.nc").write_bytes(content)
    registry.write({name: registry.Result(name=name, file=f"{name}.nc", command="x {out}",
                                          says="s")}, folder)


def test_a_path_looked_up_is_logged_only_while_a_gallery_execution_asks(tmp_path, monkeypatch):
    _registry(tmp_path)
    log = tmp_path / "read"
    registry.get("r1", tmp_path).path(tmp_path)
    assert not log.exists()
    monkeypatch.setenv(registry.READ_LOG, str(log))
    registry.get("r1", tmp_path).path(tmp_path)
    registry.get("r1", tmp_path).path(tmp_path)
    assert log.read_text().split() == ["r1", "r1"]


def test_a_changed_or_removed_result_makes_the_copy_stale(tmp_path):
    _registry(tmp_path)
    meta = {"results": {"r1": registry.fingerprint("r1", tmp_path)}}
    assert changed_results(meta, tmp_path) == []
    (tmp_path / "r1.nc").write_bytes(b"second")
    assert changed_results(meta, tmp_path) == ["r1"]
    (tmp_path / "r1.nc").unlink()
    assert registry.fingerprint("r1", tmp_path) is None
    assert changed_results(meta, tmp_path) == ["r1"]
    assert registry.fingerprint("unregistered", tmp_path) is None
    assert changed_results({}, tmp_path) == []
