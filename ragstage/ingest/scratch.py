"""The scratch folder of an ingest read in parts, the copy of piped input, and the removal of those a killed run left.

The parts of a large span export are written to files of their own in a temporary folder, and
input read from a pipe (``-``, ``/dev/stdin``) is copied once into a temporary file (its format is
detected, then it is read). Both are removed when the run ends, however it ends, but for
``SIGKILL`` or ``SIGTERM`` (an OOM killer, a cancelled CI job), which give the process no chance
to clean. So their names hold the owning process id (``ragstage-ingest-<pid>-<random>``,
``ragstage-input-<pid>-<random>``), and each run that makes one first removes those of this
user whose owner is no longer running. A folder whose owner runs is never touched; a
folder named without a process id is left alone (nothing tells whether its ingest still runs).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator

__all__ = ["PREFIX", "INPUT_PREFIX", "scratch_folder", "input_copy", "remove_stale", "owner_alive"]

PREFIX = "ragstage-ingest-"
#: The copies of input read from a pipe (``-``, ``/dev/stdin``, a process substitution): files.
INPUT_PREFIX = "ragstage-input-"
_OWNED = re.compile(re.escape(PREFIX) + r"(\d+)-")


def owner_alive(pid: int) -> bool:
    """Whether a process with this id is running (one of another user counts as running)."""
    if pid <= 0:
        return True  # not a process id this module writes: never removed
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(root: str | Path | None = None, prefix: str = PREFIX) -> list[Path]:
    """Remove the entries named ``<prefix><pid>-...`` in ``root`` (the temporary folder) that belong
    to this user and whose owning process has ended; the removed entries. With :data:`PREFIX`,
    scratch folders; with :data:`INPUT_PREFIX`, the copies of piped input (files). A process id
    reused since keeps its entry until that process ends too (a live owner's is never removed)."""
    removed = []
    owned = _OWNED if prefix == PREFIX else re.compile(re.escape(prefix) + r"(\d+)-")
    folders = prefix == PREFIX
    base = Path(root if root is not None else tempfile.gettempdir())
    for entry in base.glob(prefix + "*"):
        owner = owned.match(entry.name)
        if owner is None or owner_alive(int(owner.group(1))):
            continue
        try:
            info = entry.lstat()
        except FileNotFoundError:  # removed meanwhile by another run
            continue
        kind = stat.S_ISDIR if folders else stat.S_ISREG
        if not kind(info.st_mode) or info.st_uid != os.getuid():
            continue
        if folders:
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
        removed.append(entry)
    return removed


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A new temporary folder named with this process id, removed on exit, after removing the
    folders earlier ingests left when they were killed."""
    remove_stale()
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as folder:
        yield Path(folder)


@contextlib.contextmanager
def input_copy(suffix: str = "") -> Iterator[tuple[int, Path]]:
    """``(descriptor, path)`` of a new temporary file named with this process id, removed on exit,
    after removing the copies earlier runs left when they were killed."""
    remove_stale(prefix=INPUT_PREFIX)
    fd, name = tempfile.mkstemp(prefix=f"{INPUT_PREFIX}{os.getpid()}-", suffix=suffix)
    try:
        yield fd, Path(name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
