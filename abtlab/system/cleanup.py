"""A process-wide undo stack: everything abtlab changes on the machine is undone here.

Each change (an image file, a loop device, a mount, a throttle rule, a tracefs instance,
a cpufreq limit) pushes one undo right after it is made. Context managers pop their own
undo on exit; `installed()` makes sure whatever is left runs on SIGINT, SIGTERM and at
interpreter exit: in reverse order, once each, and a failing undo only warns.

SIGTERM and SIGINT raise `Terminated` (a KeyboardInterrupt, so `except Exception` does
not swallow it) and `with` blocks unwind normally. While an undo runs, signals are
deferred, so a second Ctrl-C cannot cut a `umount` in half.
"""
from __future__ import annotations

import atexit
import itertools
import os
import signal
import threading
import warnings

__all__ = ["Terminated", "Undoable", "push", "pop", "discard", "pending", "run_all", "installed"]

_lock = threading.RLock()
_stack: list[tuple[int, int, object, str]] = []  # (token, owner pid, fn, label)
_tokens = itertools.count(1)
_deferring = 0
_pending_signal: int | None = None
_terminating = False
_atexit_done = False


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM or SIGINT arrives."""

    def __init__(self, signum):
        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def push(fn, label: str) -> int:
    """Register `fn()` to undo a change; return a token for `pop`."""
    with _lock:
        token = next(_tokens)
        _stack.append((token, os.getpid(), fn, label))
    return token


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
    global _deferring
    _, pid, fn, label = entry
    if pid != os.getpid():  # inherited through fork: the parent owns it
        return
    _deferring += 1
    try:
        fn()
    except Exception as exc:  # one failed undo must not stop the others
        warnings.warn(f"abtlab cleanup: {label} failed: {exc}", RuntimeWarning, stacklevel=2)
    finally:
        _deferring -= 1
    _raise_deferred()


def run_all() -> None:
    """Run every undo this process still owes, newest first."""
    while True:
        with _lock:
            mine = [e for e in _stack if e[1] == os.getpid()]
            if not mine:
                return
            entry = mine[-1]
            _stack.remove(entry)
        _run(entry)


def _raise_deferred():
    global _pending_signal
    if _deferring == 0 and _pending_signal is not None:
        signum, _pending_signal = _pending_signal, None
        raise Terminated(signum)


def _handler(signum, frame):
    global _pending_signal, _terminating
    if _terminating:  # already unwinding: let the cleanup finish
        return
    if _deferring:
        _pending_signal = signum
        return
    _terminating = True
    raise Terminated(signum)


def _at_exit():
    run_all()


class installed:
    """Install the SIGTERM/SIGINT handlers and the atexit hook.

    Usable as a call (`installed()`: handlers stay for the life of the process) or as a
    context manager (`with installed():` runs what is left and restores the previous
    handlers on exit). Installing from a thread other than the main one only adds the
    atexit hook, since Python delivers signals to the main thread only.
    """

    def __init__(self, signals=(signal.SIGTERM, signal.SIGINT)):
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
        global _terminating
        try:
            run_all()
        finally:
            for signum, previous in self._previous.items():
                signal.signal(signum, previous)
            _terminating = False
        return False


class Undoable:
    """Base of every context manager that changes the machine.

    A subclass does its steps in `_setup()`, registering one undo per step with
    `_undo(fn, label)` right after the step; a failure inside `_setup()` and every exit
    pop them all, newest first (and `installed()` runs them on signals)."""

    _tokens: list

    def _setup(self):
        raise NotImplementedError

    def _undo(self, fn, label: str) -> None:
        self._tokens.append(push(fn, label))

    def _teardown(self) -> None:
        while self._tokens:
            pop(self._tokens.pop())

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, *exc):
        self._teardown()
        return False
