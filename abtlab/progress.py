"""Progress of long work: runs done, the phase now (kernel build, boot, the points in the
guest, compile, sampling), elapsed time and an ETA, redrawn every second from the first.

Where it goes: one updating line on a terminal; a tqdm widget in Jupyter (tqdm.auto);
a line per phase change, and one at most every 10 s between, on anything else (a log, a
pipe). `ABTLAB_PROGRESS=off` silences it (the report runner sets it for the notebooks it
executes, whose saved output is a page, not a console).

The ETA never extrapolates a start-up: a guest's boot (or a first run's cold caches)
comes before the first run finishes, so the time per run is taken from the intervals
between finished runs only, and each start-up still to come (one per boot) is added at
its measured length. Until a second run has finished there is no honest rate: "ETA ?".
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time

__all__ = ["Progress", "phase", "current", "timed", "shown"]

TICK = 1.0            # redraw period (s)
LINE_EVERY = 10.0     # plain lines: at most one per this many seconds between phase changes
_ACTIVE: list = []    # the Progress being shown (innermost last)
BUILD = "kernel build"  # a phase text starting so: a build, not a start-up to extrapolate


def current():
    """The Progress being shown, or None (a phase outside a sweep prints nothing)."""
    return _ACTIVE[-1] if _ACTIVE else None


def _off() -> bool:
    return os.environ.get("ABTLAB_PROGRESS", "").lower() in ("off", "0", "no", "false")


def shown() -> bool:
    """Whether progress is shown at all (ABTLAB_PROGRESS=off silences it)."""
    return not _off()


def _in_jupyter() -> bool:
    """An IPython kernel (Jupyter, VS Code) whose front-end draws widgets."""
    ip = sys.modules.get("IPython")
    try:
        return ip is not None and ip.get_ipython() is not None and \
            "IPKernelApp" in ip.get_ipython().config
    except Exception:   # an odd shell: fall back to lines
        return False


def _fmt_s(s: float) -> str:
    s = max(0.0, s)
    return f"{s:.0f} s" if s < 120 else f"{s // 60:.0f} min {s % 60:02.0f} s"


class Progress:
    """total runs; step() when runs finish; phase() for what happens before they do.

    A phase may be a callable polled every second, returning its text or (text, k): k
    runs of the current group already finished where the sweep cannot see them yet (a
    guest's points finish inside one boot and arrive together at its end)."""

    def __init__(self, total: int, label: str = "", quiet: bool = False, stream=None):
        self.total, self.label = total, label
        self.quiet = quiet or _off()
        self.stream = stream or sys.stderr
        self.done = 0
        self.t0 = time.monotonic()
        self._phase, self._phase_fn, self._group = "starting", None, None
        self._finishes: list = []     # (time, runs done) at each finish seen
        self._startups: list = []     # measured start-up of each group (s)
        self._inner = 0
        self._counting = True         # False in a warm-up: its runs are not the sweep's
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._bar = None
        self._last_line, self._last_text, self._lined_phase = -math.inf, "", None
        self._ended = False           # the last line is out: nothing after it
        self._thread = None
        if not self.quiet:
            self._thread = threading.Thread(target=self._tick, daemon=True, name="abtlab-progress")
            self._thread.start()
        _ACTIVE.append(self)

    # -- what the work reports --------------------------------------------------------
    def step(self, note: str = "", n: int = 1):
        with self._lock:
            seen = self.done + self._inner
            self.done += n
            self._inner = max(0, self._inner - n)
            if self.done > seen:
                self._finished(self.done)
            if self._phase_fn is None:
                self._phase = "running" + (f": {note}" if note else "")
            self._draw()

    @contextlib.contextmanager
    def phase(self, what, runs: int | None = None, counts: bool = True):
        """Name what happens now (text, or a callable polled each second). runs: how many
        runs this phase finishes (a guest boot's points): its start-up is measured from
        the phase's start (or the end of a kernel build in it) to its first finished run.
        counts=False: runs finishing inside are not the sweep's (a warm-up)."""
        with self._lock:
            prev = (self._phase, self._phase_fn, self._group, self._counting)
            self._counting = self._counting and counts
            self._phase_fn = what if callable(what) else None
            self._group = {"t0": time.monotonic(), "runs": runs, "first": None} if runs else None
            self._phase = what if isinstance(what, str) else self._poll_text()
            self._draw()
        try:
            yield self
        except BaseException:
            with self._lock:
                self._inner = 0        # what it saw finish will not arrive
            raise
        finally:
            with self._lock:
                # the runs seen finishing inside stay counted until their steps arrive
                self._phase, self._phase_fn, self._group, self._counting = prev

    def close(self):
        """The last line (its newline on a terminal), once: the work is over."""
        self._stop.set()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        with self._lock:
            if self._last_text:          # nothing shown yet: a run too short to need one
                self._phase_fn = None
                self._phase = "done" if self.done >= self.total else "stopped"
                self._draw(final=True)
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    # -- ETA ----------------------------------------------------------------------------
    def _finished(self, count):
        now = time.monotonic()
        g = self._group
        if g is not None and g["first"] is None:
            g["first"] = now
            self._startups.append(now - g["t0"])
        # counted once: a guest's points are seen finishing inside it, then arrive together
        if self._counting and (not self._finishes or count > self._finishes[-1][1]):
            self._finishes.append((now, count))

    def eta(self) -> float | None:
        """Seconds left, or None before a rate between two finishes exists."""
        with self._lock:
            left = self.total - self.done - self._inner
            if left <= 0:
                return 0.0
            if len(self._finishes) < 2:
                return None
            (t1, c1), (t2, c2) = self._finishes[0], self._finishes[-1]
            if c2 <= c1 or t2 <= t1:
                return None
            per_run = (t2 - t1) / (c2 - c1)
            eta = left * per_run
            g = self._group
            if g is not None and self._startups:    # boots still to come, at their length
                in_this = max(0, g["runs"] - self._inner)
                later = max(0, left - in_this)
                eta += math.ceil(later / g["runs"]) * (sum(self._startups) / len(self._startups))
            return eta

    # -- display ------------------------------------------------------------------------
    def _poll_text(self) -> str:
        try:
            got = self._phase_fn()
        except Exception:        # a watcher must never break the run it watches
            return self._phase
        text, k = got if isinstance(got, tuple) else (got, 0)
        g = self._group
        if g is not None and g["first"] is None:
            building = text.startswith(BUILD)
            if g.get("building") and not building:
                g["t0"] = time.monotonic()     # a build is not part of a boot's start-up
            g["building"] = building
        if k > self._inner:
            for c in range(self.done + self._inner + 1, self.done + k + 1):
                self._finished(c)
            self._inner = k if self._counting else 0
        return text

    def _tick(self):
        while not self._stop.wait(TICK):
            with self._lock:
                if self._phase_fn is not None:
                    self._phase = self._poll_text()
                self._draw()

    def _text(self):
        el = time.monotonic() - self.t0
        eta = self.eta()
        eta_s = "ETA ?" if eta is None else f"ETA {_fmt_s(eta)}"
        n = self.done + self._inner
        what = self._phase if self._counting or self._phase.startswith("warm-up") \
            else f"warm-up: {self._phase}"
        return f"{self.label} {n}/{self.total} runs, {what[:70]} | {_fmt_s(el)}, {eta_s}", n, eta_s

    def _draw(self, final=False):
        if self.quiet or self._ended:
            return
        self._ended = final
        text, n, eta_s = self._text()
        if _in_jupyter():
            self._draw_widget(n, eta_s, final)
        elif getattr(self.stream, "isatty", lambda: False)():
            width = 20
            fill = int(width * n / max(self.total, 1))
            self.stream.write(f"\r{'#' * fill + '.' * (width - fill)} {text:<110}"[:140]
                              + ("\n" if final else ""))
            self.stream.flush()
        else:
            # a line per phase (a run's own note is not one) and one every LINE_EVERY between
            now = time.monotonic()
            changed = self._phase != self._lined_phase and not self._phase.startswith("running")
            if final or changed or now - self._last_line >= LINE_EVERY:
                self.stream.write(text + "\n")
                self.stream.flush()
                self._last_line, self._lined_phase = now, self._phase
        self._last_text = text

    def _draw_widget(self, n, eta_s, final):
        if self._bar is None:
            # deferred: tqdm is optional or only for this
            from tqdm.auto import tqdm
            self._bar = tqdm(total=self.total, desc=self.label, unit="run", leave=True,
                             bar_format="{desc} {bar} {n_fmt}/{total_fmt} runs [{elapsed}{postfix}]")
        self._bar.n = n
        self._bar.set_description_str(f"{self.label}: {self._phase[:50]}", refresh=False)
        self._bar.set_postfix_str(eta_s, refresh=False)
        self._bar.refresh()
        if final:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def phase(what, runs: int | None = None):
    """Name a phase of the sweep being shown (a no-op without one)."""
    prog = current()
    if prog is None:
        yield None
        return
    with prog.phase(what, runs) as p:
        yield p


@contextlib.contextmanager
def timed(what: str, stream=None, quiet: bool = False):
    """'compiling the model ...' then '... done in 12.3 s' on its own lines: a phase
    outside a sweep (PyMC's compile), shown in Jupyter and on a terminal alike."""
    out = stream or sys.stderr
    show = not (quiet or _off())
    t0 = time.monotonic()
    if show:
        out.write(f"{what} ...\n")
        out.flush()
    yield
    if show:
        out.write(f"{what}: done in {time.monotonic() - t0:.1f} s\n")
        out.flush()
