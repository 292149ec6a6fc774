"""OTLP JSON Lines: what the OpenTelemetry Collector's file exporter writes, read and written.

Each line is one ``{"resourceSpans": [...]}`` object (an ``ExportTraceServiceRequest`` in the
OTLP/JSON encoding): trace and span ids as hex strings, 64-bit integers (times, ``intValue``)
as decimal strings, attribute values wrapped as ``{"stringValue": ...}`` and the like. The
writer lets a system without a Collector (a test, a notebook, a small service) produce the
same file from the SDK's spans, through :func:`otlp_file_exporter`.
"""

from __future__ import annotations

import base64
import binascii
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import orjson

from ..trace import open_text, read_json_lines
from .tracelog import append_line
from .spans import Span, SpanError

__all__ = ["read_otlp_json", "spans_to_otlp", "write_otlp_json", "otlp_file_exporter", "is_otlp_json"]

_STATUS_ERROR = (2, "STATUS_CODE_ERROR")


def _hex_id(value: Any, digits: int, name: str) -> str:
    """A hex id; base64 (protobuf's own JSON mapping of bytes) is accepted and converted."""
    if not isinstance(value, str) or not value:
        raise SpanError(f"expected a {digits}-digit hex id, got {value!r:.40}", field=name)
    if len(value) == digits:
        try:
            int(value, 16)
            return value.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) * 2 != digits:
        raise SpanError(f"not a {digits}-digit hex (or base64) id: {value!r:.40}", field=name)
    return raw.hex()


def _any_value(value: Mapping[str, Any]) -> Any:
    """Decode an OTLP ``AnyValue`` object."""
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: _any_value(kv.get("value") or {}) for kv in (value["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _span(raw: Mapping[str, Any]) -> Span:
    if not isinstance(raw, Mapping):
        raise SpanError(f"a span must be an object, got {type(raw).__name__}", field="spans")
    try:
        attributes = {a["key"]: _any_value(a.get("value") or {}) for a in raw.get("attributes") or ()}
    except (KeyError, TypeError, ValueError) as exc:
        raise SpanError(f"bad attribute list in span {raw.get('name')!r} ({exc})", field="attributes") from None
    status = raw.get("status") or {}
    error = None
    if status.get("code") in _STATUS_ERROR:
        error = status.get("message") or ""
        if not error:
            for event in raw.get("events") or ():
                if event.get("name") == "exception":
                    attrs = {a["key"]: _any_value(a.get("value") or {}) for a in event.get("attributes") or ()}
                    error = str(attrs.get("exception.message") or attrs.get("exception.type") or "")
                    break
    parent = raw.get("parentSpanId") or None
    try:
        start, end = int(raw.get("startTimeUnixNano") or 0), int(raw.get("endTimeUnixNano") or 0)
    except (TypeError, ValueError):
        raise SpanError("span times must be integers (Unix nanoseconds)", field="startTimeUnixNano") from None
    return Span(
        trace_id=_hex_id(raw.get("traceId"), 32, "traceId"),
        span_id=_hex_id(raw.get("spanId"), 16, "spanId"),
        parent_id=_hex_id(parent, 16, "parentSpanId") if parent else None,
        name=str(raw.get("name") or ""),
        start_ns=start,
        end_ns=end,
        attributes=attributes,
        error=error,
    )


def spans_from_request(obj: Any) -> Iterator[Span]:
    """The spans of one decoded ``{"resourceSpans": [...]}`` object."""
    if not isinstance(obj, Mapping) or "resourceSpans" not in obj:
        raise SpanError('expected an OTLP object {"resourceSpans": [...]}', field="resourceSpans")
    for resource in obj["resourceSpans"] or ():
        for scope in (resource or {}).get("scopeSpans") or ():
            for raw in (scope or {}).get("spans") or ():
                yield _span(raw)


def read_otlp_json(path: str | Path) -> Iterator[Span]:
    """Stream the spans of an OTLP JSON Lines file (``.gz`` too); errors name file, line, field."""
    for _, spans in read_json_lines(path, lambda obj: list(spans_from_request(obj)), SpanError):
        yield from spans


def is_otlp_json(path: str | Path) -> bool:
    """True when the first non-blank line of the file is an OTLP ``resourceSpans`` object."""
    try:
        with open_text(path) as handle:
            for line in handle:
                if line.strip():
                    return line.lstrip().startswith("{") and '"resourceSpans"' in line[:200]
    except (OSError, UnicodeDecodeError):
        return False
    return False


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
