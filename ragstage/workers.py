"""Worker processes that die with the command that started them.

A pool's workers are separate processes: when the command is killed (``SIGKILL``, an OOM
killer, a CI job cancelled), nothing stops them, they are adopted by PID 1 and keep running,
holding the CPU, their files, and the write end of a pipe such as ``ragstage attribute big.jsonl
| tail`` (which then never ends). Every process pool of the package passes
:func:`die_with_parent` as its ``initializer``:

* on Linux the worker asks the kernel for ``SIGKILL`` when its parent exits
  (``prctl(PR_SET_PDEATHSIG)``), which holds however the parent ends;
* elsewhere (or when that call is refused) a daemon thread in the worker checks twice a
  second whether its parent is still its parent, and ends the worker when it is not.

Either way a worker whose parent died before it could ask ends at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

__all__ = ["die_with_parent", "watch_parent", "WATCH_SECONDS"]

#: How often the fallback watcher checks the parent (seconds).
WATCH_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1


def _death_signal() -> bool:
    """Ask the Linux kernel to send ``SIGKILL`` when the parent exits; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)


def watch_parent(parent: int | None = None) -> None:
    """A pool initializer, and :func:`die_with_parent`'s fallback where the kernel sends no signal:
    a daemon thread ends this worker once ``parent`` (its parent now, when not given) is no
    longer its parent, checked every :data:`WATCH_SECONDS`."""
    parent = os.getppid() if parent is None else parent
    threading.Thread(target=_watch, args=(parent,), name="ragstage-parent-watch", daemon=True).start()


def die_with_parent() -> None:
    """A pool initializer: end this worker process when the process that started it ends."""
    parent = os.getppid()
    if not _death_signal():
        watch_parent(parent)
    elif os.getppid() != parent:  # the parent died before the kernel was asked
        os._exit(1)
