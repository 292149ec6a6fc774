"""OTLP JSON Lines: what the OpenTelemetry Collector's file exporter writes, read and written.

Each line is one ``{"resourceSpans": [...]}`` object (an ``ExportTraceServiceRequest`` in the
OTLP/JSON encoding): trace and span ids as hex strings, 64-bit integers (times, ``intValue``)
as decimal strings, attribute values wrapped as ``{"stringValue": ...}`` and the like. The
writer lets a system without a Collector (a test, a notebook, a small service) produce the
same file from the SDK's spans, through :func:`otlp_file_exporter`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from ..atomic import append_line
from ..trace import FilePart, read_json_lines
from .otlp_typed import typed_spans
from .spans import Span, SpanError, hex_id, is_error_code, new_span

__all__ = ["read_otlp_json", "read_otlp_batches", "spans_to_otlp", "write_otlp_json", "otlp_file_exporter"]

# protobuf's JSON mapping lets a writer use the field names (snake_case) or their lowerCamelCase
# JSON names; Phoenix's span download uses the former, the Collector the latter. Both are read.
_CAMEL = {"resource_spans": "resourceSpans", "scope_spans": "scopeSpans",
          "instrumentation_library_spans": "instrumentationLibrarySpans", "trace_id": "traceId",
          "span_id": "spanId", "parent_span_id": "parentSpanId", "start_time_unix_nano": "startTimeUnixNano",
          "end_time_unix_nano": "endTimeUnixNano", "string_value": "stringValue", "bool_value": "boolValue",
          "int_value": "intValue", "double_value": "doubleValue", "array_value": "arrayValue",
          "kvlist_value": "kvlistValue", "bytes_value": "bytesValue"}
_SNAKE = {camel: snake for snake, camel in _CAMEL.items()}


def _get(obj: Mapping[str, Any], camel: str) -> Any:
    """``obj[camel]``, or its snake_case spelling."""
    value = obj.get(camel)
    return obj.get(_SNAKE[camel]) if value is None and camel in _SNAKE else value


def _objects(value: Any, name: str) -> list[Mapping[str, Any]]:
    """A list of JSON objects (None reads as empty); anything else is a :class:`SpanError`."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(type(v) is dict or isinstance(v, Mapping) for v in value):
        raise SpanError(f"expected a list of objects, got {value!r:.60}", field=name)
    return value


_VALUE_KINDS = ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue")
_KEEP = object()
# each scalar value kind -> its converter (_KEEP: the value as is)
_SCALARS: dict[str, Any] = {"stringValue": _KEEP, "bytesValue": _KEEP, "boolValue": bool, "intValue": int,
                            "doubleValue": float}


def _any_value(value: Any) -> Any:
    """Decode an OTLP ``AnyValue`` object (either key style)."""
    if not isinstance(value, Mapping):
        raise SpanError(f"an attribute value must be an object like {{\"stringValue\": ...}}, got {value!r:.40}",
                        field="value")
    for kind in _VALUE_KINDS:
        v = _get(value, kind)
        if v is None:
            continue
        convert = _SCALARS.get(kind)
        if convert is not None:
            return v if convert is _KEEP else convert(v)
        if kind == "arrayValue":
            return [_any_value(x) for x in _objects(v.get("values") if isinstance(v, Mapping) else v, "arrayValue")]
        return _key_values(v.get("values") if isinstance(v, Mapping) else v, "kvlistValue")
    return None


def _checked_key_values(items: Any, name: str) -> dict[str, Any]:
    out = {}
    for kv in _objects(items, name):
        key = kv.get("key")
        if not isinstance(key, str):
            raise SpanError(f"an attribute needs a string 'key', got {dict(kv)!r:.60}", field=name)
        out[key] = _any_value(kv.get("value") or {})
    return out


class _Unusual(Exception):
    """An attribute the fast decoder leaves to the checked one (which decodes it or names the fault)."""


# the scalar kinds in either key style; any other kind goes to the checked decoder
_PLAIN: dict[str, Any] = {**_SCALARS, **{_SNAKE[kind]: convert for kind, convert in _SCALARS.items()}}


def _plain_key_values(items: list[Any]) -> dict[str, Any]:
    """The common case, decoded fast: every item ``{"key": str, "value": {"<scalar kind>": v}}``."""
    out = {}
    plain = _PLAIN
    for kv in items:
        key = kv["key"]
        value = kv["value"]
        if type(key) is not str or type(value) is not dict or len(value) != 1:
            raise _Unusual
        for kind, v in value.items():
            convert = plain.get(kind)
            if convert is None or v is None:
                raise _Unusual
            out[key] = v if convert is _KEEP else convert(v)
    return out


def _key_values(items: Any, name: str) -> dict[str, Any]:
    """``{key: decoded value}`` of an OTLP ``KeyValue`` list; faults are :class:`SpanError` naming ``name``.

    Most attribute lists hold only scalar values and are decoded on a fast path; anything else
    (nested values, a fault) is decoded again by the checked path, whose result and messages
    are the reference: the fast path gives the same dictionary or defers."""
    if type(items) is list:
        try:
            return _plain_key_values(items)
        except (_Unusual, KeyError, TypeError, ValueError):
            pass
    return _checked_key_values(items, name)


def _is_error(status: Any) -> bool:
    """A status code of ERROR, as the number 2 or as the enum's name (``STATUS_CODE_ERROR``, ``ERROR``)."""
    if type(status) is not dict and not isinstance(status, Mapping):
        raise SpanError(f"a status must be an object like {{\"code\": 2}}, got {status!r:.40}", field="status")
    return is_error_code(status.get("code"))


def _span(raw: Any) -> Span:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise SpanError(f"a span must be an object, got {type(raw).__name__}", field="spans")
    try:
        attributes = _key_values(raw.get("attributes"), "attributes")
    except (TypeError, ValueError) as exc:
        raise SpanError(f"bad attribute list in span {raw.get('name')!r} ({exc})", field="attributes") from None
    status = raw.get("status") or {}
    error = None
    if _is_error(status):
        error = str(status.get("message") or "")
        if not error:
            for event in _objects(raw.get("events"), "events"):
                if event.get("name") == "exception":
                    attrs = _key_values(event.get("attributes"), "events.attributes")
                    error = str(attrs.get("exception.message") or attrs.get("exception.type") or "")
                    break
    parent = _get(raw, "parentSpanId") or None
    try:
        start, end = int(_get(raw, "startTimeUnixNano") or 0), int(_get(raw, "endTimeUnixNano") or 0)
    except (TypeError, ValueError):
        raise SpanError("span times must be integers (Unix nanoseconds)", field="startTimeUnixNano") from None
    return new_span(hex_id(_get(raw, "traceId"), 32, "traceId"), hex_id(_get(raw, "spanId"), 16, "spanId"),
                    hex_id(parent, 16, "parentSpanId") if parent else None, str(raw.get("name") or ""),
                    start, end, attributes, error)


def spans_from_request(obj: Any) -> Iterator[Span]:
    """The spans of one decoded ``{"resourceSpans": [...]}`` object (or ``{"resource_spans": ...}``)."""
    if not isinstance(obj, Mapping) or _get(obj, "resourceSpans") is None:
        raise SpanError('expected an OTLP object {"resourceSpans": [...]}', field="resourceSpans")
    for resource in _objects(_get(obj, "resourceSpans"), "resourceSpans"):
        scopes = _get(resource, "scopeSpans") or _get(resource, "instrumentationLibrarySpans")
        for scope in _objects(scopes, "scopeSpans"):
            for raw in _objects(scope.get("spans"), "spans"):
                yield _span(raw)


def read_otlp_json(path: str | Path) -> Iterator[Span]:
    """Stream the spans of an OTLP JSON Lines file (``.gz`` too); errors name file, line, field.

    A file holding one pretty-printed OTLP object (as a download is) is read too."""
    for _, spans in read_otlp_batches(path):
        yield from spans


def read_otlp_batches(path: str | Path, part: FilePart | None = None) -> Iterator[tuple[int, list[Span]]]:
    """``(line, spans)`` for each line of an OTLP JSON Lines file, one export batch at a time
    (for a single document: ``(item, spans)`` of each top-level item); with ``part``, the lines
    of that part of a plain JSON Lines file."""
    if part is not None:
        return read_json_lines(path, _batch_spans, SpanError, part, _decode_line)
    from .export_kinds import read_json_values

    return read_json_values(path, _batch_spans, _decode_line)


class _Read(list):  # type: ignore[type-arg]
    """The spans of a line that :func:`.otlp_typed.typed_spans` read."""


def _decode_line(line: bytes) -> Any:
    """A line's spans when it is in the plain shape (:mod:`.otlp_typed`), else its JSON value."""
    spans = typed_spans(line)
    return orjson.loads(line) if spans is None else _Read(spans)


def _batch_spans(obj: Any) -> list[Span]:
    return obj if type(obj) is _Read else list(spans_from_request(obj))


def _encode_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_encode_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _encode_attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": k, "value": _encode_value(v)} for k, v in (attributes or {}).items()]


def spans_to_otlp(spans: Iterable[Any]) -> dict[str, Any]:
    """One ``{"resourceSpans": [...]}`` object from SDK spans (``ReadableSpan``), grouped by
    resource and instrumentation scope as the Collector groups them."""
    groups: dict[tuple[int, str], tuple[Any, str, list[dict[str, Any]]]] = {}
    for s in spans:
        resource = getattr(s, "resource", None)
        scope = getattr(getattr(s, "instrumentation_scope", None), "name", "") or ""
        key = (id(resource), scope)
        if key not in groups:
            groups[key] = (resource, scope, [])
        code = getattr(s.status.status_code, "value", 0)
        span: dict[str, Any] = {
            "traceId": f"{s.context.trace_id:032x}",
            "spanId": f"{s.context.span_id:016x}",
            "name": s.name,
            "kind": int(getattr(s.kind, "value", 0)) + 1,  # SDK SpanKind is 0-based, OTLP's 1-based
            "startTimeUnixNano": str(s.start_time or 0),
            "endTimeUnixNano": str(s.end_time or 0),
            "attributes": _encode_attributes(s.attributes),
            "status": {"code": code, **({"message": s.status.description} if s.status.description else {})},
        }
        if s.parent is not None:
            span["parentSpanId"] = f"{s.parent.span_id:016x}"
        if s.events:
            span["events"] = [{"timeUnixNano": str(e.timestamp), "name": e.name,
                               "attributes": _encode_attributes(e.attributes)} for e in s.events]
        groups[key][2].append(span)
    resource_spans: list[dict[str, Any]] = []
    by_resource: dict[int, dict[str, Any]] = {}
    for (rid, _), (resource, scope, items) in groups.items():
        if rid not in by_resource:
            by_resource[rid] = {"resource": {"attributes": _encode_attributes(getattr(resource, "attributes", None))},
                                "scopeSpans": []}
            resource_spans.append(by_resource[rid])
        by_resource[rid]["scopeSpans"].append({"scope": {"name": scope}, "spans": items})
    return {"resourceSpans": resource_spans}


_WRITE_LOCK = threading.Lock()


def write_otlp_json(path: str | Path, spans: Iterable[Any]) -> int:
    """Append the spans as one OTLP JSON line (one ``os.write``, so concurrent writers do not
    interleave); returns how many spans were written."""
    spans = list(spans)
    if not spans:
        return 0
    line = orjson.dumps(spans_to_otlp(spans)) + b"\n"
    with _WRITE_LOCK:
        append_line(path, line)
    return len(spans)


def otlp_file_exporter(path: str | Path) -> Any:
    """An OpenTelemetry ``SpanExporter`` that appends each export batch to ``path`` as one OTLP
    JSON line: the Collector's file exporter, in process. Needs the ``tracing`` extra."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class OtlpJsonFileExporter(SpanExporter):
        def export(self, spans: Any) -> Any:
            write_otlp_json(path, spans)
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            return None

    return OtlpJsonFileExporter()
