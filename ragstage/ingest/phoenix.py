"""Spans exported from Arize Phoenix: its spans DataFrame, or that frame saved as Parquet.

Phoenix's frame has one row a span, the columns ``context.trace_id``, ``context.span_id``,
``parent_id``, ``name``, ``span_kind``, ``start_time``, ``end_time``, ``status_code``,
``status_message``, and one ``attributes.<key>`` column per attribute, where lists of
objects stay nested (``attributes.retrieval.documents`` holds
``[{"document": {"id": ..., "content": ...}}, ...]``). Rows are turned back into flat
OpenInference keys, so the rest of the ingest does not care where a span came from.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

from .spans import Span, SpanError, flatten_attributes

__all__ = ["from_phoenix", "REQUIRED_COLUMNS"]

REQUIRED_COLUMNS = ("context.trace_id", "context.span_id", "name", "start_time", "end_time", "status_code")
_PREFIX = "attributes."


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not hasattr(value, "__len__") else False
    except (TypeError, ValueError):
        return False


def _ns(value: Any, column: str, where: str, row: int) -> int:
    import pandas as pd

    if _missing(value):
        return 0
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        raise SpanError(f"not a time: {value!r:.40}", path=where, line=row, field=column) from None
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return int(stamp.value)


def from_phoenix(frame: Any) -> Iterator[Span]:
    """Spans from a Phoenix spans DataFrame, or from the path of that frame saved as Parquet.

    Errors name the row (counted from 1) and the column.
    """
    import pandas as pd

    where = "<Phoenix DataFrame>"
    if isinstance(frame, (str, Path)):
        where = str(frame)
        try:
            frame = pd.read_parquet(frame)
        except (OSError, ValueError, ImportError) as exc:
            raise SpanError(f"cannot read as Parquet ({exc})", path=where) from None
    if not isinstance(frame, pd.DataFrame):
        raise SpanError(f"expected a pandas DataFrame, got {type(frame).__name__}", path=where)
    if "context.span_id" not in frame.columns and frame.index.name in ("context.span_id", "span_id"):
        frame = frame.reset_index().rename(columns={frame.index.name: "context.span_id"})
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise SpanError(f"not a Phoenix spans frame: missing column(s) {missing}", path=where, field=missing[0])
    attribute_columns = [c for c in frame.columns if c.startswith(_PREFIX)]
    for row, record in enumerate(frame.to_dict("records"), start=1):
        nested = {c[len(_PREFIX):]: record[c] for c in attribute_columns if not _missing(record[c])}
        attributes = flatten_attributes(nested)
        if "openinference.span.kind" not in attributes and not _missing(record.get("span_kind")):
            attributes["openinference.span.kind"] = record["span_kind"]
        status = str(record.get("status_code") or "").upper()
        message = record.get("status_message")
        parent = record.get("parent_id")
        trace_id, span_id = record["context.trace_id"], record["context.span_id"]
        if _missing(trace_id) or _missing(span_id):
            raise SpanError("missing trace or span id", path=where, line=row, field="context.trace_id")
        yield Span(
            trace_id=str(trace_id),
            span_id=str(span_id),
            parent_id=None if _missing(parent) else str(parent),
            name=str(record["name"]),
            start_ns=_ns(record["start_time"], "start_time", where, row),
            end_ns=_ns(record["end_time"], "end_time", where, row),
            attributes=attributes,
            error=(("" if _missing(message) else str(message)) if status == "ERROR" else None),
        )
