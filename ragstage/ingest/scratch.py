"""The scratch folder of an ingest read in parts, and the removal of those a killed ingest left.

The parts of a large span export are written to files of their own in a temporary folder,
removed when the ingest ends, however it ends, but for ``SIGKILL`` (an OOM killer, a cancelled CI
job), which gives the process no chance to clean. So the folder's name holds the owning process
id (``ragstage-ingest-<pid>-<random>``), and each ingest read in parts first removes the folders
of this user whose owner is no longer running. A folder whose owner runs is never touched; a
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

__all__ = ["PREFIX", "scratch_folder", "remove_stale", "owner_alive"]

PREFIX = "ragstage-ingest-"
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


def remove_stale(root: str | Path | None = None) -> list[Path]:
    """Remove the scratch folders in ``root`` (the temporary folder) that belong to this user and
    whose owning process has ended; the removed folders. A process id reused since keeps its
    folder until that process ends too (a live owner's folder is never removed)."""
    removed = []
    base = Path(root if root is not None else tempfile.gettempdir())
    for entry in base.glob(PREFIX + "*"):
        owner = _OWNED.match(entry.name)
        if owner is None or owner_alive(int(owner.group(1))):
            continue
        try:
            info = entry.lstat()
        except FileNotFoundError:  # removed meanwhile by another ingest
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A new temporary folder named with this process id, removed on exit, after removing the
    folders earlier ingests left when they were killed."""
    remove_stale()
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as folder:
        yield Path(folder)
