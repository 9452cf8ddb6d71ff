"""A stop request from outside (``kill``, ``timeout``, a job scheduler) ends a run like Ctrl-C.

Python's default for SIGTERM ends the process at once: no ``finally`` block runs and no atexit
handler, so a run stays marked as running, a grid's job processes go on without their parent and
the local model's server outlives the process that started it. Inside `stop_as_interrupt`,
SIGTERM raises ``KeyboardInterrupt`` in the main thread instead, and everything Ctrl-C does
happens: the run is recorded as interrupted (and resumable), child processes are stopped, the
server is shut down.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


@contextlib.contextmanager
def stop_as_interrupt() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` while the block runs (main thread only; elsewhere,
    where no handler can be set, nothing changes). The previous handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
