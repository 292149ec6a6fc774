"""OTLP JSON spans decoded, and malformed ones blamed on file, line and field (ragstage.ingest.otlp)."""

from __future__ import annotations

import orjson
import pytest

from ragstage.ingest import (
    SpanError,
    read_otlp_json,
)
from ragstage.ingest.otlp import spans_from_request


def _otlp(spans, status=None):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def _raw(name, kind, attrs, span="00000000000000aa", parent=None, start=1, end=2, status=None):
    out = {"traceId": "0" * 31 + "1", "spanId": span, "name": name, "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(end),
           "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
           + [{"key": k, "value": v} for k, v in attrs.items()]}
    if parent:
        out["parentSpanId"] = parent
    if status:
        out["status"] = status
    return out


def test_otlp_values_ids_and_errors_are_decoded():
    raw = _raw("r", "RETRIEVER", {"retrieval.documents.0.document.id": {"stringValue": "d1"},
                                  "retrieval.documents.0.document.score": {"doubleValue": 0.5},
                                  "n": {"intValue": "7"}, "xs": {"arrayValue": {"values": [{"stringValue": "a"}]}}},
               status={"code": "STATUS_CODE_ERROR", "message": "boom"})
    raw["spanId"] = "AAAAAAAAAKo="  # base64 (protobuf's own JSON mapping) is accepted too
    (span,) = spans_from_request(_otlp([raw]))
    assert span.span_id == "00000000000000aa" and span.error == "boom" and span.kind == "RETRIEVER"
    assert span.attributes["n"] == 7 and span.attributes["xs"] == ["a"]


@pytest.mark.parametrize("line, field", [
    ('{"resourceSpans": [', None),
    ('{"spans": []}', "resourceSpans"),
    (orjson.dumps(_otlp([{**_raw("r", "LLM", {}), "traceId": "xyz"}])).decode(), "traceId"),
])
def test_malformed_otlp_names_file_line_and_field(tmp_path, line, field):
    path = tmp_path / "spans.jsonl"
    path.write_text(orjson.dumps(_otlp([_raw("ok", "LLM", {})])).decode() + "\n\n" + line + "\n")
    with pytest.raises(SpanError) as info:
        list(read_otlp_json(path))
    assert info.value.path == str(path) and info.value.line == 3 and info.value.field == field
