"""OTLP JSON Lines span files built by hand, for the streamed ingest and the output tests."""

import orjson


def _attr(key, value, snake):
    kind = ("double_value" if snake else "doubleValue") if isinstance(value, float) else (
        "string_value" if snake else "stringValue")
    return {"key": key, "value": {kind: value}}


def otlp_span(span, snake):
    """One span tuple ``(trace, span id, parent, name, start, attributes)`` as an OTLP JSON span,
    in camelCase or (``snake``) snake_case keys."""
    trace, sid, parent, name, start, attrs = span

    def k(camel, snake_name):
        return snake_name if snake else camel

    out = {k("traceId", "trace_id"): trace, k("spanId", "span_id"): sid, "name": name,
           k("startTimeUnixNano", "start_time_unix_nano"): str(start),
           k("endTimeUnixNano", "end_time_unix_nano"): str(start + 5), "status": {"code": 1},
           "attributes": [_attr(key, v, snake) for key, v in attrs.items()]}
    if parent:
        out[k("parentSpanId", "parent_span_id")] = parent
    return out


def one_trace_a_line(path, n, bad_line=None, repeat=7, padding=""):
    """``n`` requests, each on two lines of its own (retriever, then LLM), in camelCase OTLP;
    query ids repeat every ``repeat`` requests."""
    out = []
    for r in range(n):
        trace = f"{r + 1:032x}"
        passage = f"passage {r} {padding}"
        retriever = (trace, f"{2 * r + 1:016x}", None, "retriever", r, {
            "openinference.span.kind": "RETRIEVER", "metadata": orjson.dumps({"query_id": f"q{r % repeat}"}).decode(),
            "retrieval.documents.0.document.content": passage})
        llm = (trace, f"{2 * r + 2:016x}", f"{2 * r + 1:016x}", "llm", r + 1, {
            "openinference.span.kind": "LLM", "llm.input_messages.0.message.content": passage,
            "llm.output_messages.0.message.content": "an answer"})
        out += [[retriever], [llm]]
    with open(path, "wb") as handle:
        for i, line in enumerate(out, start=1):
            row = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [otlp_span(s, False) for s in line]}]}]})
            handle.write((b"{not json" if i == bad_line else row) + b"\n")
