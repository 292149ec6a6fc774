"""Streamed ingest (an OTLP JSON Lines file read line by line, each request read as soon as its
last span is in) gives exactly what reading every span first gives.

Random exports: requests of a root, retrievers, an LLM span (some cut at the prompt, some
answered wrong, some incomplete, some not requests at all), their spans shuffled over lines of
random length so one trace's spans sit on lines far apart, in either key style, over one or two
files. The reference is the same spans handed over as objects (held whole, as before).
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragstage.ingest import SpanError, ingest_spans, ingest_spans_to, read_otlp_json
from ragstage.ingest.grouping import trace_last_lines
from ragstage.trace import read_traces

WORDS = "leave budget travel hotel weeks approval laptop security remote staff policy receipt".split()


def _attr(key, value, snake):
    kind = ("double_value" if snake else "doubleValue") if isinstance(value, float) else (
        "string_value" if snake else "stringValue")
    return {"key": key, "value": {kind: value}}


def _otlp_span(span, snake):
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


@st.composite
def exports(draw):
    """``(lines of spans, labels)``: each line a list of span tuples."""
    passages = [" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=8, max_size=14))) + f" p{i}"
                for i in range(12)]
    spans, labels = [], []
    n_requests = draw(st.integers(1, 12))
    for r in range(n_requests):
        trace = f"{r + 1:032x}"
        ids = iter(f"{r * 16 + k + 1:016x}" for k in range(16))
        root = next(ids)
        t = 1_000 + r * 100
        shape = draw(st.sampled_from(["ok", "ok", "ok", "no-llm", "orphan", "indexing"]))
        qid = f"q{draw(st.integers(0, 40))}" if draw(st.booleans()) else f"q{r}"
        if shape == "indexing":
            spans.append((trace, root, None, "index", t, {"openinference.span.kind": "CHAIN"}))
            continue
        if shape != "orphan":
            spans.append((trace, root, None, "chain", t, {"openinference.span.kind": "CHAIN", "metadata": orjson.dumps(
                {"query_id": qid}).decode(), "input.value": f"question {r}?"}))
        chosen = draw(st.lists(st.integers(0, len(passages) - 1), min_size=1, max_size=5, unique=True))
        for j in range(draw(st.integers(1, 2))):
            docs = {}
            for i, d in enumerate(chosen):
                p = f"retrieval.documents.{i}.document"
                docs[f"{p}.content"] = passages[d]
                docs[f"{p}.metadata"] = orjson.dumps({"source": f"doc{d // 3}", "start_index": (d % 3) * 200}).decode()
                docs[f"{p}.score"] = float(10 - i)
            spans.append((trace, next(ids), root, f"retriever{j}", t + 1 + j, {"openinference.span.kind": "RETRIEVER",
                                                                              **docs}))
        if shape != "no-llm":
            shown = [passages[d] for d in chosen[: draw(st.integers(1, len(chosen)))]]
            if draw(st.booleans()):
                shown[-1] = shown[-1][: len(shown[-1]) // 2]
            spans.append((trace, next(ids), root, "llm", t + 9, {
                "openinference.span.kind": "LLM", "llm.input_messages.0.message.content": "\n\n".join(shown),
                "llm.output_messages.0.message.content": draw(st.sampled_from(["an answer", "I don't know."]))}))
        gold = chosen[draw(st.integers(0, len(chosen) - 1))]
        if draw(st.booleans()):
            labels.append({"query_id": qid, "gold_spans": [{"id": f"doc{gold // 3}", "start": (gold % 3) * 200 + 2,
                                                            "end": (gold % 3) * 200 + 20}]})
    order = draw(st.permutations(range(len(spans))))
    shuffled = [spans[i] for i in order]
    lines, at = [], 0
    while at < len(shuffled):
        size = draw(st.integers(1, 4))
        lines.append(shuffled[at:at + size])
        at += size
    labels.append({"query_id": "never-asked", "gold": ["x"]})
    seen, unique = set(), []
    for label in labels:  # one label a query id
        if label["query_id"] not in seen:
            seen.add(label["query_id"])
            unique.append(label)
    return lines, unique


def _write(path, lines, snake):
    top, scopes = ("resource_spans", "scope_spans") if snake else ("resourceSpans", "scopeSpans")
    with open(path, "wb") as out:
        for line in lines:
            out.write(orjson.dumps({top: [{scopes: [{"spans": [_otlp_span(s, snake) for s in line]}]}]}) + b"\n")
            out.write(b"\n")  # blank lines count in the line numbers and hold nothing


def _essentials(result):
    return {"unmatched": [(lb.query_id, lb.line) for lb in result.unmatched_labels],
            "without_llm": result.without_llm, "skipped": result.skipped, "incomplete": result.incomplete,
            "unlocated": result.unlocated, "partial": result.partial, "keys": result.chunk_metadata_keys,
            "warnings": result.warnings,
            "summary": [line for line in result.summary().splitlines() if not line.startswith("read ")]}


def _whole(paths, labels, split_runs):
    spans = [s for p in paths for s in read_otlp_json(p)]  # objects: held whole, every request read at the end
    return ingest_spans(spans, labels=labels, split_runs=split_runs)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                                   HealthCheck.too_slow])
@given(exports(), st.booleans(), st.booleans(), st.booleans())
def test_streamed_ingest_equals_the_whole_file_read(tmp_path, export, snake, two_files, split_runs):
    lines, labels = export
    labels_path = tmp_path / "labels.jsonl"
    labels_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels))
    cut = len(lines) // 2 if two_files else len(lines)
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"][: 2 if two_files and 0 < cut < len(lines) else 1]
    _write(paths[0], lines[:cut] if len(paths) == 2 else lines, snake)
    if len(paths) == 2:
        _write(paths[1], lines[cut:], snake)
    out = tmp_path / "traces.jsonl"
    out.write_bytes(b"earlier data\n")
    try:
        whole = _whole(paths, labels_path, split_runs)
    except SpanError as exc:  # two runs in one export: the streamed read must stop the same way
        with pytest.raises(SpanError) as streamed_error:
            ingest_spans_to(out, [str(p) for p in paths], labels=labels_path, split_runs=split_runs)
        assert streamed_error.value.detail.split(":", 1)[1] == exc.detail.split(":", 1)[1]
        assert out.read_bytes() == b"earlier data\n"  # a failed ingest leaves the old file as it was
        return
    streamed = ingest_spans_to(out, [str(p) for p in paths], labels=labels_path, split_runs=split_runs)
    in_memory = ingest_spans([str(p) for p in paths], labels=labels_path, split_runs=split_runs)
    expected = [t.to_dict() for t in whole.traces]
    assert [t.to_dict() for t in read_traces(out)] == expected
    assert [t.to_dict() for t in in_memory.traces] == expected
    assert streamed.written == len(expected) and streamed.traces == []
    assert _essentials(streamed) == _essentials(whole) == _essentials(in_memory)


def test_the_scan_finds_each_trace_last_line_in_either_key_style(tmp_path):
    path = tmp_path / "spans.jsonl"
    span = {"name": "x", "attributes": [{"key": "traceId", "value": {"stringValue": "not a key"}}]}
    path.write_bytes(b"\n".join([
        orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "traceId": "A" * 32,
                                                                    "spanId": "1" * 16}]}]}]}),
        b"",
        orjson.dumps({"resource_spans": [{"scope_spans": [{"spans": [{**span, "trace_id": "b" * 32}]}]}]}),
        orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "traceId": "a" * 32}]}]}]}),
    ]) + b"\n")
    assert trace_last_lines(path) == {"a" * 32: 4, "b" * 32: 3}
    for block_size in (1, 7, 64, 300):  # blocks of whole lines, however the reads fall
        assert trace_last_lines(path, block_size) == {"a" * 32: 4, "b" * 32: 3}


def test_a_trace_id_the_scan_cannot_read_is_a_clear_error(tmp_path):
    """A key written with an escape (valid JSON, never seen in a real export) hides a span from
    the scan: the trace would be read without it, so ingest stops, naming file and line."""
    path = tmp_path / "spans.jsonl"
    span = {"traceId": "a" * 32, "spanId": "1" * 16, "name": "root",
            "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]}
    first = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    hidden = first.replace(b'"traceId"', b'"trace\\u0049d"').replace(b"1" * 16, b"2" * 16)
    path.write_bytes(first + b"\n" + hidden + b"\n")
    with pytest.raises(SpanError, match="trace-id scan") as err:
        ingest_spans_to(tmp_path / "t.jsonl", str(path))
    assert err.value.line == 2 and str(path) in str(err.value)


@pytest.mark.parametrize("parents", [{"a": "a"}, {"a": "b", "b": "a"}])
def test_a_looping_parent_chain_in_a_file_is_an_error_not_a_hang(tmp_path, parents):
    path = tmp_path / "loop.jsonl"
    spans = [{"traceId": "f" * 32, "spanId": k * 16, "parentSpanId": v * 16, "name": k,
              "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]}
             for k, v in parents.items()]
    path.write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + b"\n")
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--out",
                          str(tmp_path / "t.jsonl")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "parent chain loops" in run.stderr and "Traceback" not in run.stderr
