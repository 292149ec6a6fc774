"""``ragstage annotate mlflow`` against a real MLflow 3 store (local SQLite), offline.

Chapter 7's LangChain app under ``mlflow.langchain.autolog()``; ingest reads the traces back,
``ragstage annotate mlflow`` writes each request's ``ragstage`` feedback and ``ragstage_gold``
expectation, and every trace's assessments are read back with ``mlflow.get_trace``: bucket,
reason, the losing stage's span, the gold ids and positions. A re-run leaves one of each; an
assessment someone else logged is untouched; ``--dry-run`` writes nothing; a trace without a
source trace id is refused with a count. Skipped locally without MLflow; a failure on CI.
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from browser_helpers import in_ci

try:
    import langchain_community  # noqa: F401
    import mlflow
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    if in_ci():
        raise
    pytest.skip(f"annotate mlflow tests need mlflow and langchain-community ({exc})", allow_module_level=True)

from ingest_apps import LangChainApp  # noqa: E402
from stack_apps import CASES, labels, mlflow_ask  # noqa: E402

from ragstage import diagnose  # noqa: E402
from ragstage.annotate import annotate_mlflow  # noqa: E402
from ragstage.annotate.mlflow import mlflow_trace_id  # noqa: E402
from ragstage.annotate.plan import GOLD_NAME, LOSING_KIND, NAME  # noqa: E402
from ragstage.ingest import ingest_spans  # noqa: E402
from ragstage.trace import Trace, read_traces, write_traces  # noqa: E402

EXPECTED = {c.query_id: c.expected for c in CASES}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A SQLite store holding the app's requests, and the traces ingest read from it."""
    folder = tmp_path_factory.mktemp("annotate-mlflow")
    patch = pytest.MonkeyPatch()
    patch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    experiment = mlflow.create_experiment("rag", artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=experiment)
    mlflow.langchain.autolog()
    try:
        app = LangChainApp()
        for case in CASES:
            mlflow_ask(app, case)
        found = mlflow.search_traces(experiment_ids=[experiment], return_type="list")
    finally:
        mlflow.langchain.autolog(disable=True)
        patch.undo()
    label_path = folder / "labels.jsonl"
    label_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels(CASES)))
    result = ingest_spans(found, labels=label_path)
    assert {t.query_id: diagnose(t).stage.value for t in result.traces} == EXPECTED
    path = folder / "traces.jsonl"
    write_traces(path, result.traces)
    return uri, path


def _cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", "annotate", "mlflow", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def _ours(uri: str, trace: Trace) -> list:
    from mlflow.tracing.client import TracingClient

    got = TracingClient(uri).get_trace(mlflow_trace_id(trace.meta["ingest"]["trace_id"]))
    return [a for a in got.info.assessments if a.name in (NAME, GOLD_NAME)], got


def test_dry_run_writes_nothing(store):
    uri, path = store
    run = _cli(path, "--tracking-uri", uri, "--dry-run")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("would write: ") == len(EXPECTED)
    assert all(_ours(uri, t)[0] == [] for t in read_traces(path))


def _check(uri: str, path) -> None:
    for trace in read_traces(path):
        d = diagnose(trace)
        mine, got = _ours(uri, trace)
        feedback = [a for a in mine if a.name == NAME]
        gold = [a for a in mine if a.name == GOLD_NAME]
        assert len(feedback) == 1, (trace.query_id, mine)
        (fb,) = feedback
        assert fb.value == EXPECTED[trace.query_id] == d.stage.value
        assert fb.rationale == (d.reason or f"bucket {d.stage.value}")
        assert fb.metadata["code"] == d.code and fb.source.source_type == "CODE"
        spans = {s.span_id: s for s in got.data.spans}
        kind = LOSING_KIND.get(d.stage.value)
        if kind == "RETRIEVER":
            assert spans[fb.span_id].name == "BM25Retriever"
        elif kind == "RERANKER":  # LangChain's reranker: a retriever wrapping BM25Retriever
            assert spans[fb.span_id].name == "OverlapReranker"
        elif kind == "LLM":
            assert spans[fb.span_id].span_type in ("CHAT_MODEL", "LLM")
        elif d.stage.value == "endpoint_unavailable":
            assert spans[fb.span_id].status.status_code.value == "ERROR"
        else:
            assert fb.span_id is None
        assert len(gold) == (1 if trace.gold else 0)
        if gold:
            value = gold[0].value
            assert value["gold"] == list(trace.gold)
            for where in value["positions"]:  # each position names a gold document at that rank
                outputs = spans[where["span_id"]].outputs
                doc = outputs[where["rank"] - 1]
                assert where["document_id"] in trace.gold
                assert f"{doc['metadata']['source']}@{doc['metadata']['start_index']}" == where["document_id"]
            assert bool(value["positions"]) == bool(set(trace.gold) & set(trace.retrieved))


def test_annotate_writes_every_request_and_reads_back(store):
    uri, path = store
    run = _cli(path, "--tracking-uri", uri)
    assert run.returncode == 0, run.stderr
    assert f"{len(EXPECTED)} written, 0 not written" in run.stderr
    _check(uri, path)


def test_rerun_replaces_ours_and_leaves_others(store):
    uri, path = store
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.tracing.client import TracingClient

    client = TracingClient(uri)
    first = next(iter(read_traces(path)))
    tid = mlflow_trace_id(first.meta["ingest"]["trace_id"])
    human = client.log_assessment(tid, Feedback(name=NAME, value="looks fine", source=AssessmentSource(
        source_type="HUMAN", source_id="reviewer@example.com")))
    outcome = annotate_mlflow(read_traces(path), client)
    assert outcome.complete and len(outcome.written) == len(EXPECTED)
    outcome = annotate_mlflow(read_traces(path), tracking_uri=uri)
    assert outcome.complete
    kept = [a for a in client.get_trace(tid).info.assessments if a.assessment_id == human.assessment_id]
    assert len(kept) == 1 and kept[0].value == "looks fine"
    client.delete_assessment(tid, human.assessment_id)
    _check(uri, path)


def test_refused_and_unknown_traces_are_counted(store, tmp_path):
    uri, path = store
    traces = list(read_traces(path))
    bare = Trace.from_row({**traces[0].to_dict(), "meta": {}})
    ghost = Trace.from_row({**traces[1].to_dict(), "meta": {"ingest": {"trace_id": "f" * 32}}})
    mixed = tmp_path / "mixed.jsonl"
    write_traces(mixed, [bare, ghost])
    run = _cli(mixed, "--tracking-uri", uri)
    assert run.returncode == 1
    assert "1 trace(s) refused: no source trace id" in run.stderr
    assert "1 trace(s) not written: the server has no trace with their id" in run.stderr
    assert "0 written, 2 not written" in run.stderr and "Traceback" not in run.stderr
    assert run.stdout == ""  # nothing claimed as written
