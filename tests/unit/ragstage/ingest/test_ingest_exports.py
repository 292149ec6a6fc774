"""The export readers and the loud paths, on small hand-built exports of each shape.

OTLP JSON in snake_case (Phoenix's download), Phoenix span objects with flattened document
metadata, a Phoenix frame cut at the client's limit, a folder of Parquet files, two runs in one
export, spans in foreign conventions, parent loops, duplicate span ids, malformed OTLP, a
10,000-retriever request (linear time), and the doctor reading a pipe once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import orjson
import pandas as pd
import pytest

from ragstage import diagnose
from ragstage.ingest import SpanError, ingest_spans
from ragstage.ingest.export_kinds import detect
from ragstage.ingest.phoenix import CLIENT_LIMIT, LIST_LIMIT, limit_note

TRACE = "0" * 31 + "1"
DOC = "The leave lasts fourteen weeks for every new parent in the company."


def _spans(trace=TRACE, query_id="q1", answer="Fourteen weeks.", docs=(DOC,)):
    """A root CHAIN, a RETRIEVER and an LLM span as flat attributes."""
    retrieval = {}
    for i, text in enumerate(docs):
        retrieval.update({f"retrieval.documents.{i}.document.id": f"d{i}",
                          f"retrieval.documents.{i}.document.content": text,
                          f"retrieval.documents.{i}.document.metadata.source": "leave",
                          f"retrieval.documents.{i}.document.metadata.start_index": 0})
    return [
        ("a" * 16, None, "chain", {"openinference.span.kind": "CHAIN", "metadata": orjson.dumps(
            {"query_id": query_id}).decode(), "input.value": "How long is the leave?"}),
        ("b" * 16, "a" * 16, "retrieve", {"openinference.span.kind": "RETRIEVER", **retrieval}),
        ("c" * 16, "a" * 16, "llm", {"openinference.span.kind": "LLM",
                                     "llm.input_messages.0.message.content": "Context: " + " ".join(docs),
                                     "llm.output_messages.0.message.content": answer}),
    ]


def _value(v):
    if isinstance(v, int):
        return {"int_value": str(v)}
    return {"string_value": v}


def _snake_otlp(spans, trace=TRACE):
    return {"resource_spans": [{"scope_spans": [{"spans": [
        {"trace_id": trace, "span_id": sid, **({"parent_span_id": parent} if parent else {}), "name": name,
         "start_time_unix_nano": str(1000 + i), "end_time_unix_nano": str(2000 + i), "status": {"code": 1},
         "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()]}
        for i, (sid, parent, name, attrs) in enumerate(spans)]}]}]}


def _phoenix_objects(spans, trace=TRACE):
    return [{"name": name, "context": {"trace_id": trace, "span_id": sid},
             "span_kind": attrs["openinference.span.kind"], "parent_id": parent,
             "start_time": f"2026-01-01T00:00:0{i}+00:00", "end_time": f"2026-01-01T00:00:0{i + 1}+00:00",
             "status_code": "OK", "status_message": "", "attributes": attrs, "events": []}
            for i, (sid, parent, name, attrs) in enumerate(spans)]


LABEL = {"query_id": "q1", "gold_spans": [{"id": "leave", "start": 10, "end": 30}], "correct": True}


@pytest.fixture
def labels(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(orjson.dumps(LABEL) + b"\n")
    return path


def test_snake_case_otlp_pretty_printed_is_detected_and_read(tmp_path, labels):
    path = tmp_path / "download.json"
    path.write_bytes(orjson.dumps(_snake_otlp(_spans()), option=orjson.OPT_INDENT_2))
    assert str(detect(path)) == "OTLP JSON (snake_case keys)"
    result = ingest_spans(path, labels=labels)
    assert [diagnose(t).stage.value for t in result.traces] == ["none"]
    assert result.read == [f"{path}: OTLP JSON (snake_case keys), 3 span(s)"]


def test_phoenix_span_objects_with_flattened_document_metadata(tmp_path, labels):
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in _phoenix_objects(_spans())))
    result = ingest_spans(path, labels=labels)
    assert detect(path).name == "phoenix-jsonl"
    (trace,) = result.traces
    assert trace.gold == ("d0",) and diagnose(trace).stage.value == "none"  # located by metadata.source
    listed = ingest_spans(_phoenix_objects(_spans()), labels=labels)  # client.spans.get_spans()'s list
    assert [t.gold for t in listed.traces] == [("d0",)]


def test_a_frame_at_the_client_limit_warns_and_a_cut_request_is_incomplete(labels, tmp_path):
    rows = []
    for obj in _phoenix_objects(_spans()):
        row = {"context.trace_id": TRACE, "context.span_id": obj["context"]["span_id"], "name": obj["name"],
               "span_kind": obj["span_kind"], "parent_id": obj["parent_id"], "start_time": obj["start_time"],
               "end_time": obj["end_time"], "status_code": "OK", "status_message": ""}
        row.update({f"attributes.{k}": v for k, v in obj["attributes"].items()})
        rows.append(row)
    cut = pd.DataFrame(rows[1:])  # the root fell outside the pull
    padding = pd.DataFrame([{**rows[0], "context.trace_id": f"{n + 2:032x}", "context.span_id": f"{n + 9:016x}",
                             "attributes.openinference.span.kind": "CHAIN"} for n in range(CLIENT_LIMIT - 2)])
    frame = pd.concat([cut, padding], ignore_index=True)
    result = ingest_spans(frame, labels=labels)
    assert result.traces == [] and list(result.incomplete) == [TRACE]
    assert any(f"exactly {CLIENT_LIMIT} spans" in w for w in result.warnings)
    assert "1 incomplete request(s) not written" in result.summary()
    pytest.importorskip("pyarrow")
    saved = tmp_path / "pull.parquet"  # the same pull saved as Parquet, read from its path
    frame.to_parquet(saved)
    assert [w for w in ingest_spans(saved, labels=labels).warnings
            if w.startswith(f"{saved}: ") and f"exactly {CLIENT_LIMIT} spans" in w]
    frame.iloc[1:].to_parquet(saved)
    assert not ingest_spans(saved, labels=labels).warnings


def test_a_fragment_with_no_stage_span_is_an_incomplete_request_not_other_work(labels):
    """A pull that kept only the last span of a request (its output parser, whose parent fell
    outside the limit) names that request as incomplete instead of skipping it as indexing."""
    parser = ("d" * 16, "a" * 16, "StrOutputParser", {"openinference.span.kind": "CHAIN"})
    indexing = ("e" * 16, None, "index", {"openinference.span.kind": "CHAIN"})
    result = ingest_spans(_phoenix_objects([parser]) + _phoenix_objects([indexing], trace="0" * 31 + "9"),
                          labels=labels)
    assert list(result.incomplete) == [TRACE] and result.skipped == ["0" * 31 + "9"]
    assert "1 parent span(s) not in the export" in result.incomplete[TRACE]
    assert "1 incomplete request(s) not written" in result.summary()


def test_a_span_list_at_the_list_api_limit_warns():
    objects = [obj for n in range(LIST_LIMIT // 3 + 1) for obj in _phoenix_objects(_spans(trace=f"{n:032x}"))]
    result = ingest_spans(objects[:LIST_LIMIT])
    assert [w for w in result.warnings if "get_spans:" in w and f"exactly {LIST_LIMIT} spans" in w]
    assert not ingest_spans(objects[:LIST_LIMIT - 1]).warnings
    assert limit_note(CLIENT_LIMIT - 1) is None and "get_spans_dataframe" in limit_note(CLIENT_LIMIT)


def test_two_runs_in_a_frame_name_the_frame(labels):
    objs = _phoenix_objects(_spans()) + _phoenix_objects(_spans(trace="0" * 31 + "2"), trace="0" * 31 + "2")
    frame = pd.DataFrame([{"context.trace_id": o["context"]["trace_id"], "context.span_id": o["context"]["span_id"],
                           **{k: o[k] for k in ("name", "span_kind", "parent_id", "start_time", "end_time",
                                                "status_code", "status_message")},
                           **{f"attributes.{k}": v for k, v in o["attributes"].items()}} for o in objs])
    with pytest.raises(SpanError, match="a Phoenix spans DataFrame, 6 span") as raised:
        ingest_spans(frame, labels=labels)
    assert "--split-runs" in str(raised.value) and "split_runs=True" in str(raised.value)


def test_a_folder_of_parquet_files_and_two_runs_in_one_export(tmp_path, labels):
    pytest.importorskip("pyarrow")
    folder = tmp_path / "pull"
    folder.mkdir()
    for n, trace in enumerate((TRACE, "0" * 31 + "2")):
        objs = _phoenix_objects(_spans(trace=trace), trace=trace)
        frame = pd.DataFrame([{"context.trace_id": o["context"]["trace_id"], "context.span_id": o["context"]["span_id"]
                               + "", "name": o["name"], "span_kind": o["span_kind"], "parent_id": o["parent_id"],
                               "start_time": pd.Timestamp(o["start_time"]) + pd.Timedelta(days=n),
                               "end_time": pd.Timestamp(o["end_time"]) + pd.Timedelta(days=n), "status_code": "OK",
                               "status_message": "", "attributes.openinference.span.kind": o["span_kind"],
                               **{f"attributes.{k}": str(v) for k, v in o["attributes"].items()}} for o in objs])
        frame.to_parquet(folder / f"part{n}.parquet")
    with pytest.raises(SpanError, match="--split-runs"):
        ingest_spans(folder, labels=labels)
    result = ingest_spans(folder, labels=labels, split_runs=True)
    assert [t.pipeline for t in result.traces] == ["default", "default#2"]


def test_foreign_conventions_are_named(tmp_path):
    spans = [("a" * 16, None, "openai.chat", {"gen_ai.system": "openai", "gen_ai.prompt.0.content": "hi"}),
             ("b" * 16, "a" * 16, "traceloop.task", {"traceloop.span.kind": "task"})]
    result = ingest_spans([_span_obj(s) for s in spans])
    assert result.traces == []
    (warning,) = result.warnings
    # the task span is read (OpenLLMetry) but is no request; the old-style gen_ai span is not read
    assert "OpenTelemetry GenAI (gen_ai.*) (not read)" in warning and "OpenLLMetry (traceloop.*) on 1" in warning
    path = tmp_path / "foreign.jsonl"
    path.write_bytes(orjson.dumps(_snake_otlp(spans)) + b"\n")
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--out",
                          str(tmp_path / "t.jsonl")], capture_output=True, text=True)
    assert run.returncode == 1 and "no request in a convention this reads" in run.stderr


def _span_obj(s, trace=TRACE):
    from ragstage.ingest import Span

    sid, parent, name, attrs = s
    return Span(trace_id=trace, span_id=sid, parent_id=parent, name=name, start_ns=1, end_ns=2, attributes=attrs)


@pytest.mark.parametrize("parents", [{"a": "a"}, {"a": "b", "b": "a"}])
def test_parent_loops_are_errors_not_hangs(parents):
    spans = [_span_obj((k * 16, v * 16, k, {"openinference.span.kind": "RETRIEVER"})) for k, v in parents.items()]
    with pytest.raises(SpanError, match="parent chain loops"):
        ingest_spans(spans)


def test_duplicate_span_ids_copies_read_once_and_conflicts_are_errors(labels):
    spans = [_span_obj(s) for s in _spans()]
    result = ingest_spans(spans + spans[1:2], labels=labels)
    assert result.traces[0].retrieved == ("d0",) and "copies" in result.traces[0].meta["ingest"]
    other = _span_obj(("b" * 16, "a" * 16, "other", {"openinference.span.kind": "RETRIEVER"}))
    with pytest.raises(SpanError, match="share span id"):
        ingest_spans(spans + [other])


@pytest.mark.parametrize("bad", [{"resourceSpans": ["x"]}, {"resourceSpans": [{"scopeSpans": [{"spans": [
    {"traceId": TRACE, "spanId": "a" * 16, "status": "ERROR"}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": TRACE, "spanId": "a" * 16, "status": {"code": 2},
                                                    "events": [{"name": "exception", "attributes": [{}]}]}]}]}]}])
def test_malformed_otlp_is_one_error_naming_file_and_line(tmp_path, bad):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(orjson.dumps(bad) + b"\n")
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--out",
                          str(tmp_path / "t.jsonl")], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert str(path) in run.stderr and "line 1" in run.stderr


@pytest.mark.parametrize("key, fault", [("retrieval.documents.\u00b2.document.id", "'\u00b2' is no list index"),
                                        (None, "share span id")])
def test_a_request_that_cannot_be_read_names_file_line_field_and_trace(tmp_path, key, fault):
    """An index of digits int() does not read, and two different spans with one id, end the ingest
    with one error naming the file, the line that completed the request, the field and the trace."""
    root = {"traceId": TRACE, "spanId": "a" * 16, "name": "root", "attributes": [
        {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}}]}
    child = {"traceId": TRACE, "spanId": "b" * 16 if key else "a" * 16, "parentSpanId": "a" * 16, "name": "r",
             "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]
             + ([{"key": key, "value": {"stringValue": "d1"}}] if key else [])}
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [s]}]}]})
                                for s in (root, child)) + b"\n")
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--out",
                          str(tmp_path / "t.jsonl")], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr and fault in run.stderr
    assert f"{path}, line 2, field '{key or 'span_id'}'" in run.stderr and f"trace {TRACE}" in run.stderr


def test_ten_thousand_retriever_spans_in_one_request_read_in_linear_time():
    def request(n):
        spans = [_span_obj(("f" * 16, None, "root", {"openinference.span.kind": "CHAIN"}))]
        spans += [_span_obj((f"{i + 1:016x}", "f" * 16, "r", {"openinference.span.kind": "RETRIEVER",
                                                             "retrieval.documents.0.document.id": f"d{i}"}))
                  for i in range(n)]
        start = time.perf_counter()
        ingest_spans(spans)
        return time.perf_counter() - start

    small, big = request(1000), request(10000)
    assert big < 30 * small + 1.0  # quadratic would be 100x


def test_doctor_reads_a_pipe_once(tmp_path, labels):
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"".join(orjson.dumps(_snake_otlp(_spans(trace=f"{n + 1:032x}", query_id=f"q{n}"),
                                                       trace=f"{n + 1:032x}")) + b"\n" for n in range(200)))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat {path} > {fifo}"])
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "doctor", str(fifo), "--format", "json",
                          "--recover-prompt"], capture_output=True, text=True, timeout=120)
    writer.wait(timeout=60)
    assert orjson.loads(run.stdout)["n"] == 200, run.stderr
