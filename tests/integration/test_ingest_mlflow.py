"""MLflow Tracing, offline: chapter 7's LangChain app under ``mlflow.langchain.autolog()`` into a
local SQLite store, read back every way MLflow hands traces out, each with default options.

Routes: the ``search_traces()`` DataFrame, that frame saved as Parquet (through the CLI), the
list of ``Trace`` objects, ``Trace.to_json()`` lines, and MLflow's own OpenTelemetry spans
written as OTLP (``mlflow.spanType`` and JSON-text inputs and outputs). Each request loses its
evidence at a known stage and must land in that bucket.
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

mlflow = pytest.importorskip("mlflow")
pytest.importorskip("langchain_community")

from stack_apps import CASES, labels, langchain_ask, mlflow_ask, mlflow_record  # noqa: E402

from ragstage import diagnose  # noqa: E402
from ragstage.ingest import ingest_spans, write_otlp_json  # noqa: E402

EXPECTED = {c.query_id: c.expected for c in CASES}


def _record(folder, ask):
    """Every case asked under ``mlflow.langchain.autolog()``; the frame, the ``Trace`` objects, the labels."""
    frame, traces = mlflow_record(folder, ask, CASES)
    label_path = folder / "labels.jsonl"
    label_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels(CASES)))
    return folder, frame, traces, label_path


@pytest.fixture(scope="module")
def mlflow_run(tmp_path_factory):
    return _record(tmp_path_factory.mktemp("mlflow"), mlflow_ask)


@pytest.fixture(scope="module")
def mlflow_run_metadata(tmp_path_factory):
    """The question id passed the LangChain way, ``config={"metadata": {...}}``, no MLflow call."""
    return _record(tmp_path_factory.mktemp("mlflow_metadata"), langchain_ask)


def _buckets(result):
    return {t.query_id: diagnose(t).stage.value for t in result.traces}


def test_search_traces_dataframe(mlflow_run):
    _, frame, _, label_path = mlflow_run
    result = ingest_spans(frame, labels=label_path)
    assert _buckets(result) == EXPECTED
    assert result.read == [f"an MLflow search_traces DataFrame, {len(CASES)} trace(s)"]
    assert not result.incomplete and not result.unlocated and not result.warnings


def test_trace_objects_and_their_json_lines(mlflow_run):
    folder, _, traces, label_path = mlflow_run
    assert _buckets(ingest_spans(traces, labels=label_path)) == EXPECTED
    path = folder / "traces.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
    result = ingest_spans(path, labels=label_path)
    assert _buckets(result) == EXPECTED and "MLflow traces" in result.read[0]


def test_saved_frame_through_the_cli(mlflow_run, tmp_path):
    _, frame, _, label_path = mlflow_run
    parquet = tmp_path / "traces.parquet"
    frame.to_parquet(parquet)
    out = tmp_path / "out.jsonl"
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(parquet), "--labels",
                          str(label_path), "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "an MLflow search_traces frame (Parquet)" in run.stderr
    from ragstage.trace import read_traces

    assert {t.query_id: diagnose(t).stage.value for t in read_traces(out)} == EXPECTED


def test_mlflow_spans_sent_as_otlp(mlflow_run, tmp_path):
    """The trace metadata (the question id) is not on the spans: labels match by question text."""
    _, _, traces, _ = mlflow_run
    path, text_labels = tmp_path / "otlp.jsonl", tmp_path / "labels.jsonl"
    for trace in traces:  # MLflow's spans are OpenTelemetry spans underneath
        write_otlp_json(path, [span._span for span in trace.data.spans])
    text_labels.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels(CASES, by_text=True)))
    result = ingest_spans(path, labels=text_labels)
    assert {t.query: diagnose(t).stage.value for t in result.traces} == {c.question: c.expected for c in CASES}


def test_failure_message_is_one_line(mlflow_run):
    _, frame, _, label_path = mlflow_run
    failing = next(t for t in ingest_spans(frame, labels=label_path).traces if t.query_id == "failing")
    assert failing.error["message"] == "DownRetriever: ConnectionError: search index unreachable" or (
        "\n" not in failing.error["message"] and "Traceback" not in failing.error["message"])


@pytest.mark.parametrize("route", ["frame", "objects"])
def test_langchain_run_metadata_carries_the_question_id(mlflow_run_metadata, route):
    """MLflow records LangChain's run metadata as the span attribute ``metadata`` (JSON text): the
    question id set there is read, every label matches its request."""
    _, frame, traces, label_path = mlflow_run_metadata
    result = ingest_spans(frame if route == "frame" else traces, labels=label_path)
    assert _buckets(result) == EXPECTED
    assert not result.unmatched_labels
