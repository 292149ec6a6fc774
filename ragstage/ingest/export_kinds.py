"""Which span export a file holds, decided from its content, and each input read once.

``ragstage ingest spans FILE...`` and the doctor take whatever a tracing tool exports, so the
format is read from the bytes, not from the file name:

* **OTLP JSON** (``{"resourceSpans": ...}`` or ``{"resource_spans": ...}``): the Collector's
  file exporter (one request object a line) or Phoenix's OTLP download (one object, either
  key style, possibly pretty-printed);
* **Phoenix span JSON Lines**: one Phoenix span object a line (``context``, ``span_kind``,
  ``parent_id``, ``attributes``), the UI's other download and ``GET /v1/projects/{p}/spans``;
* **MLflow trace JSON**: ``Trace.to_json()`` one a line, or a JSON list of them;
* **Parquet**: a Phoenix spans frame (``context.span_id``), an MLflow ``search_traces`` frame
  (``trace_id`` with ``spans`` or ``trace``), or ragstage traces; a folder of such files;
* **ragstage traces** (JSON Lines with ``query_id``...), which the doctor reads as traces.

A path that is not a regular file (a pipe, ``<(cat ...)``) is copied once to a temporary
file, so peeking at its start never loses what follows.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import orjson

from ..trace import open_text, read_json_lines
from .spans import SpanError

__all__ = ["Format", "detect", "regular_file", "read_json_values", "parquet_files", "read_frame"]

T = TypeVar("T")
_HEAD = 1 << 16

#: ``name -> what a message calls it``.
DESCRIPTIONS = {
    "otlp": "OTLP JSON",
    "phoenix-jsonl": "Phoenix span JSON Lines",
    "phoenix-parquet": "a Phoenix spans frame (Parquet)",
    "mlflow-json": "MLflow traces (Trace.to_json)",
    "mlflow-parquet": "an MLflow search_traces frame (Parquet)",
    "traces": "ragstage traces",
}
_TRACE_KEYS = frozenset({"query_id", "retrieved", "gold", "prompt", "answer", "pipeline"})


@dataclass(frozen=True)
class Format:
    """A detected format: its ``name`` (a key of :data:`DESCRIPTIONS`) and a detail (key style...)."""

    name: str
    detail: str = ""

    def __str__(self) -> str:
        return DESCRIPTIONS[self.name] + (f" ({self.detail})" if self.detail else "")


@contextlib.contextmanager
def regular_file(path: str | Path) -> Iterator[Path]:
    """``path`` itself when it is a regular file or a folder; else (``-`` for standard input, a
    pipe, a process substitution) its content copied once into a temporary file, removed
    afterwards, and by the next run when this one is killed (:func:`ragstage.ingest.scratch.input_copy`)."""
    from .scratch import input_copy

    p = Path("/dev/stdin" if str(path) == "-" else path)
    if p.is_file() or p.is_dir():
        yield p
        return
    try:
        source = open(p, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise SpanError(f"cannot open: {exc.strerror or exc}", path=str(path)) from None
    with source, input_copy("".join(Path(path).suffixes[-2:])) as (fd, tmp):
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
        yield tmp


def parquet_files(path: Path) -> list[Path]:
    """The Parquet files of a folder (sorted, recursively), or the path itself."""
    if not path.is_dir():
        return [path]
    files = sorted(f for f in path.rglob("*.parquet") if f.is_file())
    others = sorted(f.name for f in path.rglob("*") if f.is_file() and f.suffix != ".parquet"
                    and not f.name.startswith((".", "_")))
    if not files:
        raise SpanError("a folder with no .parquet file", path=str(path))
    if others:
        raise SpanError(f"a Parquet folder also holds {len(others)} other file(s) ({', '.join(others[:3])}): "
                        "pass them separately", path=str(path))
    return files


def read_frame(path: Path) -> Any:
    """A pandas frame from a Parquet file, or from every Parquet file of a folder (concatenated)."""
    import pandas as pd

    frames = []
    for file in parquet_files(path):
        try:
            frames.append(pd.read_parquet(file))
        except (OSError, ValueError, ImportError) as exc:
            raise SpanError(f"cannot read as Parquet ({exc})", path=str(file)) from None
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                head = handle.read(_HEAD)
    except (OSError, EOFError) as exc:
        raise SpanError(f"cannot read: {exc}", path=str(path)) from None
    return head


def _parquet_format(path: Path) -> Format:
    try:
        import pyarrow.parquet as pq

        columns = set(pq.read_schema(path).names)
    except ImportError:
        raise SpanError("reading Parquet needs pyarrow (pip install 'ragstage[parquet]')", path=str(path)) from None
    except (OSError, ValueError) as exc:
        raise SpanError(f"cannot read as Parquet ({exc})", path=str(path)) from None
    if "context.span_id" in columns or "context.trace_id" in columns:
        return Format("phoenix-parquet")
    if "trace_id" in columns and ({"spans", "trace"} & columns):
        return Format("mlflow-parquet")
    if "query_id" in columns:
        return Format("traces")
    raise SpanError(f"a Parquet file in no known shape: columns {', '.join(sorted(columns)[:8])} "
                    "(expected a Phoenix spans frame with context.span_id, an MLflow search_traces frame "
                    "with trace_id and spans, or ragstage traces)", path=str(path))


def _first_keys(head: bytes) -> tuple[set[str], bool]:
    """The keys of the first JSON object in ``head``, and whether it sits alone on the first line."""
    text = head.lstrip()
    first_line = text.split(b"\n", 1)[0]
    try:
        value = orjson.loads(first_line)
        one_line = True
    except orjson.JSONDecodeError:
        value, one_line = None, False
    if isinstance(value, list):
        value = value[0] if value and isinstance(value[0], dict) else None
    if isinstance(value, dict):
        return set(value), one_line
    # a pretty-printed document: the keys quoted at the start of its first lines
    keys = set()
    for line in text.split(b"\n")[:40]:
        stripped = line.strip().lstrip(b"[{").strip()
        if stripped.startswith(b'"') and b'":' in stripped:
            keys.add(stripped[1:stripped.index(b'":')].decode("utf-8", "replace"))
    return keys, one_line


def detect(path: str | Path) -> Format:
    """The format of a regular file or folder, from its content (see the module docstring).

    Raises :class:`SpanError` naming the file and the keys it found when it is none of them.
    """
    p = Path(path)
    if p.is_dir():
        return _parquet_format(parquet_files(p)[0])
    head = _head(p)
    if head[:4] == b"PAR1":
        return _parquet_format(p)
    if not head.strip():
        raise SpanError("the file is empty", path=str(path))
    keys, _ = _first_keys(head)
    if "resourceSpans" in keys or "resource_spans" in keys:
        return Format("otlp", "snake_case keys" if "resource_spans" in keys else "camelCase keys")
    if "context" in keys and ("span_kind" in keys or "parent_id" in keys or "attributes" in keys):
        return Format("phoenix-jsonl")
    if {"info", "data"} <= keys:
        return Format("mlflow-json")
    if keys & _TRACE_KEYS:
        return Format("traces")
    shown = ", ".join(sorted(keys)[:8]) or "no JSON object"
    raise SpanError(f"not a span export this reads: its first record has {shown}; expected OTLP JSON "
                    "(resourceSpans), Phoenix spans (context, span_kind), MLflow traces (info, data), "
                    "or a Parquet export", path=str(path))


def read_json_values(path: str | Path, parse: Callable[[Any], T],
                     decode: Callable[[bytes], Any] = orjson.loads) -> Iterator[tuple[int, T]]:
    """``(line, parse(value))`` for each value of a JSON Lines file (each line turned into its
    value by ``decode``), or for the one document of a file that holds a single (pretty-printed)
    JSON value; a top-level list gives each item."""
    with open_text(path) as handle:
        first = next((line for line in handle if line.strip()), "")
    try:
        orjson.loads(first)
        yield from read_json_lines(path, parse, SpanError, decode=decode)
        return
    except orjson.JSONDecodeError:
        pass
    try:
        with open_text(path) as handle:
            document = orjson.loads(handle.read())
    except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpanError(f"neither JSON Lines nor one JSON document ({exc})", path=str(path), line=1) from None
    for i, value in enumerate(document if isinstance(document, list) else [document], start=1):
        try:
            yield i, parse(value)
        except SpanError as exc:
            unit = f"item {i}" if isinstance(document, list) else "document"
            raise SpanError(f"{unit}: {exc.detail}", path=str(path), field=exc.field) from None
