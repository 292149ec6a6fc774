"""OTLP JSON lines in the Collector's plain shape, decoded by msgspec straight into spans.

Most lines of a Collector's file export hold nothing unusual: camelCase keys, hex ids,
scalar attribute values, no failed span. For those, decoding the line into typed structs
and building each :class:`~.spans.Span` from them costs about 70% of decoding it into
dictionaries and reading those (:func:`.otlp.spans_from_request`; 0.89 s against 1.26 s of CPU
for bench_ingest's 100,000 spans). Anything else (snake_case
keys, nested or bytes values, a failed span, a field this schema does not name, a bad id,
a line that is not JSON) makes :func:`typed_spans` return None, and the line is read by the
general reader, whose spans and error messages are the reference: this decoder gives the
same spans or none (``tests/conformance/test_otlp_typed.py`` checks that on generated lines).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec

from .spans import Span, SpanError, hex_id, is_error_code, new_span

__all__ = ["typed_spans"]


class _Value(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """An ``AnyValue`` of the scalar kinds (a line with any other kind goes to the general reader)."""

    stringValue: Optional[str] = None
    boolValue: Optional[bool] = None
    intValue: Optional[Union[int, str]] = None
    doubleValue: Optional[float] = None


class _KeyValue(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    key: str
    value: _Value


class _Status(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    code: Any = None
    message: Any = None


class _Span(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A span's fields in camelCase; those the ingest does not read are only checked to be JSON."""

    traceId: Any = None
    spanId: Any = None
    parentSpanId: Any = None
    name: Optional[str] = None
    startTimeUnixNano: Optional[Union[int, str]] = None
    endTimeUnixNano: Optional[Union[int, str]] = None
    attributes: Optional[list[_KeyValue]] = None
    status: Optional[_Status] = None
    kind: msgspec.Raw = msgspec.Raw(b"null")
    flags: msgspec.Raw = msgspec.Raw(b"null")
    traceState: msgspec.Raw = msgspec.Raw(b"null")
    droppedAttributesCount: msgspec.Raw = msgspec.Raw(b"null")
    events: msgspec.Raw = msgspec.Raw(b"null")  # read only for a failed span (then by the general reader)
    droppedEventsCount: msgspec.Raw = msgspec.Raw(b"null")
    links: msgspec.Raw = msgspec.Raw(b"null")
    droppedLinksCount: msgspec.Raw = msgspec.Raw(b"null")


class _Scope(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    spans: Optional[list[_Span]] = None
    scope: msgspec.Raw = msgspec.Raw(b"null")
    schemaUrl: msgspec.Raw = msgspec.Raw(b"null")


class _Resource(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    scopeSpans: Optional[list[_Scope]] = None
    resource: msgspec.Raw = msgspec.Raw(b"null")
    schemaUrl: msgspec.Raw = msgspec.Raw(b"null")


class _Request(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    resourceSpans: list[_Resource]


_decode = msgspec.json.Decoder(_Request).decode


class _General(Exception):
    """Something the general reader must read (or name the fault of)."""


def _value(v: _Value) -> Any:
    """The value of an ``AnyValue`` that holds no string, converted as the general reader converts
    it: the first kind set in its order (bool, int, double), None when none is."""
    if v.boolValue is not None:
        return v.boolValue
    if v.intValue is not None:
        return int(v.intValue)  # a decimal string in OTLP JSON; int() of a bad one raises ValueError
    return v.doubleValue


def _id(raw: Any, digits: int, name: str, known: dict[Any, str]) -> str:
    """:func:`~.spans.hex_id`, remembered for the line: a trace id comes back on each of a
    request's spans, a span id as its children's parent id."""
    value = known.get(raw)
    if value is None:
        value = known[raw] = hex_id(raw, digits, name)
    return value


def _span(raw: _Span, trace_ids: dict[Any, str], span_ids: dict[Any, str]) -> Span:
    status = raw.status
    if status is not None and status.code != 1 and is_error_code(status.code):  # 1: OK, the usual
        raise _General  # a failed span: its message may sit in its events
    attributes: dict[str, Any] = {}
    for kv in raw.attributes or ():
        v = kv.value
        s = v.stringValue  # the general reader takes the first kind set: a string comes first
        if s is None:  # then bool, int, double: a double (a score) is the usual one
            s = v.doubleValue if v.boolValue is None and v.intValue is None else _value(v)
        attributes[kv.key] = s
    parent = raw.parentSpanId or None
    return new_span(_id(raw.traceId, 32, "traceId", trace_ids), _id(raw.spanId, 16, "spanId", span_ids),
                    _id(parent, 16, "parentSpanId", span_ids) if parent else None, raw.name or "",
                    int(raw.startTimeUnixNano or 0), int(raw.endTimeUnixNano or 0), attributes, None)


def typed_spans(line: bytes) -> list[Span] | None:
    """The spans of one OTLP JSON line in the plain shape; None when the general reader must read it."""
    try:
        request = _decode(line)
    except msgspec.DecodeError:  # not this shape, or not JSON
        return None
    trace_ids: dict[Any, str] = {}
    span_ids: dict[Any, str] = {}
    try:
        return [_span(raw, trace_ids, span_ids) for resource in request.resourceSpans
                for scope in resource.scopeSpans or () for raw in scope.spans or ()]
    except (_General, SpanError, TypeError, ValueError):  # TypeError: an id of a type no dict takes too
        return None
