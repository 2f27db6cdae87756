"""When a sweep's finished blocks of runs go to `<out>.parts/`, so a killed sweep resumes.

A real run's block is written (fsynced) as soon as it finishes. A model's runs cost
milliseconds: a simulated sweep keeps its finished blocks in memory and writes them as
parts only once it has run for KEEP_AFTER_S, so a sweep shorter than that writes its
dataset alone (its parts cost it more than running it again would: `abtlab run sim`'s
400 repetitions of 256 threads spent 0.05-0.10 s on 46 MB of parts). A sweep stopped
by an error or a signal (SIGINT, SIGTERM: abtlab.system.cleanup) writes the blocks it
holds before it stops; a kill -9 or a crash of the machine loses at most its first
KEEP_AFTER_S of runs, which --resume runs again.
"""
from __future__ import annotations

import time

from ..data import store
from ..errors import DiskFullError

__all__ = ["Parts", "KEEP_AFTER_S"]

KEEP_AFTER_S = 1.0


class Parts:
    """The sweep to `out`'s parts (out None: in memory only, nothing written). The spec
    that --resume must match is written beside them, with the first part or, for real
    runs, before the first run."""

    def __init__(self, out, spec: dict, simulated: bool):
        self.out, self.spec, self.simulated = out, spec, simulated
        self.started = time.monotonic()
        self.held: list = []
        self.finished = False           # the dataset is written: nothing more to keep
        self._spec_written = False
        if out is not None and not simulated:
            self._write_spec()

    def add(self, block) -> None:
        """A finished block: written now, or held while a simulated sweep is young."""
        if self.out is None:
            return
        if self.simulated and time.monotonic() - self.started < KEEP_AFTER_S:
            self.held.append(block)
            return
        self.write_held()
        self._write(block)

    def write_held(self, best_effort: bool = False) -> int:
        """Write every block held so far (an error or a signal stops the sweep); return
        how many runs could not be kept. best_effort (the disk is full): stop at the
        first block that does not fit instead of raising."""
        while self.held and not self.finished:
            try:
                self._write(self.held[0])
            except DiskFullError:
                if not best_effort:
                    raise
                return sum(b.reps.size for b in self.held)
            self.held.pop(0)
        return 0

    def _write(self, block) -> None:
        self._write_spec()
        # a model's part is not fsynced (abtlab.data.store)
        store.write_block(self.out, block, fsync=not self.simulated)

    def _write_spec(self) -> None:
        if not self._spec_written:
            store.write_spec(self.out, self.spec)
            self._spec_written = True
