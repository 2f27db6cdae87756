"""What `abtlab report`, `lab check` and `demo` say on the terminal while notebooks run:
a line as each notebook starts (with how long it took last time), a line as each ends
(in the order they end), the batch's ETA from the notebooks' recorded durations, and at
once, with who holds it, a wait for the machine's lock (another real run), which the
notebook's own kernel would only write into its saved page.

Durations are recorded per notebook and kind of data (`sim`, `guest`, `auto`, a path) in
a small JSON file in the user's cache (`durations_path()`; $ABTLAB_DURATIONS names
another); a notebook never run before has no ETA until one is, or until the batch's
output folder holds its last executed copy (papermill's recorded duration)."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

__all__ = ["BatchProgress", "durations_path", "recorded_durations", "lock_holder", "DURATIONS_ENV"]

DURATIONS_ENV = "ABTLAB_DURATIONS"     # another file for the record (tests use their own)


def durations_path() -> Path:
    """$ABTLAB_DURATIONS, else notebook-durations.json in the user's cache folder."""
    if os.environ.get(DURATIONS_ENV):
        return Path(os.environ[DURATIONS_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "abtlab" / \
        "notebook-durations.json"
POLL = 0.5          # s between looks at the machine's lock


def _key(item) -> str:
    data = str(item.parameters.get("data", "default"))
    return f"{item.notebook.stem}|{data if data in ('sim', 'guest', 'auto', 'default') else 'path'}"


def recorded_durations(path=None) -> dict:
    try:
        return json.loads(Path(path or durations_path()).read_text())
    except (OSError, ValueError):
        return {}


def _executed_duration(out: Path, item) -> float | None:
    """papermill's recorded duration of the item's last executed copy in out, if any."""
    try:
        meta = json.loads((out / f"{item.name}.ipynb").read_text())["metadata"]["papermill"]
        return float(meta["duration"]) if meta.get("duration") else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False


def lock_holder(path=None) -> str | None:
    """'pid N: what it runs' of the live process outside this batch (not this process or
    its kernels) that holds the machine's real-run lock, or None."""
    # deferred: the lock's module imports the store; only a batch with real I/O asks
    from ..system.runlock import lock_dir
    try:
        text = Path(path or lock_dir() / "real.lock").read_text().strip()
        pid = int(text.split(":", 1)[0].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None          # a killed holder's note: the kernel dropped its flock
    except PermissionError:
        pass
    return None if _descends_from(pid, os.getpid()) else text


def _fmt(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s // 60:.0f} min {s % 60:02.0f} s"


class BatchProgress:
    """Lines for a batch of report items; `say` prints one (None: silent)."""

    def __init__(self, items, out, workers, say=print, real=(), store=None, lock_path=None):
        self.say, self.workers, self.store = say, max(1, workers), Path(store or durations_path())
        self.out, self.real, self.lock_path = Path(out), set(real), lock_path
        known = recorded_durations(self.store)
        self.expected = {it.name: known.get(_key(it)) or _executed_duration(self.out, it)
                         for it in items}
        self.keys = {it.name: _key(it) for it in items}
        self.started: dict[str, float] = {}
        self.finished: set[str] = set()
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._watch = None
        self._lock = threading.Lock()

    def _line(self, text):
        if self.say:
            with self._lock:
                self.say(text)
                sys.stdout.flush()          # a pipe (tee, make's log) sees it now too

    def eta(self) -> float | None:
        """Seconds left: real notebooks one after another (their recorded durations, less
        what a running one has run), then the rest as the pool runs them: each waiting
        one, longest first, on the worker that frees first. None while any has no record."""
        now, serial, running, waiting = time.monotonic(), 0.0, [], []
        for name, exp in self.expected.items():
            if name in self.finished:
                continue
            if exp is None:
                return None
            left = max(0.0, exp - (now - self.started[name])) if name in self.started else exp
            if name in self.real:
                serial += left
            else:
                (running if name in self.started else waiting).append(left)
        free = sorted(running + [0.0] * max(0, self.workers - len(running)))[:max(self.workers, len(running))]
        for left in sorted(waiting, reverse=True):
            free[0] += left
            free.sort()
        return serial + (max(free) if free else 0.0)

    def order(self, items) -> list:
        """Pool items longest first by their records (unknown ones first: they may be long),
        so that the longest is not left to run alone at the end."""
        return sorted(items, key=lambda it: -(self.expected.get(it.name) or float("inf")))

    def _eta_text(self) -> str:
        eta = self.eta()
        return "ETA ?" if eta is None else f"ETA {_fmt(eta)}"

    def begin(self, total_text: str):
        self._line(f"{total_text}; {self._eta_text()} (from recorded durations)")
        if self.real and self.say:
            self._watch = threading.Thread(target=self._watch_lock, daemon=True,
                                           name="abtlab-lock-watch")
            self._watch.start()

    def start(self, item):
        self.started[item.name] = time.monotonic()
        exp = self.expected.get(item.name)
        last = f"took {_fmt(exp)} last time" if exp else "no recorded duration"
        self._line(f"start  {item.name} ({last}; {'real I/O, alone' if item.name in self.real else 'sim/guest'})")

    def finish(self, o):
        self.finished.add(o.item.name)
        if o.status == "ok":
            self._record(o.item, o.seconds)
        n, total = len(self.finished), len(self.expected)
        self._line(f"{o.status:6} {o.seconds:7.1f} s  {o.item.name}  [{n}/{total} done, "
                   f"{_fmt(time.monotonic() - self.t0)}, {self._eta_text()}]"
                   + (f"  ({o.error})" if o.error else ""))

    def close(self):
        self._stop.set()

    def _record(self, item, seconds):
        data = recorded_durations(self.store)
        data[self.keys[item.name]] = round(float(seconds), 1)
        try:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.store.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.replace(tmp, self.store)
        except OSError:          # a read-only home: no ETA next time, nothing worse
            pass

    def _watch_lock(self):
        shown = None
        while not self._stop.is_set():
            if len(self.finished & self.real) < len(self.real):
                holder = lock_holder(self.lock_path)
                if holder and holder != shown:
                    self._line(f"waiting: another real run holds this machine ({holder}); "
                               f"a real run in these notebooks waits for it to finish")
                elif shown and not holder:
                    self._line("the machine is free again: the real-I/O notebooks go on")
                shown = holder
            self._stop.wait(POLL)
