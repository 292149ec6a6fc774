"""Writing files so that a failed or killed write never destroys earlier data.

Two kinds of writer live here, and every writer of the package goes through one of them:

* :func:`atomic_output` (whole files: ``convert``'s target, ``ingest --out``, run folders,
  caches of arrays): the content goes to a temporary file beside the target, is flushed to
  disk (``fsync``) and renamed over the target only when the write finished. A failure, an
  exception or a ``SIGKILL`` leaves the old target exactly as it was (and at worst a hidden
  ``.<name>.tmp-*`` file beside it). A target that *is* one of the inputs (the same path, a
  hard link, a symbolic link: the same inode) or a folder is refused before anything is read.
* :func:`append_line` (append-only logs: the trace logger, the resumable run caches): one
  whole line per ``os.write`` on an ``O_APPEND`` descriptor, under an exclusive ``fcntl``
  lock, so concurrent writers never interleave; a torn last line left by a killed writer is
  cut (or closed, when it is a whole record that only lacks its newline) before the next
  line goes in, so a new record always starts on a clean line.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; single-writer use stays safe
    fcntl = None  # type: ignore[assignment]

import orjson

__all__ = ["OutputError", "WriteError", "is_special", "atomic_output", "atomic_write_bytes", "append_line", "locked",
           "check_output"]

_TAIL_CHUNK = 1 << 16


class WriteError(OSError):
    """The operating system refused to write an output (permissions, a full disk, a name too long).

    Not a ``ValueError``: the command line tells it from bad input by its exit code (3), and a
    gate's verdict (1) is never mistaken for it. ``filename`` is the output, never a temporary name.
    """

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class OutputError(ValueError, OSError):
    """An output that cannot be written safely: the message names the path and the reason.

    A ``ValueError`` (the command line's exit 2) and an ``OSError`` (what any other failed
    write raises, so a caller that handles those handles this one too).
    """

    def __init__(self, message: str, *, path: str | Path) -> None:
        self.path, self.detail = str(path), message
        super().__init__(f"{path}: {message}")


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_output(target: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """``target`` as a path, after refusing a folder, a missing parent folder and any input.

    An input is refused as a target however it is reached: by the same name, through a
    symbolic link, or as a hard link (another name for the same inode).
    """
    target = Path(target)
    try:
        if target.is_dir():
            raise OutputError("is a folder; the output must be a file name", path=target)
        if not target.parent.is_dir():
            raise OutputError(f"no such folder: {target.parent}", path=target)
    except OSError as exc:  # a name too long to look up
        raise _write_error(exc, target, None) from exc
    for item in inputs:
        if Path(item).absolute() == target.absolute() or _same_file(Path(item), target):
            raise OutputError("the output must not be the input", path=target)
    return target


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems cannot sync a folder
        pass
    finally:
        os.close(fd)


def _new_file_mode(target: Path) -> int:
    """The mode the target keeps (its own when it exists), else what a plain ``open`` would give."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def is_special(target: str | Path) -> bool:
    """Whether ``target`` exists (after following links) and is not a regular file: a device
    (``/dev/null``, ``/dev/stdout``), a FIFO, a socket, or a shell's ``>(...)`` pipe. Such a
    target is written to directly: it holds no earlier data to protect, and replacing it by a
    rename would destroy the device or the pipe for everyone else."""
    try:
        return not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        return False


def _temporary_name(target: Path) -> Path:
    """A hidden name beside ``target`` that fits the folder's name limit however long the target's name."""
    suffix = f".tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        limit = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    stem = os.fsencode(target.name)[: max(1, limit - 1 - len(suffix))]
    return target.with_name("." + stem.decode("utf-8", "ignore") + suffix)  # a character cut in two is dropped


def _write_error(exc: OSError, target: Path, tmp: Path | None) -> OSError:
    """An error of writing ``target`` (through ``tmp``) that names ``target``, never the hidden temporary file."""
    if isinstance(exc, (ValueError, BrokenPipeError)):
        return exc  # bad data met while writing, or a reader that left: not the system refusing the write
    if tmp is not None and exc.filename not in (str(tmp), tmp, None):
        return exc  # another file's error (an input read inside the block): its own name says which
    return WriteError(exc.errno or 0, f"could not write: {exc.strerror or exc}", str(target))


@contextmanager
def atomic_output(target: str | Path, inputs: Iterable[str | Path] = ()) -> Iterator[Path]:
    """A temporary path beside ``target``; renamed over ``target`` when the block ends without error.

    The caller writes the whole file to the path it is given (any writer that takes a path:
    gzip, Parquet, numpy). On success the file is synced to disk, renamed into place and the
    folder synced; on any exception (and ``KeyboardInterrupt``) the temporary file is removed
    and ``target`` is untouched. See :func:`check_output` for what is refused up front.

    A symbolic link is followed: the file it names is replaced, the link stays a link. A target
    that is not a regular file (:func:`is_special`) is given as it is, to be written directly.
    The file keeps the target's mode, or for a new file the mode the umask gives. An operating
    system's refusal (a folder not writable, a full disk) is a :class:`WriteError` naming ``target``.
    """
    target = check_output(target, inputs)
    if is_special(target):
        try:
            yield target
        except OSError as exc:
            raise _write_error(exc, target, None) from exc
        return
    target = Path(os.path.realpath(target)) if target.is_symlink() else target
    tmp = _temporary_name(target)
    try:
        yield tmp
        if not tmp.exists():  # the writer wrote nothing at all: an empty file, as a plain open would leave
            tmp.touch()
        os.chmod(tmp, _new_file_mode(target))
        _fsync_path(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _write_error(exc, target, tmp) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_path(target.parent, directory=True)


def atomic_write_bytes(path: str | Path, data: bytes | str, inputs: Iterable[str | Path] = ()) -> Path:
    """Write a whole file (text as UTF-8) so readers see the old or the new content, never half.

    ``inputs`` are the files the content was made from: none of them may be the target.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_output(path, inputs) as tmp:
        tmp.write_bytes(payload)
    return Path(path)


@contextmanager
def locked(handle: IO[bytes] | int, exclusive: bool) -> Iterator[None]:
    """An advisory ``flock`` on an open file for the block (shared for readers, exclusive for writers)."""
    fd = handle if isinstance(handle, int) else handle.fileno()
    if fcntl is None:  # pragma: no cover
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _last_line_start(fd: int, size: int) -> int:
    """The offset just after the last newline before ``size`` (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        chunk = os.pread(fd, end - start, start)
        at = chunk.rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


def _mend_tail(fd: int) -> tuple[bytes, int]:
    """Make the end of the file a clean line start: ``(prefix for the next line, bytes cut)``.

    A last line without its newline is either a whole JSON record (closed with a newline,
    kept) or the fragment of a write that was killed (cut: it holds no readable record).
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return b"", 0
    start = _last_line_start(fd, size)
    tail = os.pread(fd, size - start, start)
    try:
        orjson.loads(tail)
    except orjson.JSONDecodeError:
        os.ftruncate(fd, start)
        return b"", size - start
    return b"\n", 0


def append_line(path: str | Path, line: bytes, check: Callable[[int], None] | None = None) -> int:
    """Append one newline-terminated line whole; returns the bytes of a torn last line cut first.

    The line is written with one ``os.write`` on an ``O_APPEND`` descriptor under an
    exclusive lock, so lines from several threads or processes never interleave, and a
    reader holding the shared lock never sees half a line. A short write (a full disk) is
    completed under the same lock or reported, never ignored. ``check(fd)`` runs under the
    lock before the write, with the file as every other writer left it: it may read the file
    and raise to refuse the line (the trace logger refuses a query id already in the file).
    """
    if not line.endswith(b"\n"):
        raise ValueError("append_line writes whole lines: the line must end with a newline")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        with locked(fd, exclusive=True):
            prefix, cut = _mend_tail(fd)
            if check is not None:
                check(fd)
            data = memoryview(prefix + line)
            while data:
                written = os.write(fd, data)
                if written <= 0:  # pragma: no cover - the kernel reports a full disk as OSError
                    raise OSError(f"{path}: could not append ({len(data)} bytes left)")
                data = data[written:]
    finally:
        os.close(fd)
    return cut
