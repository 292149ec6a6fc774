"""The doctor, the trace logger, and the ingest and doctor commands run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from repo_paths import REPO

from ragstage import Trace, diagnose, read_traces
from ragstage.ingest.doctor import examine
from ragstage.ingest.tracelog import TraceLogger, redact_digest

SPANS = REPO / "fixtures" / "ingest" / "langchain_spans.jsonl"
LABELS = REPO / "fixtures" / "ingest" / "labels.jsonl"


def _field(report, name):
    return next(f for f in report.fields if f.name == name)


def test_doctor_counts_missing_fields_and_blocks():
    full = Trace(query_id="a", query="q", retrieved=("d1",), retrieved_scores=(1.0,), retrieved_sections=("s",),
                 reranked=("d1",), prompt=("d1",), prompt_source="logged", answer="x", model="m", prompt_version="v",
                 gold=("d1",), timestamp="2025-01-01T00:00:00Z", correct=True)
    bare = Trace(query_id="b", retrieved=("d1", "d1"))
    failed = Trace(query_id="c", error={"stage": "retrieval", "message": "down"})
    report = examine([full, bare, failed])
    assert _field(report, "prompt").count == 2 and _field(report, "gold").count == 2
    assert _field(report, "retrieved.score").count == 1 and _field(report, "timestamp").count == 2
    assert report.attributable == 2 and report.blocked  # `bare` lacks gold and prompt; `failed` is attributed
    assert {p.name for p in report.problems} == {"duplicate ids"}
    assert not examine([full]).blocked and examine([full]).problems == []


def test_doctor_shape_problems():
    outside = Trace(query_id="a", retrieved=("d1",), prompt=("d9",), gold=("d1",))
    unjudged = Trace(query_id="b", retrieved=("d1",), prompt=("d1",), gold=("d1",), answer="x")
    names = {p.name: p.examples for p in examine([outside, unjudged]).problems}
    assert names == {"prompt ids outside the ranked list": ["a"], "answer never judged": ["b"]}


def test_doctor_tells_a_cut_passage_from_a_gold_span_only_partly_in_the_prompt():
    cut = Trace(query_id="a", retrieved=("d1",), prompt=("d1",), truncated=("d1",), gold=("d1",), correct=False)
    straddling = cut.replace(query_id="b", meta={"ingest": {"partial_coverage": "d1#0-40: 20 of 40 characters"}})
    problems = {p.name: p for p in examine([cut, straddling]).problems}
    assert problems["passage truncated in the prompt"].examples == ["a"]
    assert problems["gold span only partly in the prompt"].examples == ["b"]
    assert "prompt assembly" in problems["gold span only partly in the prompt"].impact


def test_logger_writes_valid_traces_and_redacts(tmp_path):
    path = tmp_path / "logs" / "traces.jsonl"
    log = TraceLogger(path, pipeline="p", model="m", prompt_version="v1", redact=True, redact_key="k")
    log.log(query_id="q1", query="secret question", retrieved=[("d1", 0.9, "intro"), ("d2", 0.5)],
            prompt=["d1"], answer="secret answer", gold=["d1"], correct=True)
    (trace,) = read_traces(path)
    assert trace.query == redact_digest("secret question", "k") and "secret" not in path.read_text()
    assert trace.retrieved_sections == ("intro", None) and trace.prompt_source == "logged" and trace.timestamp
    assert diagnose(trace).stage.value == "none"
    with pytest.raises(ValueError, match="already logged"):
        log.log(query_id="q1", query="q", retrieved=[], prompt=None, answer="")
    with pytest.raises(Exception, match="gold"):
        log.log(query_id="q2", query="q", retrieved=[], prompt=None, answer="", gold="d1")


def test_logger_lines_from_many_threads_stay_whole(tmp_path):
    path = tmp_path / "traces.jsonl"
    log = TraceLogger(path)

    def work(k):
        for i in range(50):
            log.log(query_id=f"{k}-{i}", query="q" * 500, retrieved=["d"] * 3, prompt=["d"], answer="a" * 2000)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(list(read_traces(path))) == 200


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_cli_ingest_then_attribute_and_doctor(tmp_path):
    out = tmp_path / "traces.jsonl"
    run = _cli("ingest", "openinference", SPANS, "--labels", LABELS, "--judge", "contains", "--out", out)
    assert run.returncode == 0, run.stderr
    assert "wrote 7 trace(s)" in run.stderr and "1 label(s) matched no request: 'ghost'" in run.stderr
    buckets = {t.query_id: diagnose(t).stage.value for t in read_traces(out)}
    assert buckets == {"weeks": "none", "hotel": "generation", "login": "retrieval", "flights": "reranking",
                       "laptops-evict": "prompt_assembly", "laptops-cut": "prompt_assembly",
                       "down": "endpoint_unavailable"}
    doctor = _cli("doctor", out, "--format", "json")
    assert doctor.returncode == 0, doctor.stderr
    report = json.loads(doctor.stdout)
    assert report["attributable"] == 7 and report["prompt_sources"] == {"recovered": 6, "not logged": 1}


def test_cli_doctor_on_raw_spans_blocks_until_prompt_ids_are_recovered():
    raw = _cli("doctor", SPANS, "--labels", LABELS)
    assert raw.returncode == 1 and "prompt *" in raw.stdout and "--recover-prompt" in raw.stdout
    recovered = _cli("doctor", SPANS, "--labels", LABELS, "--recover-prompt")
    assert recovered.returncode == 0 and "attributable: 7 of 7" in recovered.stdout


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "spans.jsonl"
    bad.write_text('{"resourceSpans": []}\nnot json\n')
    run = _cli("ingest", "openinference", bad, "--out", tmp_path / "t.jsonl")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"{bad}, line 2" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"query_id": "q", "gold_spans": [{"id": "d", "start": 1}]}\n')
    run = _cli("ingest", "openinference", SPANS, "--labels", labels, "--out", tmp_path / "t.jsonl")
    assert run.returncode == 2 and "line 1, field 'gold_spans'" in run.stderr


def test_cli_ingest_ragas(tmp_path):
    samples = tmp_path / "ragas.jsonl"
    samples.write_text(json.dumps({"user_input": "q?", "retrieved_contexts": ["a b c"], "reference_contexts": ["a b c"],
                                   "response": "x"}) + "\n")
    run = _cli("ingest", "ragas", samples, "--out", tmp_path / "t.jsonl")
    assert run.returncode == 0 and "assumed: every retrieved context reached the prompt" in run.stderr
    (trace,) = read_traces(tmp_path / "t.jsonl")
    assert trace.gold == trace.prompt == trace.retrieved


QUESTION = "What is the  capital of France?"
ANSWER = "Paris [1] is the capital"


def test_redaction_reaches_every_copy_of_query_and_answer(tmp_path):
    """Before: the query and answer stayed readable in meta, error.message and section names."""
    path = tmp_path / "traces.jsonl"
    log = TraceLogger(path, redact=True, redact_key=b"team secret")
    log.log(query_id="q1", query=QUESTION, answer=ANSWER, prompt=["d1"], gold=["d1"], correct=True,
            retrieved=[("d1", 0.9, f"FAQ: {QUESTION.lower()}"), ("d2", 0.5, "intro")],
            reranked=[("d1", 0.8, "Q: what is the capital of france?")],
            error={"stage": "generation", "message": f"timeout after '{ANSWER}'"},
            meta={"raw": {"question": QUESTION.upper(), "history": [ANSWER, "other"]},
                  QUESTION: "used as a key", "kept": "capitalised"})
    text = path.read_text()
    for needle in ("capital of france", "paris [1]"):
        assert needle not in text.lower()
    (trace,) = read_traces(path)
    digest = redact_digest(QUESTION, b"team secret")
    assert trace.query == digest and trace.retrieved_sections == (f"FAQ: {digest}", "intro")
    assert trace.meta["kept"] == "capitalised" and trace.meta["redacted"] == ["query", "answer"]
    assert trace.error == {"stage": "generation", "message": f"timeout after '{redact_digest(ANSWER, b'team secret')}'"}
    report = examine([trace])
    assert [p.name for p in report.problems if "redacted" in p.name] == ["query and answer redacted"]


def test_redaction_digest_is_keyed(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGSTAGE_REDACT_KEY", raising=False)
    with pytest.raises(ValueError, match="secret key"):
        TraceLogger(tmp_path / "t.jsonl", redact=True)
    monkeypatch.setenv("RAGSTAGE_REDACT_KEY", "from-env")
    log = TraceLogger(tmp_path / "t.jsonl", redact=True)
    trace = log.log(query_id="a", query="is it safe?", retrieved=[], prompt=None, answer="")
    assert trace.query == redact_digest("is it safe?", "from-env") != redact_digest("is it safe?", "other")
    import hashlib
    import hmac
    assert trace.query == "hmac-sha256:" + hmac.new(b"from-env", b"is it safe?", hashlib.sha256).hexdigest()[:32]
    assert hashlib.sha256(b"is it safe?").hexdigest()[:16] not in trace.query  # the old unkeyed digest


def test_logger_starts_a_new_trace_on_a_clean_line_after_a_torn_tail(tmp_path):
    """Before: the next trace was glued onto the fragment a killed writer left, and lost with it."""
    path = tmp_path / "traces.jsonl"
    log = TraceLogger(path)
    log.log(query_id="a", query="q", retrieved=["d"], prompt=["d"], answer="x")
    with open(path, "ab") as handle:
        handle.write(b'{"query_id": "killed", "que')
    with pytest.warns(UserWarning, match="torn last line"):
        TraceLogger(path).log(query_id="b", query="q", retrieved=["d"], prompt=["d"], answer="y")
    assert [t.query_id for t in read_traces(path)] == ["a", "b"]


def test_logger_refuses_non_finite_scores_naming_the_field(tmp_path):
    log = TraceLogger(tmp_path / "t.jsonl")
    for bad in (float("nan"), float("inf"), -float("inf"), 10**400):
        with pytest.raises(ValueError, match="field 'retrieved'.*finite"):
            log.log(query_id=f"q{bad}", query="q", retrieved=[("d", bad)], prompt=None, answer="")
    assert not (tmp_path / "t.jsonl").exists()
