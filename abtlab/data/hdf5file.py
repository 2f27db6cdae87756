"""Write an HDF5 file through HDF5's in-memory (core) driver, then its image with plain
os.write: a full disk (ENOSPC) is then Python's own OSError on a file HDF5 never had
open. Written in place, libhdf5 met a failed write with a half-written file it could
neither flush nor close, and crashed the interpreter at its exit (SIGSEGV)."""
from __future__ import annotations

import os

__all__ = ["write_file", "waiting"]

_BLOCK = 1 << 20        # the core driver grows its image by this much at a time


def write_file(path, fill, **kwargs) -> int:
    """fill(f) an h5py.File made in memory (kwargs: h5py.File's, e.g. track_order), then
    write its image to path (a new file); return the image's size in bytes."""
    import h5py     # 0.07 CPU s that `abtlab cleanup` (system.runlock) skips
    with h5py.File(f"abtlab-image-{os.getpid()}-{id(fill)}", "w", driver="core",
                   backing_store=False, block_size=_BLOCK, **kwargs) as f:
        fill(f)
        f.flush()
        image = f.id.get_file_image()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def write_all():                    # closes fd itself: it may outlive a signal's unwinding
        view = memoryview(image)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            exc.needed = len(image)     # the space the file needs, for the error's message
            raise
        finally:
            os.close(fd)
    waiting(write_all)
    return len(image)


def waiting(fn):
    """fn() in a thread that takes no SIGINT/SIGTERM, while this one waits for it. A write
    that the kernel throttles, or an fsync, sleeps uninterruptibly: the first signal
    would wait there until it returns while a second one, taken by another thread, ran
    first (a SIGINT then a SIGTERM 40 ms later taken for SIGTERM first). Waiting here,
    the main thread takes each as it comes. fn's exception is raised here."""
    import signal
    import threading
    failed = []

    def run():
        signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
        try:
            fn()
        except BaseException as exc:    # noqa: B036 (handed to the waiting thread)
            failed.append(exc)
    t = threading.Thread(target=run, name="abtlab-write", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.05)
    if failed:
        raise failed[0]
