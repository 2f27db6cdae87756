"""A process-wide undo stack: everything abtlab changes on the machine is undone here.

Each change (an image file, a loop device, a mount, a throttle rule, a tracefs instance,
a cpufreq limit) pushes one undo as it is made. Context managers pop their own undo on
exit; `installed()` makes sure whatever is left runs on SIGINT, SIGTERM and at
interpreter exit: in reverse order, once each, and a failing undo only warns.

SIGTERM and SIGINT raise `Terminated` (a KeyboardInterrupt, so `except Exception` does
not swallow it) and `with` blocks unwind normally. Signals are deferred (`deferred()`)
while a step changes the machine *and* its undo is registered, so every change is either
undone or recorded; and while a teardown runs, so it runs to its end in reverse order:
the signal is raised once the teardown is done. A further signal while terminating
never skips an undo: it only shortens waits (`hurry()`). Nothing is done from weakref
or `__del__` callbacks, where a raised signal would be swallowed.

`exiting` covers a command-line process around `installed()`, from its first line to its
exit: the first signal ends it, however early, and no later one changes how it ends.
"""
from __future__ import annotations

import atexit
import itertools
import os
import signal
import threading
import warnings

__all__ = ["Terminated", "Undoable", "push", "changed_machine", "pop", "discard", "pending", "run_all", "installed",
           "deferred", "raise_pending", "hurry", "exiting"]

_lock = threading.RLock()
_stack: list[tuple[int, int, object, str]] = []  # (token, owner pid, fn, label)
_tokens = itertools.count(1)
_deferring = 0
_pending_signal: int | None = None
_terminating = False
_hurry = False
_atexit_done = False
_received: int | None = None    # the first SIGTERM/SIGINT since `exiting.start()`
_quiet = False                  # `exiting`: signals are only noted from now on
_machine_pid: int | None = None  # the process that pushed an undo of a machine change
_wakeup_r: int | None = None    # `exiting`: the read end of the signals' wakeup pipe
_arrived: int | None = None     # the first signal read from it
_unwinding = False              # a Terminated raised by the handler is going by
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM or SIGINT arrives."""

    def __init__(self, signum):
        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def push(fn, label: str, machine: bool = True) -> int:
    """Register `fn()` to undo a change; return a token for `pop`. machine=False: a
    change to the user's own files (a temporary dataset file), not to the machine."""
    global _machine_pid
    with _lock:
        token = next(_tokens)
        _stack.append((token, os.getpid(), fn, label))
        if machine:
            _machine_pid = os.getpid()
    return token


def changed_machine() -> bool:
    """Whether this process has changed the machine (pushed an undo of a machine change)."""
    return _machine_pid == os.getpid()


def _take(token):
    with _lock:
        for i, entry in enumerate(_stack):
            if entry[0] == token:
                return _stack.pop(i)
    return None


def pop(token: int) -> bool:
    """Run the undo registered under `token` and forget it; False if it already ran."""
    entry = _take(token)
    if entry is None:
        return False
    _run(entry)
    return True


def discard(token: int) -> None:
    """Forget an undo without running it (the change was undone another way)."""
    _take(token)


def pending() -> list[str]:
    """Labels of the undos this process still owes, oldest first."""
    with _lock:
        return [label for _, pid, _, label in _stack if pid == os.getpid()]


def _run(entry):
    """Run one undo; a failure warns. A signal arriving meanwhile is kept for later."""
    _, pid, fn, label = entry
    if pid != os.getpid():  # inherited through fork: the parent owns it
        return
    with deferred(raise_after=False):
        try:
            fn()
        except Exception as exc:  # one failed undo must not stop the others
            warnings.warn(f"abtlab cleanup: {label} failed: {exc}", RuntimeWarning, stacklevel=3)


def run_all() -> None:
    """Run every undo this process still owes, newest first, to the end."""
    with deferred(raise_after=False):
        while True:
            with _lock:
                mine = [e for e in _stack if e[1] == os.getpid()]
                if not mine:
                    break
                entry = mine[-1]
                _stack.remove(entry)
            _run(entry)


class deferred:
    """Hold SIGINT/SIGTERM while the block runs; raise `Terminated` for a held signal at
    the end of the outermost block (unless raise_after is False: a teardown, which the
    caller ends with `raise_pending()`)."""

    def __init__(self, raise_after=True):
        self.raise_after = raise_after

    def __enter__(self):
        global _deferring
        _deferring += 1
        return self

    def __exit__(self, *exc):
        global _deferring
        _deferring -= 1
        if self.raise_after and exc[0] is None:
            raise_pending()
        return False


def raise_pending():
    """Raise `Terminated` for a signal held back, once no block defers any more."""
    global _pending_signal
    if _deferring == 0 and _pending_signal is not None:
        signum, _pending_signal = _pending_signal, None
        _raise(signum)


def _drop_pending():
    global _pending_signal
    if _deferring == 0:
        _pending_signal = None


def hurry() -> bool:
    """True once a second signal asked to finish quickly: waits and retries shorten."""
    return _hurry


def _first(signum) -> int:
    """The first of the signals that have arrived since `exiting.start()`: Python runs
    the handlers of signals that arrive together in the order of their numbers (SIGINT
    before SIGTERM), but its C handler writes each to the wakeup pipe as it arrives."""
    global _arrived
    if _arrived is None and _wakeup_r is not None:
        try:
            seen = os.read(_wakeup_r, 256)
        except OSError:         # empty (the pipe is another's now): the handler's own
            seen = b""
        _arrived = next((b for b in seen if b in SIGNALS), None)
    return _arrived or signum


def _handler(signum, frame):
    global _pending_signal, _terminating, _hurry, _received
    _received = _received or _first(signum)
    _hurry = _terminating          # a second signal: finish the teardown, only faster
    _terminating = True
    # kept until a teardown sees the Terminated go by: if it is raised inside a __del__
    # or weakref callback of some library, Python swallows it, and the next deferred
    # block or teardown raises it again
    _pending_signal = _pending_signal or signum
    if _deferring or _unwinding:   # a teardown is under way, or a Terminated going by:
        return                     # a second one raised into its unwinding would cut it
    _raise(signum)


def _raise(signum):
    global _unwinding
    _unwinding = True
    raise Terminated(signum)


def swallowed() -> None:
    """A Terminated was swallowed by a finalizer (sys.unraisablehook saw it go): the next
    signal raises again, and the held one is raised at the next step."""
    global _unwinding
    _unwinding = False


def _reset():
    global _terminating, _hurry, _pending_signal, _unwinding
    _terminating = _hurry = _unwinding = False
    _pending_signal = None


def _at_exit():
    run_all()


class installed:
    """Install the SIGTERM/SIGINT handlers and the atexit hook.

    Usable as a call (`installed()`: handlers stay for the life of the process) or as a
    context manager (`with installed():` runs what is left and restores the previous
    handlers on exit). Installing from a thread other than the main one only adds the
    atexit hook, since Python delivers signals to the main thread only.
    """

    def __init__(self, signals=SIGNALS):
        global _atexit_done
        with _lock:
            if not _atexit_done:
                atexit.register(_at_exit)
                _atexit_done = True
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum in signals:
                self._previous[signum] = signal.signal(signum, _handler)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # held to the end, a further signal included: a raise while the handlers go back
        # would leave ours installed
        with deferred(raise_after=False):
            try:
                run_all()
            finally:
                for signum, previous in self._previous.items():
                    signal.signal(signum, previous)
        lost = _pending_signal if exc[0] is None else None
        _reset()
        if lost is not None:     # swallowed by a finalizer: never end as if none came
            raise Terminated(lost)
        return False


def _first_only(signum, frame):
    """`exiting`'s handler: the first signal raises Terminated (held while a block
    defers, like `_handler`), any other is only noted."""
    global _received, _pending_signal
    signum = _first(signum)
    if _received is None and not _quiet:
        _received = signum
        if not _deferring:
            raise Terminated(signum)
        _pending_signal = _pending_signal or signum
    _received = _received or signum


class exiting:
    """A command's SIGTERM/SIGINT from its first line to its exit, around `installed()`.

    `start()`: before a command changes anything there is nothing to undo, so the first
    signal raises Terminated at once (one clear line, not Python's traceback or a silent
    death by SIGTERM); `installed()` handles those that come while it runs. Once a signal
    has come, or after `quiet()` (the command's outcome is decided), signals are only
    noted, so a second one after the teardown cannot end the process by the signal
    instead of the exit code the first chose. `close()` puts the handlers back, or
    leaves both ignored through the interpreter's shutdown when a signal came (the
    process ends by that signal's exit code) or when `for_good` (the process's own
    command line, whose outcome is decided: a signal during a slow shutdown would kill
    it by the signal). Call start() and quiet() inside the try that catches the
    Terminated, so that no raise lands outside it, and close() in its finally."""

    def __init__(self):
        self._previous = {}
        self._main = threading.current_thread() is threading.main_thread()

    def start(self):
        global _received, _quiet, _wakeup_r, _arrived
        _received, _quiet, _arrived = None, False, None
        if self._main:                  # Python runs handlers in the main thread only
            # each signal's number, in the order they arrive (see _first)
            r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            self._wakeup = (r, w, signal.set_wakeup_fd(w, warn_on_full_buffer=False))
            _wakeup_r = r
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, _first_only)

    @staticmethod
    def quiet():
        global _quiet
        _quiet = True

    @property
    def signum(self) -> int | None:
        """The first signal since start(), or None."""
        return _received

    def close(self, for_good=False):
        self.quiet()
        if not self._main:
            return
        # blocked while the handlers change: one arriving meanwhile meets the new ones
        held = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            for signum in SIGNALS:
                if _received is not None or for_good:
                    signal.signal(signum, signal.SIG_IGN)
                elif signum in self._previous:
                    signal.signal(signum, self._previous[signum])
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self._previous = {}
        self._close_wakeup()

    def _close_wakeup(self):
        global _wakeup_r
        if getattr(self, "_wakeup", None) is None:
            return
        r, w, previous = self._wakeup
        _first(0)                       # read what came, before the pipe goes
        signal.set_wakeup_fd(previous)
        _wakeup_r, self._wakeup = None, None
        os.close(r)
        os.close(w)


class Undoable:
    """Base of every context manager that changes the machine.

    A subclass does its steps in `_setup()`, registering one undo per step with
    `_undo(fn, label)` (before the step when the undo can tell whether there is anything
    to undo, else right after it); a failure inside `_setup()` and every exit pop them
    all, newest first (and `installed()` runs them on signals). Signals are held during
    `_setup()` and during the teardown."""

    _tokens: list

    def _setup(self):
        raise NotImplementedError

    def _undo(self, fn, label: str) -> None:
        self._tokens.append(push(fn, label))

    def _teardown(self, exc_type=None) -> None:
        with deferred(raise_after=False):   # to the end, whatever arrives meanwhile
            while self._tokens:
                pop(self._tokens.pop())
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            _drop_pending()                 # already terminating: keep the first signal
        raise_pending()

    def __enter__(self):
        try:
            with deferred():                # no signal between a step and its undo
                self._setup()
        except BaseException as exc:
            self._teardown(type(exc))
            raise
        return self

    def __exit__(self, *exc):
        self._teardown(exc[0])
        return False
