"""Write an output file so that a reader never sees half of it.

The report, the comparison page, the gate's Markdown summary and its JUnit file are all
written the same way: into a temporary file beside the target (same folder, so the same
file system), flushed to disk, then renamed over the target. A failed or killed write
leaves the earlier file as it was and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` through a temporary file and a rename."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if target.is_dir():
        raise ValueError(f"{target}: is a folder, not a file to write")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"{target}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # the mode a plain open() would have given
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
