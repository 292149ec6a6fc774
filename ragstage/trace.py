"""The trace: one question through one pipeline, as one JSON object per line.

:class:`Trace` is the record the report, the widgets and the comparison share; the files
are JSON Lines (``.jsonl`` or ``.jsonl.gz``). What each field may hold, and the check every
reader runs, live in :mod:`ragstage.fields`; bad input raises :class:`~ragstage.errors.TraceError`.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, cast

import orjson

from .atomic import atomic_output
from .errors import TraceError
from .fields import FIELDS, RANKED_FIELDS, RANKED_PARTS, FirstSeen, check_record, check_row, ranked_entries
from .values import wide_float_in

T = TypeVar("T")

__all__ = [
    "Trace",
    "is_blank",
    "iter_json_lines",
    "line_ranges",
    "load_meta_text",
    "load_trace_line",
    "open_text",
    "read_json_lines",
    "read_records",
    "read_traces",
    "trace_line",
    "trace_output",
    "trace_stream",
    "write_traces",
    "WRITE_BUFFER",
]


@dataclass(frozen=True)
class Trace:
    """One question through one pipeline.

    Lists are stored as tuples, so a trace can be shared between the report, the widgets
    and the comparison without one of them changing it for the others.
    ``retrieved_scores``/``retrieved_sections`` and ``reranked_scores``/``reranked_sections``
    are not JSON fields of their own: they hold the scores (and sections) when a ranked list
    was given as ``{"id", "score"}`` objects, and :meth:`to_dict` writes them back in that form.
    """

    query_id: str
    pipeline: str = "default"
    query: str = ""
    gold: Sequence[str] = ()
    answerable: bool = True
    retrieved: Sequence[str] = ()
    reranked: Sequence[str] | None = None
    prompt: Sequence[str] | None = None
    prompt_source: str | None = None
    truncated: Sequence[str] | None = None
    answer: str = ""
    answer_ids: Sequence[str] | None = None
    correct: bool | None = None
    refused: bool = False
    claims: Sequence[bool] | None = None
    complete: bool | None = None
    query_ok: bool | None = None
    error: Mapping[str, str] | None = None
    model: str | None = None
    prompt_version: str | None = None
    timestamp: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    retrieved_scores: Sequence[float | None] | None = field(default=None, repr=False)
    retrieved_sections: Sequence[str | None] | None = field(default=None, repr=False)
    reranked_scores: Sequence[float | None] | None = field(default=None, repr=False)
    reranked_sections: Sequence[str | None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Route keyword construction through the same checks as file input, so
        # Trace(query_id="q", gold="d1") fails exactly like a bad JSON line does.
        self.__dict__.update(_frozen(check_row(dict(self.__dict__))))  # frozen: fill __dict__, as from_checked does

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> "Trace":
        """Build a trace from a decoded JSON object (the on-disk form)."""
        return cls.from_checked(check_record(dict(record)))

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Trace":
        """Build a trace from columns, a ranked list's scores and sections in ``<stage>_scores``
        and ``<stage>_sections`` (a Parquet row's form): checked as :meth:`from_dict` checks the
        same list as entries, with the same errors, without an entry object per item."""
        return cls.from_checked(check_row(dict(row)))

    @classmethod
    def from_checked(cls, clean: Mapping[str, Any]) -> "Trace":
        """A trace of a record :func:`~ragstage.fields.check_record` (or ``check_row``) returned:
        exactly the fields, checked and normalised, so not checked again.

        The frozen instance's ``__dict__`` is filled in one call rather than by 26
        ``object.__setattr__`` calls, which made up most of reading a trace (a comparison of two
        runs of 250,000 traces: 9.8 s against 6.3 s)."""
        obj = object.__new__(cls)
        obj.__dict__.update(_frozen(clean))
        return obj

    def to_dict(self) -> dict[str, Any]:
        """The on-disk form: every field, lists as lists, scores and sections folded back in."""
        return self._on_disk(copy=True)

    def _on_disk(self, copy: bool) -> dict[str, Any]:
        """:meth:`to_dict`; with ``copy=False`` the held tuples and ``meta`` as they are, for a
        JSON writer, which writes a tuple as a list."""
        held = self.__dict__  # every field (see from_checked and __post_init__): read without getattr
        out = {}
        for name in FIELDS:
            value = held[name]
            out[name] = list(value) if copy and isinstance(value, tuple) else value
        for stage, scores, sections in _RANKED_COLUMNS:
            ranked = ranked_entries(held[stage], held[scores], held[sections], stage)
            if ranked is not None:
                out[stage] = ranked
        if copy:
            out["meta"] = dict(held["meta"])
        return out

    def replace(self, **changes: Any) -> "Trace":
        """A copy with some fields changed (and checked again)."""
        record = self.to_dict()
        record.update(changes)
        return Trace.from_dict(record)


#: Each ranked list's columns: ``(stage, stage_scores, stage_sections)``.
_RANKED_COLUMNS = tuple((stage, f"{stage}_scores", f"{stage}_sections") for stage in RANKED_FIELDS)
_LISTS = tuple(name for name, f in FIELDS.items() if f.kind.plain in (list[str], list[bool])) + tuple(
    f"{stage}_{part}" for stage in RANKED_FIELDS for part in RANKED_PARTS)


def _frozen(clean: Mapping[str, Any]) -> dict[str, Any]:
    """A normalised record with its lists as tuples, as a Trace holds them."""
    out = dict(clean)
    for name in _LISTS:
        value = out[name]
        if type(value) is list:
            out[name] = tuple(value)
    return out


def open_text(path: str | Path, mode: str = "r") -> IO[str]:
    """Open a trace file as text; ``.gz`` files are (de)compressed transparently."""
    p = Path(path)
    if p.suffix == ".gz":
        return cast(IO[str], gzip.open(p, mode + "t", encoding="utf-8"))
    return open(p, mode, encoding="utf-8")  # noqa: SIM115 - caller closes


#: The longest line a JSON Lines reader takes (a trace with whole prompts is a few hundred kB):
#: an endless input such as ``/dev/zero`` is an error, not a process that eats the memory.
MAX_LINE_BYTES = 64 << 20
# JSON's own whitespace: a line holding only these is blank; any other character makes it a value
# (a line with a non-breaking space is invalid JSON in every reader, not skipped by some).
JSON_SPACE = b" \t\r\n"


_SPACE_STARTS = frozenset([*JSON_SPACE.decode(), *(JSON_SPACE[i:i + 1] for i in range(len(JSON_SPACE)))])


def is_blank(line: str | bytes) -> bool:
    """Whether a line holds only JSON whitespace (skipped by every JSON Lines reader). A line
    that starts with anything else is not blank: told from its first character, since
    stripping copies the line (a span export's line is often a megabyte)."""
    first = line[:1]
    if first and first not in _SPACE_STARTS:
        return False
    return not line.strip(JSON_SPACE if isinstance(line, bytes) else JSON_SPACE.decode())


def iter_json_lines(lines: Iterable[str | bytes], fail: Callable[[str, int], Exception],
                    first_line: int = 1, decode: Callable[[Any], Any] = orjson.loads) -> Iterator[tuple[int, Any]]:
    """``(line number, decoded value)`` for every non-blank line of a JSON Lines stream.

    Shared by every JSONL reader in the project (traces here, BEIR files in the pipeline) so
    that they skip blank lines and number lines the same way (from ``first_line``: a part of a
    file keeps the file's numbers). ``fail(message, line)`` builds the reader's own error for a
    line that is not valid JSON (invalid UTF-8 included, when the lines are bytes). ``decode``
    turns a line into its value (a reader with a faster decoder for its own shape passes it;
    it raises ``orjson.JSONDecodeError`` for a line that is not JSON).
    """
    for lineno, line in enumerate(lines, start=first_line):
        if is_blank(line):
            continue
        try:
            yield lineno, decode(line)
        except orjson.JSONDecodeError as exc:
            raise fail(f"invalid JSON ({exc})", lineno) from None


def _byte_lines(handle: IO[bytes], fail: Callable[[str, int], Exception], first_line: int = 1,
                stop: int | None = None) -> Iterator[bytes]:
    """The lines of a binary stream, each at most :data:`MAX_LINE_BYTES` long; with ``stop``,
    the lines that start before that many bytes in (the handle is at a line start)."""
    lineno = first_line - 1
    left = -1 if stop is None else stop - handle.tell()
    while left and (line := handle.readline(MAX_LINE_BYTES + 1)):
        lineno += 1
        if len(line) > MAX_LINE_BYTES:
            raise fail(f"line longer than {MAX_LINE_BYTES >> 20} MiB: not a JSON Lines file", lineno)
        if left > 0:
            left = max(left - len(line), 0)
        yield line


#: A part of a plain file: ``(first byte, end byte, number of its first line)``; the first byte
#: starts a line, and the part holds the lines that start before the end byte.
FilePart = tuple[int, int, int]


def line_ranges(path: str | Path, parts: int) -> list[tuple[int, int]]:
    """A plain file cut into about ``parts`` byte ranges of equal size, each starting at a line
    beginning and ending where the next starts (empty ranges left out)."""
    size = Path(path).stat().st_size
    cuts = [0]
    with open(path, "rb") as handle:
        for i in range(1, max(parts, 1)):
            handle.seek(size * i // parts)
            handle.readline()  # finish the line we landed in
            cuts.append(min(handle.tell(), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def read_json_lines(path: str | Path, parse: Callable[[Any], T], error: type[TraceError] = TraceError,
                    part: FilePart | None = None, decode: Callable[[bytes], Any] = orjson.loads
                    ) -> Iterator[tuple[int, T]]:
    """``(line number, parse(value))`` for every non-blank line of a JSON Lines file (``.gz`` too),
    or of one ``part`` of a plain file (its lines numbered as in the whole file).

    The one file loop of the project's JSON Lines readers (traces, span exports, labels):
    a file that cannot be opened or read, a line that is not JSON, and an ``error`` that
    ``parse`` raises (its field kept) all come out as ``error`` naming the file and the line.
    Lines are read as bytes and decoded one at a time, so invalid UTF-8 is reported on its
    own line, in a plain file as in a ``.gz`` one. ``decode``: as in :func:`iter_json_lines`.
    """
    p = Path(path)
    try:
        # a buffer of 4 MB: a span export's line is often a megabyte or more, and a line longer than
        # the buffer is read in pieces and joined
        handle: IO[bytes] = gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb", buffering=1 << 22)  # noqa: SIM115
    except OSError as exc:
        raise error(f"cannot open: {exc.strerror or exc}", path=str(path)) from None
    start, stop, first_line = part if part is not None else (0, None, 1)
    with handle:
        lineno = first_line - 1

        def fail(msg: str, n: int) -> TraceError:
            return error(msg, path=str(path), line=n)

        try:
            if start:
                handle.seek(start)
            for lineno, raw in iter_json_lines(_byte_lines(handle, fail, first_line, stop), fail, first_line,
                                                  decode):
                try:
                    value = parse(raw)
                except error as exc:
                    raise error(exc.detail, path=str(path), line=lineno, field=exc.field) from None
                yield lineno, value
        except (EOFError, gzip.BadGzipFile, OSError, zlib.error) as exc:
            raise error(f"unreadable file ({exc})", path=str(path), line=lineno + 1) from None


def load_trace_line(line: bytes | str) -> Any:
    """A trace line's JSON value as orjson reads it, but exact where orjson is not: orjson reads an
    integer beyond 64 bits as a float, so a line whose ``meta`` holds a whole float that wide (rare)
    is read again by the standard library, which keeps integers exact, and the record's check
    then refuses the integer (:func:`~ragstage.values.meta_fault`) instead of passing on a float."""
    value = orjson.loads(line)
    return _exact(line, value, value.get("meta") if type(value) is dict else None)


def load_meta_text(text: bytes | str) -> Any:
    """``meta`` stored as JSON text (a Parquet column), read as :func:`load_trace_line` reads a line."""
    value = orjson.loads(text)
    return _exact(text, value, value)


def _exact(text: bytes | str, value: Any, meta: Any) -> Any:
    """``value`` decoded from ``text`` by orjson, or decoded again exactly when its ``meta`` may hold a wide integer."""
    if type(meta) is dict and meta and wide_float_in(meta):
        return json.loads(text)
    return value


def read_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Stream ``(line number, normalised record)`` pairs from a JSON Lines file.

    Blank lines are skipped (they carry nothing); everything else must be a valid trace.
    A duplicate (``query_id``, ``pipeline``) pair within the file is an error, because
    a replay would otherwise count that question twice.
    """
    seen = FirstSeen("line")
    for lineno, rec in read_json_lines(path, check_record, decode=load_trace_line):
        repeated = seen.repeat(str(path), lineno, rec["query_id"], rec["pipeline"])
        if repeated:
            raise TraceError(repeated, path=str(path), line=lineno, field="query_id")
        yield lineno, rec


def read_traces(path: str | Path) -> Iterator[Trace]:
    """Stream :class:`Trace` objects from a ``.jsonl`` or ``.jsonl.gz`` file."""
    for _, rec in read_records(path):
        yield Trace.from_checked(rec)


def trace_line(trace: Trace) -> bytes:
    """One trace as a line of a trace file (its on-disk form, newline included)."""
    return orjson.dumps(trace._on_disk(copy=False)) + b"\n"


#: Bytes gathered before a trace file is written to: a trace's line is a few kilobytes, and
#: the default buffer would make a system call every few traces.
WRITE_BUFFER = 1 << 20


@contextmanager
def trace_output(path: str | Path, inputs: Iterable[str | Path] = ()) -> Iterator[IO[bytes]]:
    """A binary stream onto a trace file (gzip when the name ends in ``.gz``) that appears whole
    when the block ends, or not at all (:func:`ragstage.atomic.atomic_output`): an error in the
    block, or a killed process, leaves an existing ``path`` as it was. ``inputs`` are files
    the traces are read from, refused as ``path``."""
    with atomic_output(path, inputs) as tmp, trace_stream(tmp, path) as out:
        yield out


@contextmanager
def trace_stream(tmp: str | Path, path: str | Path, append: bool = False) -> Iterator[IO[bytes]]:
    """A binary stream onto ``tmp``, the file being written for the trace file ``path``: gzip when
    ``path`` ends in ``.gz``; with ``append`` (a plain file only), after the bytes ``tmp`` holds."""
    gz = Path(path).suffix == ".gz"
    if append and gz:
        raise ValueError("a gzip stream cannot be appended to another's bytes")
    # appending: written from the end, not opened in append mode (the kernel copies files into a
    # plain stream with sendfile, which refuses such a file)
    flags = os.O_WRONLY | os.O_CREAT | (0 if append else os.O_TRUNC)
    with open(os.open(tmp, flags, 0o666), "wb", buffering=WRITE_BUFFER) as raw:
        if append:
            raw.seek(0, os.SEEK_END)
        out: IO[bytes] = gzip.GzipFile(filename=Path(path).name, mode="wb", fileobj=raw) if gz else raw
        with out:
            yield out


def write_traces(path: str | Path, traces: Iterable[Trace], inputs: Iterable[str | Path] = ()) -> int:
    """Write traces as JSON Lines (gzip when the name ends in ``.gz``); returns the count.

    The file appears whole or not at all (:func:`trace_output`): a bad trace met on the way,
    or a killed process, leaves an existing ``path`` as it was.
    """
    n = 0
    with trace_output(path, inputs) as out:
        for trace in traces:
            out.write(trace_line(trace))
            n += 1
    return n
