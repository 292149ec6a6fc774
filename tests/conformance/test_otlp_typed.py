"""The typed OTLP decoder against the general reader: the same spans, or it leaves the line alone.

:func:`ragstage.ingest.otlp_typed.typed_spans` is a second way to read an OTLP JSON line, kept
only because it is faster. Lines are generated in the Collector's plain shape and with every
kind of deviation the general reader handles (snake_case keys, nested and bytes values, ids in
base64 or upper case, failed spans with events, extra and null fields, wrong types); for each,
the typed decoder must give exactly the general reader's spans, or None (then the general
reader reads the line, and its spans or its error are what the user gets).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.ingest import SpanError, read_otlp_json
from ragstage.ingest.otlp import spans_from_request
from ragstage.ingest.otlp_typed import typed_spans


def _general(line: bytes) -> list[Any] | SpanError:
    try:
        return list(spans_from_request(orjson.loads(line)))
    except SpanError as exc:
        return exc


scalars = st.one_of(
    st.builds(lambda s: {"stringValue": s}, st.text(max_size=8)),
    st.builds(lambda b: {"boolValue": b}, st.booleans()),
    st.builds(lambda i: {"intValue": str(i)}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda i: {"intValue": i}, st.integers(-(2**40), 2**40)),
    st.builds(lambda d: {"doubleValue": d}, st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(lambda i: {"doubleValue": i}, st.integers(-1000, 1000)),
)
keys = st.sampled_from(["openinference.span.kind", "input.value", "output.value", "metadata", "llm.model_name",
                        "retrieval.documents.0.document.content", "retrieval.documents.0.document.score", "k"])
hex_ids = st.integers(0, 2**128 - 1)


@st.composite
def spans(draw: Any) -> dict[str, Any]:
    """A span as the Collector writes it."""
    span: dict[str, Any] = {"traceId": f"{draw(hex_ids):032x}", "spanId": f"{draw(hex_ids) % 2**64:016x}",
                            "name": draw(st.sampled_from(["retrieve", "llm", ""])), "kind": draw(st.integers(0, 5)),
                            "startTimeUnixNano": str(draw(st.integers(0, 2**62))),
                            "endTimeUnixNano": draw(st.integers(0, 2**62)),
                            "attributes": [{"key": k, "value": v}
                                           for k, v in draw(st.lists(st.tuples(keys, scalars), max_size=5))]}
    if draw(st.booleans()):
        span["parentSpanId"] = f"{draw(hex_ids) % 2**64:016x}"
    if draw(st.booleans()):
        span["status"] = draw(st.sampled_from([{"code": 1}, {}, {"code": "STATUS_CODE_OK"}, {"code": 0}, None]))
    if draw(st.booleans()):
        span["flags"], span["droppedAttributesCount"], span["links"], span["events"] = 256, 0, [], []
    return span


@st.composite
def plain_requests(draw: Any) -> dict[str, Any]:
    scopes = [{"scope": {"name": "t"}, "spans": draw(st.lists(spans(), max_size=3))}
              for _ in range(draw(st.integers(1, 2)))]
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": scopes}]}


# One deviation from the plain shape: (where, value). "span.<field>" sets a field of one span,
# "value" replaces one attribute's value, "item" adds an attribute item, "top"/"resource"/"scope"
# change the levels above the spans.
DEVIATIONS: list[tuple[str, Any]] = [
    *[("value", v) for v in ({}, {"stringValue": None}, {"string_value": "a"}, {"intValue": "x1"}, {"intValue": " 7 "},
                             {"stringValue": "a", "boolValue": True}, {"bytesValue": "AAE="}, {"stringValue": 3},
                             {"boolValue": 1}, {"doubleValue": "NaN"}, {"intValue": True}, "text", None,
                             {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}]}},
                             {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}})],
    *[("item", v) for v in ({"key": 5, "value": {"stringValue": "a"}}, {"key": "k"}, "kv",
                            {"key": "k", "value": {"stringValue": "v"}, "x": 1})],
    *[("span.traceId", v) for v in ("A" * 32, "AAAAAAAAAAAAAAAAAAAAAA==", "a" * 31, "zz" + "a" * 30, None, 7, "")],
    *[("span.spanId", v) for v in ("B" * 16, "AAAAAAAAAKo=", "b" * 15, None)],
    *[("span.parentSpanId", v) for v in (None, "", "C" * 16, "AAAAAAAAAKo=", "xyz", 0)],
    *[("span.status", v) for v in ({"code": 2, "message": "boom"}, {"code": 2}, {"code": "ERROR"},
                                   {"code": "status_code_error"}, {"code": "2"}, {"code": 2.0}, "ERROR",
                                   {"code": 1, "extra": 1}, False)],
    *[("span." + k, v) for k, v in (("parent_span_id", "0" * 16), ("trace_id", "1" * 32), ("name", 5),
                                    ("name", None), ("startTimeUnixNano", "soon"), ("startTimeUnixNano", 1.5e18),
                                    ("startTimeUnixNano", None), ("startTimeUnixNano", ""), ("endTimeUnixNano", True),
                                    ("attributes", None), ("attributes", {}), ("attributes", "a=b"),
                                    ("unknownField", 1), ("events", "not a list"))],
    ("top", "snake"), ("top", "extra"), ("top", "list"), ("resource", "library"), ("resource", "schema"),
    ("resource", "no scopes"), ("scope", "null spans"), ("scope", "spans not a list"),
]


@st.composite
def requests(draw: Any) -> Any:
    """A plain request, changed in at most one place."""
    request = draw(plain_requests())
    resource = request["resourceSpans"][0]
    scope = resource["scopeSpans"][0]
    where, value = draw(st.sampled_from([("none", None), *DEVIATIONS]))
    span = scope["spans"][0] if scope["spans"] else None
    if where == "span.status" and span is not None and draw(st.booleans()):
        span["events"] = [{"name": "exception", "attributes": [
            {"key": "exception.message", "value": {"stringValue": "from the event"}}]}]
    if where.startswith("span.") and span is not None:
        span[where[5:]] = value
    elif where in ("value", "item") and span is not None:
        items = span["attributes"]
        if where == "value" and items:
            items[draw(st.integers(0, len(items) - 1))]["value"] = value
        else:
            items.insert(draw(st.integers(0, len(items))), value)
    elif (where, value) == ("top", "snake"):
        request = {"resource_spans": [{"scope_spans": resource["scopeSpans"]}]}
    elif (where, value) == ("top", "extra"):
        request["other"] = 1
    elif (where, value) == ("top", "list"):
        request = [request]
    elif (where, value) == ("resource", "library"):
        resource["instrumentationLibrarySpans"] = resource.pop("scopeSpans")
    elif (where, value) == ("resource", "schema"):
        resource["schemaUrl"] = scope["schemaUrl"] = "https://opentelemetry.io/schemas/1.21.0"
    elif (where, value) == ("resource", "no scopes"):
        resource["scopeSpans"] = []
    elif where == "scope":
        scope["spans"] = None if value == "null spans" else {"0": span}
    return request


@settings(max_examples=500, deadline=None)
@given(requests())
def test_the_typed_decoder_gives_the_general_readers_spans_or_none(request):
    line = orjson.dumps(request)
    typed = typed_spans(line)
    general = _general(line)
    if typed is not None:
        assert not isinstance(general, SpanError), general
        assert typed == general


@settings(max_examples=100, deadline=None)
@given(plain_requests())
def test_the_collectors_plain_shape_takes_the_typed_decoder(request):
    """A plain line is read by the typed decoder (else it would be there for nothing)."""
    line = orjson.dumps(request)
    assert typed_spans(line) == _general(line)


@pytest.mark.parametrize("line", [b'{"resourceSpans": [', b"[1, 2]", b'{"resource_spans": []}', b"\xff"])
def test_what_the_typed_decoder_leaves_to_the_general_reader(line):
    assert typed_spans(line) is None


def test_a_file_mixing_both_shapes_reads_as_the_general_reader_reads_it(tmp_path):
    plain = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "a" * 32, "spanId": "b" * 16, "name": "r",
         "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]}]}]}]}
    snake = {"resource_spans": [{"scope_spans": [{"spans": [
        {"trace_id": "c" * 32, "span_id": "d" * 16, "name": "llm", "status": {"code": 2, "message": "boom"},
         "attributes": [{"key": "n", "value": {"int_value": "3"}}]}]}]}]}
    path = tmp_path / "spans.jsonl"
    path.write_bytes(orjson.dumps(plain) + b"\n" + orjson.dumps(snake) + b"\n")
    read = list(read_otlp_json(path))
    assert read == [*spans_from_request(plain), *spans_from_request(snake)]
    assert read[1].error == "boom" and read[1].attributes == {"n": 3}
