"""The present tests run notebooks in batches: their durations go to a file of their own,
not the user's record (abtlab.present.batch_progress)."""
import pytest

from abtlab.present.batch_progress import DURATIONS_ENV


@pytest.fixture(autouse=True)
def _own_durations_record(tmp_path, monkeypatch):
    monkeypatch.setenv(DURATIONS_ENV, str(tmp_path / "notebook-durations.json"))
