"""Haystack under its OpenInference instrumentor, offline: each request loses its evidence at a
known stage and must land in that bucket with default options (``tests/stack_apps.py``).

What the defaults must get right for Haystack: chunk offsets in ``split_idx_start`` and the
parent document in ``source_id``; a ``PromptBuilder`` span (reported as LLM) read as prompt
assembly, so a template that slices the documents is a prompt-assembly loss; a failure recorded
on the pipeline's CHAIN span; a gold span straddling two chunks counted as partial coverage.
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

pytest.importorskip("haystack")
pytest.importorskip("openinference.instrumentation.haystack")

from stack_apps import HAYSTACK_CASES, HaystackApp, labels  # noqa: E402

from ragstage import diagnose  # noqa: E402
from ragstage.ingest import ChunkKeys, ingest_spans, otlp_file_exporter  # noqa: E402

EXPECTED = {c.query_id: c.expected for c in HAYSTACK_CASES}


@pytest.fixture(scope="module")
def haystack_run(tmp_path_factory):
    from openinference.instrumentation.haystack import HaystackInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    folder = tmp_path_factory.mktemp("haystack")
    memory, path = InMemorySpanExporter(), folder / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(otlp_file_exporter(path)))
    instrumentor = HaystackInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        app = HaystackApp()
        for case in HAYSTACK_CASES:
            app.ask(case)
    finally:
        instrumentor.uninstrument()
    label_path = folder / "labels.jsonl"
    label_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels(HAYSTACK_CASES)))
    text_path = folder / "labels_by_text.jsonl"
    text_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels(HAYSTACK_CASES, by_text=True)))
    return list(memory.get_finished_spans()), path, label_path, text_path


def _buckets(result):
    return {t.query_id: diagnose(t).stage.value for t in result.traces}


@pytest.mark.parametrize("source", ["memory", "otlp"])
def test_haystack_requests_land_in_their_buckets_with_default_options(haystack_run, source):
    spans, path, label_path, _ = haystack_run
    result = ingest_spans(spans if source == "memory" else path, labels=label_path)
    by_question = {t.query: t for t in result.traces}
    got = {c.query_id: diagnose(by_question[c.question]).stage.value for c in HAYSTACK_CASES}
    assert got == EXPECTED
    assert not result.unlocated and not result.incomplete and not result.unmatched_labels
    straddle = by_question[next(c.question for c in HAYSTACK_CASES if c.query_id == "straddle")]
    assert "partial_coverage" in straddle.meta["ingest"]
    assert diagnose(straddle).reason.startswith("truncated")
    sliced = by_question[next(c.question for c in HAYSTACK_CASES if c.query_id == "sliced")]
    assert "prompt-builder" in sliced.meta["ingest"]["prompt"]


def test_labels_by_question_text_get_an_id_that_pairs_across_runs(haystack_run):
    spans, _, _, text_path = haystack_run
    # query_id_key names a key the spans lack: a system that logs no question ids
    first = ingest_spans(spans, labels=text_path, query_id_key="qid")
    again = ingest_spans(spans, labels=text_path, query_id_key="qid", pipeline="again")
    ids = sorted(t.query_id for t in first.traces)
    assert ids == sorted(t.query_id for t in again.traces)
    assert all(i.startswith("q-") for i in ids)  # never the trace id, which differs in every run
    assert {c.question for c in HAYSTACK_CASES} == {t.query for t in first.traces}


def test_wrong_chunk_keys_are_loud_and_the_doctor_does_not_call_them_attributable(haystack_run, tmp_path):
    _, path, label_path, _ = haystack_run
    result = ingest_spans(path, labels=label_path, chunk_keys=ChunkKeys(doc=("file",), start=("offset",)))
    assert len(result.unlocated) == len(HAYSTACK_CASES) - 1  # all but the request that failed before retrieval
    # no chunk located: no stage can be shown to have lost the evidence, so none is blamed
    assert {diagnose(t).stage.value for t in result.traces} == {"label_missing", "endpoint_unavailable"}
    summary = result.summary()
    assert f"{len(result.unlocated)} of {len(result.traces)} labelled request(s)" in summary
    assert "stage cannot be observed" in summary and "not as a retrieval loss" in summary
    assert "source_id" in summary and "split_idx_start" in summary  # the metadata keys seen
    cli = [sys.executable, "-m", "ragstage.cli"]
    doctor = subprocess.run(cli + ["doctor", str(path), "--labels", str(label_path), "--doc-key", "file",
                                   "--start-key", "offset", "--format", "json"], capture_output=True, text=True)
    report = orjson.loads(doctor.stdout)
    assert doctor.returncode == 1 and report["attributable"] < report["n"]
    assert any(p["name"] == "labels located in no chunk" and p["blocking"] for p in report["problems"])
    strict = subprocess.run(cli + ["ingest", "spans", str(path), "--labels", str(label_path), "--doc-key", "file",
                                   "--out", str(tmp_path / "t.jsonl"), "--strict"], capture_output=True, text=True)
    assert strict.returncode == 1 and "stage cannot be observed" in strict.stderr


def test_cli_says_which_format_it_read(haystack_run, tmp_path):
    _, path, label_path, _ = haystack_run
    out = tmp_path / "traces.jsonl"
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--labels",
                          str(label_path), "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert f"read {path}: OTLP JSON (camelCase keys)" in run.stderr
