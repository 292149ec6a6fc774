"""Where spans come from: a path in any format :mod:`.export_kinds` detects, or the objects tools hand you.

:func:`load_spans` reads spans from any export :mod:`.export_kinds` recognises (OTLP JSON, Phoenix
span JSON Lines or frames, MLflow traces) or from the objects those tools hand you (Phoenix
and MLflow DataFrames, MLflow ``Trace`` lists, Phoenix span lists, OpenTelemetry SDK spans), and
says in one line per input what it read (and warns of a Phoenix pull cut at the client's limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .spans import Span, SpanError, from_sdk_spans

__all__ = ["load_spans", "path_reader", "read_note"]


def path_reader(path: str | Path, found: Any) -> Callable[[Path], Iterable[Span]]:
    """The reader of a file in the detected format ``found``."""
    if found.name == "traces":
        raise SpanError("this file holds ragstage traces, not spans: run `ragstage attribute` or "
                        "`ragstage doctor` on it", path=str(path))
    if found.name == "otlp":
        from .otlp import read_otlp_json as reader
    elif found.name == "phoenix-jsonl":
        from .phoenix import read_phoenix_jsonl as reader
    elif found.name == "phoenix-parquet":
        from .phoenix import from_phoenix as reader
    else:
        from .mlflow import from_mlflow as reader
    return reader


def _open_path(path: str | Path, read: list[str], warnings: list[str]) -> Iterator[Span]:
    """The spans of one file or folder, its format detected from the content (read once)."""
    from .export_kinds import detect, regular_file

    with regular_file(path) as real:
        found = detect(real)
        n = 0
        for span in path_reader(path, found)(real):
            n += 1
            yield span
        read_note(path, found, n, read, warnings)


def read_note(path: str | Path, found: Any, n: int, read: list[str], warnings: list[str]) -> None:
    """Say what a file held, once it is read (and warn of a Phoenix pull cut at the client's limit)."""
    read.append(f"{path}: {found}, {n} span(s)")
    if found.name == "phoenix-parquet":  # a client pull saved as it came
        from .phoenix import limit_note

        note = limit_note(n)
        if note:
            warnings.append(f"{path}: {note}")


def _objects(source: Any, read: list[str], warnings: list[str]) -> Iterator[Span]:
    """Spans from an object a tool hands you (see :func:`ingest_spans`)."""
    if type(source).__name__ == "DataFrame":
        columns = set(source.columns)
        if "context.span_id" in columns or source.index.name in ("context.span_id", "span_id"):
            from .phoenix import from_phoenix, limit_note

            note = limit_note(len(source))
            if note:
                warnings.append(note)
            read.append(f"a Phoenix spans DataFrame, {len(source)} span(s)")
            return from_phoenix(source)
        if "trace_id" in columns and ({"spans", "trace"} & columns):
            from .mlflow import from_mlflow

            read.append(f"an MLflow search_traces DataFrame, {len(source)} trace(s)")
            return from_mlflow(source)
        raise SpanError(f"a DataFrame in no known shape: columns {', '.join(sorted(map(str, columns))[:8])} "
                        "(expected Phoenix's spans frame or MLflow's search_traces frame)")
    if hasattr(source, "info") and hasattr(source, "data"):  # one MLflow Trace
        source = [source]
    items = list(source)
    if not items:
        return iter(())
    first = items[0]
    if all(isinstance(s, Span) for s in items):
        read.append(f"{len(items)} span(s)")
        return iter(items)
    if (hasattr(first, "info") and hasattr(first, "data")) or (isinstance(first, dict) and "info" in first
                                                                 and "data" in first):
        from .mlflow import from_mlflow

        read.append(f"{len(items)} MLflow trace(s)")
        return from_mlflow(items)
    if isinstance(first, dict) and "context" in first:
        from .phoenix import LIST_LIMIT, limit_note, span_object

        note = limit_note(len(items), "get_spans", LIST_LIMIT)
        if note:
            warnings.append(note)
        read.append(f"{len(items)} Phoenix span object(s)")
        return (span_object(s) for s in items)
    read.append(f"{len(items)} OpenTelemetry SDK span(s)")
    return from_sdk_spans(items)


def load_spans(source: Any, read: list[str] | None = None, warnings: list[str] | None = None) -> Iterator[Span]:
    """Spans from a path (any format :func:`.export_kinds.detect` names; a folder of Parquet files),
    a Phoenix or MLflow DataFrame, MLflow ``Trace`` objects, Phoenix span objects (dicts), or
    SDK / :class:`Span` objects. ``read`` collects one line per input saying what was read."""
    read = [] if read is None else read
    warnings = [] if warnings is None else warnings
    if isinstance(source, (str, Path)):
        return _open_path(source, read, warnings)
    return _objects(source, read, warnings)
