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

__all__ = ["from_phoenix", "span_object", "read_phoenix_jsonl", "limit_note", "REQUIRED_COLUMNS", "CLIENT_LIMIT",
           "LIST_LIMIT"]

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


#: ``get_spans_dataframe`` returns at most this many spans unless given ``limit=``.
CLIENT_LIMIT = 1000
#: ``get_spans`` (the list API) returns at most this many spans unless given ``limit=``.
LIST_LIMIT = 100


def limit_note(n: int, call: str = "get_spans_dataframe", limit: int = CLIENT_LIMIT) -> str | None:
    """A warning when a client pull holds exactly its call's default limit of spans: a pull
    that stopped at the limit cuts requests in two, and the rest of the project is not there."""
    if n == limit:
        return (f"the pull has exactly {n} spans, the default limit of the Phoenix client's {call}: it may "
                "have stopped there; pass limit= (e.g. limit=1_000_000) to pull every span")
    return None


def from_phoenix(frame: Any) -> Iterator[Span]:
    """Spans from a Phoenix spans DataFrame, or from the path of that frame saved as Parquet
    (a file, or a folder of them).

    Errors name the row (counted from 1) and the column.
    """
    import pandas as pd

    where = "<Phoenix DataFrame>"
    if isinstance(frame, (str, Path)):
        where = str(frame)
        from .export_kinds import read_frame

        frame = read_frame(Path(frame))
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
        yield _span(record, nested, where, row)


def _span(record: dict[str, Any], nested: dict[str, Any], where: str, row: int) -> Span:
    """One span from a frame row or a span object (flat ``context.*`` keys, attributes apart)."""
    attributes = flatten_attributes(nested)
    if "openinference.span.kind" not in attributes and not _missing(record.get("span_kind")):
        attributes["openinference.span.kind"] = record["span_kind"]
    status = str(record.get("status_code") or "").upper()
    message = record.get("status_message")
    parent = record.get("parent_id")
    trace_id, span_id = record.get("context.trace_id"), record.get("context.span_id")
    if _missing(trace_id) or _missing(span_id):
        raise SpanError("missing trace or span id", path=where, line=row, field="context.trace_id")
    error = None
    if status == "ERROR":
        error = "" if _missing(message) else str(message)
        if not error:
            error = _event_message(record.get("events"))
    return Span(
        trace_id=str(trace_id),
        span_id=str(span_id),
        parent_id=None if _missing(parent) else str(parent),
        name=str(record.get("name") or ""),
        start_ns=_ns(record.get("start_time"), "start_time", where, row),
        end_ns=_ns(record.get("end_time"), "end_time", where, row),
        attributes=attributes,
        error=error,
    )


def _event_message(events: Any) -> str:
    if hasattr(events, "tolist"):
        events = events.tolist()
    for event in events if isinstance(events, list) else ():
        if isinstance(event, dict) and event.get("name") == "exception":
            attrs = event.get("attributes") or {}
            return str(attrs.get("exception.message") or attrs.get("exception.type") or "")
    return ""


def span_object(obj: Any) -> Span:
    """A span from one Phoenix span object (a line of the UI's JSONL download, an item of
    ``GET /v1/projects/{project}/spans`` or of ``client.spans.get_spans()``)."""
    if not isinstance(obj, dict):
        raise SpanError(f"a Phoenix span must be an object, got {type(obj).__name__}")
    context = obj.get("context")
    if not isinstance(context, dict):
        raise SpanError("a Phoenix span needs a 'context' object with trace_id and span_id", field="context")
    attributes = obj.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise SpanError(f"'attributes' must be an object, got {attributes!r:.40}", field="attributes")
    record = {**obj, "context.trace_id": context.get("trace_id"), "context.span_id": context.get("span_id")}
    return _span(record, attributes, "<Phoenix span>", 0)


def read_phoenix_jsonl(path: str | Path) -> Iterator[Span]:
    """Spans from a Phoenix span JSON Lines file (one span object a line; errors name the line)."""
    from .export_kinds import read_json_values

    for _, value in read_json_values(path, _objects_in):
        yield from value


def _objects_in(value: Any) -> list[Span]:
    if isinstance(value, dict) and isinstance(value.get("data"), list):  # a page of the REST API
        return [span_object(v) for v in value["data"]]
    return [span_object(value)]
