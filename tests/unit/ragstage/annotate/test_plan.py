"""The write-back's pure parts, without a server: the plan from the traces, the match of a
note to a trace's spans, bounded retries, the count, and the CLI's refusals and bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstage import __version__, diagnose
from ragstage.annotate import annotate_phoenix, plan
from ragstage.annotate.outcome import Outcome, retry, transient
from ragstage.annotate.phoenix import phoenix_rows
from ragstage.annotate.targets import match
from ragstage.ingest import Span
from ragstage.ingest.requests import content_id
from ragstage.trace import Trace, write_traces

TID = "ab" * 16


def _trace(qid: str, retrieved: list[str], reranked: list[str] | None, prompt: list[str], tid: str | None = TID,
           **extra: object) -> Trace:
    meta = {"ingest": {"trace_id": tid}} if tid else {}
    row = {"query_id": qid, "gold": ["g"], "retrieved": retrieved, "reranked": reranked, "prompt": prompt,
           "answer": "x", "correct": False, "meta": meta, **extra}
    return Trace.from_row(row)


def _span(sid: str, parent: str | None, kind: str, start: int, docs: list[str] | None = None,
          error: str | None = None, name: str = "") -> Span:
    attrs: dict[str, object] = {"openinference.span.kind": kind}
    prefix = "reranker.output_documents" if kind == "RERANKER" else "retrieval.documents"
    for i, d in enumerate(docs or []):
        if d.startswith("text:"):
            attrs[f"{prefix}.{i}.document.content"] = d[5:]
        else:
            attrs[f"{prefix}.{i}.document.id"] = d
            attrs[f"{prefix}.{i}.document.content"] = f"passage {d}"
    return Span(TID, sid, parent, name or sid, start, start + 10, attrs, error)


def test_plan_keeps_the_diagnosis_and_refuses_traces_without_a_source_id():
    traces = [_trace("lost", ["a", "b"], None, ["a"]), _trace("bare", ["g"], None, ["g"], tid=None)]
    out = plan(traces)
    assert out.refused == ["bare"]
    (note,) = out.notes
    d = diagnose(traces[0])
    assert (note.bucket, note.reason, note.code, note.trace_id) == (d.stage.value, d.reason, d.code, TID)
    assert note.metadata()["ragstage_version"] == __version__ and note.losing_kind == "RETRIEVER"
    assert note.metadata()["recall"] == d.recall == 0.0


def test_match_puts_a_retrieval_loss_on_the_innermost_retrievers_and_finds_gold_positions():
    note = plan([_trace("lost", ["a", "b"], None, ["a"])]).notes[0]
    spans = [_span("root", None, "CHAIN", 0), _span("wrap", "root", "RETRIEVER", 1, ["b", "g"]),
             _span("bm25", "wrap", "RETRIEVER", 2, ["a", "g", "b"]), _span("llm", "root", "LLM", 5)]
    t = match(note, spans)
    assert t.root == "root" and t.losing == ("bm25",)
    assert t.gold_positions == (("wrap", "RETRIEVER", 1, "g"), ("bm25", "RETRIEVER", 1, "g"))


def test_match_reranking_prefers_a_reranker_span_else_the_wrapping_retriever():
    note = plan([_trace("cut", ["g", "a"], ["a"], ["a"])]).notes[0]
    assert note.bucket == "reranking"
    wrapped = [_span("root", None, "CHAIN", 0), _span("wrap", "root", "RETRIEVER", 1, ["a"]),
               _span("bm25", "wrap", "RETRIEVER", 2, ["g", "a"])]
    assert match(note, wrapped).losing == ("wrap",)
    reranker = [_span("root", None, "CHAIN", 0), _span("bm25", "root", "RETRIEVER", 1, ["g", "a"]),
                _span("rr", "root", "RERANKER", 3, ["a"])]
    assert match(note, reranker).losing == ("rr",)


def test_match_a_service_failure_names_the_innermost_failing_span():
    note = plan([_trace("down", [], None, [], error={"stage": "generation", "message": "503"})]).notes[0]
    assert note.bucket == "endpoint_unavailable"
    spans = [_span("root", None, "CHAIN", 0, error="503"), _span("llm", "root", "LLM", 2, error="503"),
             _span("ret", "root", "RETRIEVER", 1, ["a"])]
    assert match(note, spans).losing == ("llm",)


def test_match_derives_ids_of_documents_without_one_as_ingest_does():
    cid = content_id("the gold passage")
    note = plan([_trace("lost", ["a"], None, ["a"], gold=[cid])]).notes[0]
    t = match(note, [_span("r", None, "RETRIEVER", 0, ["text:other", "text:the gold passage"])])
    assert t.gold_positions == (("r", "RETRIEVER", 1, cid),) and match(note, []) is None


def test_phoenix_rows_root_and_losing_span_and_one_document_row_per_gold_position():
    note = plan([_trace("lost", ["a", "b"], None, ["a"])]).notes[0]
    t = match(note, [_span("root", None, "CHAIN", 0), _span("bm25", "root", "RETRIEVER", 1, ["a", "g"])])
    spans, docs = phoenix_rows(note, t)
    assert [r["span_id"] for r in spans] == ["root", "bm25"]
    assert {r["label"] for r in spans} == {"retrieval"} and {r["identifier"] for r in spans} == {"ragstage"}
    assert [(r["span_id"], r["document_position"], r["label"]) for r in docs] == [("bm25", 1, "gold")]


class _Down(Exception):
    """Named like httpx's transport error."""


_Down.__name__ = "ConnectError"


def test_transient_errors():
    class Reply:
        def __init__(self, status: int) -> None:
            self.status_code = status

    class HTTPError(Exception):
        def __init__(self, status: int) -> None:
            self.response = Reply(status)

    assert transient(ConnectionError()) and transient(_Down()) and transient(HTTPError(503))
    assert transient(HTTPError(429)) and not transient(HTTPError(404)) and not transient(ValueError())


@given(failures=st.integers(0, 6), attempts=st.integers(1, 5))
def test_retry_tries_at_most_attempts_times_with_doubling_pauses(failures, attempts):
    calls, pauses = [], []

    def call(x: int) -> int:
        calls.append(x)
        if len(calls) <= failures:
            raise ConnectionError("down")
        return x

    if failures < attempts:
        assert retry(call, 7, attempts=attempts, pause=0.5, sleep=pauses.append) == 7
    else:
        with pytest.raises(ConnectionError):
            retry(call, 7, attempts=attempts, pause=0.5, sleep=pauses.append)
    assert len(calls) == min(failures + 1, attempts)
    assert pauses == [0.5 * 2 ** i for i in range(len(calls) - 1)]


def test_retry_does_not_repeat_a_permanent_error():
    calls = []

    def call() -> None:
        calls.append(1)
        raise ValueError("bad id")

    with pytest.raises(ValueError):
        retry(call, attempts=5, sleep=lambda _: None)
    assert calls == [1]
    with pytest.raises(ValueError, match="at least 1"):
        retry(call, attempts=0)


class _Spans:
    """A Phoenix client's ``spans`` that is down for the first ``down`` calls and records writes."""

    def __init__(self, down: int, spans: list[dict]) -> None:
        self.down, self.spans, self.calls, self.written = down, spans, 0, []

    def get_spans(self, **kwargs: object) -> list[dict]:
        self.calls += 1
        if self.calls <= self.down:
            raise _Down("connection refused")
        return self.spans

    def log_span_annotations_dataframe(self, **kwargs: object) -> None:
        self.written.append(kwargs)

    log_document_annotations_dataframe = log_span_annotations_dataframe

    def get_span_annotations(self, **kwargs: object) -> list[dict]:
        return []


class _Client:
    def __init__(self, spans: _Spans) -> None:
        self.spans = spans


SPANS = [{"name": "root", "context": {"trace_id": TID, "span_id": "1" * 16}, "parent_id": None, "span_kind": "CHAIN",
          "start_time": "2026-01-01T00:00:00+00:00", "end_time": "2026-01-01T00:00:01+00:00", "status_code": "OK",
          "status_message": "", "attributes": {"openinference.span.kind": "CHAIN"}, "events": []}]


def test_a_server_down_is_retried_then_counted_and_dry_run_writes_nothing():
    traces = [_trace("lost", ["a"], None, ["a"])]
    down = _Spans(down=99, spans=SPANS)
    out = annotate_phoenix(_Client(down), traces, "p", attempts=3, pause=0)
    assert down.calls == 3 and list(out.failed) == ["lost"] and not out.complete
    assert "1 trace(s) not written after retries" in out.summary() and "0 written, 1 not written" in out.summary()
    flaky = _Spans(down=2, spans=SPANS)
    out = annotate_phoenix(_Client(flaky), traces, "p", attempts=3, pause=0)
    assert out.complete and out.written == ["lost"] and len(flaky.written) == 1
    dry = _Spans(down=0, spans=SPANS)
    out = annotate_phoenix(_Client(dry), traces, "p", dry_run=True)
    assert out.written == ["lost"] and dry.written == [] and "would write" in out.summary()
    unknown = _Spans(down=0, spans=[])
    out = annotate_phoenix(_Client(unknown), traces, "p")
    assert out.unknown == ["lost"] and unknown.written == []


def test_outcome_summary_counts_everything_not_written():
    out = Outcome("x", written=["a"], refused=["b", "c"], unknown=["d"], failed={"e": "boom"})
    assert not out.complete
    assert "1 written, 4 not written" in out.summary() and "2 trace(s) refused" in out.summary()


def _cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", "annotate", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_cli_refuses_traces_without_a_source_id_before_any_call(tmp_path):
    path = tmp_path / "traces.jsonl"
    write_traces(path, [_trace("bare", ["g"], None, ["g"], tid=None)])
    run = _cli("mlflow", path, "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}")
    assert run.returncode == 1 and "1 trace(s) refused: no source trace id" in run.stderr
    assert "0 written, 1 not written" in run.stderr and "Traceback" not in run.stderr


def test_cli_bad_traces_file_exits_2_naming_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query_id": "q"}\n{"gold": 3}\n', encoding="utf-8")
    run = _cli("phoenix", path, "--url", "http://127.0.0.1:9", "--project", "p")
    assert run.returncode == 2 and str(path) in run.stderr and "line 2" in run.stderr
    assert "Traceback" not in run.stderr


def test_cli_names_a_missing_client_library(tmp_path):
    """With ``mlflow`` hidden from the import system, the command says what to install (exit 2)."""
    path = tmp_path / "traces.jsonl"
    write_traces(path, [_trace("q", ["g"], None, ["g"])])
    argv = ["ragstage", "annotate", "mlflow", str(path), "--tracking-uri", "sqlite:///x.db"]
    hide = (f"import sys, runpy; sys.modules['mlflow'] = None; sys.argv = {argv!r}; "
            "runpy.run_module('ragstage.cli', run_name='__main__')")
    run = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "needs mlflow" in run.stderr and "Traceback" not in run.stderr
