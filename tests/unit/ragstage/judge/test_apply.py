"""apply_labels: gold replaced by the labels', the old verdict dropped, who labelled recorded,
and every mismatch refused by file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragstage.attribution import diagnose
from ragstage.errors import TraceError
from ragstage.ingest.gold import NO_RELEVANT, read_labels
from ragstage.judge.apply import apply_labels
from ragstage.judge.notice import silver_note, silver_summary
from ragstage.trace import Trace

JUDGE = {"name": "j", "model": "m", "prompt": "p", "prompt_sha256": "s"}


def _trace(qid: str, **kw) -> Trace:
    base = {"query_id": qid, "pipeline": "p", "query": f"question {qid}", "gold": ["g"], "retrieved": ["a", "g", "b"],
            "reranked": ["a", "g"], "prompt": ["a", "g"], "answer": "ID: g", "answer_ids": ["g"], "correct": True}
    return Trace.from_dict({**base, **kw})


def _labels(tmp_path: Path, rows: list[dict]) -> list:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return read_labels(path)


def test_the_labels_gold_replaces_the_runs_and_the_old_verdict_goes(tmp_path: Path) -> None:
    traces = [_trace("1"), _trace("2"), _trace("3")]
    labels = _labels(tmp_path, [{"query_id": "1", "gold": ["a"], "judge": JUDGE},
                                {"query_id": "2", "gold": ["b"], "judge": JUDGE},
                                {"query_id": "3", "gold": [], "judge": JUDGE}])
    out = apply_labels(traces, labels)
    assert [t.gold for t in out] == [("a",), ("b",), (NO_RELEVANT,)]
    assert all(t.correct is None for t in out)  # the run's verdict was against the old gold
    # the answer names g: wrong against gold a (generation), b lost at reranking, nothing found: retrieval
    assert [diagnose(t).stage.value for t in out] == ["generation", "reranking", "retrieval"]
    assert all(t.meta["labels"] == {"by": "judge", "judge": "j", "model": "m", "prompt": "p",
                                    "prompt_sha256": "s"} for t in out)
    assert silver_summary(out) == {"j (m)": 3}
    assert "3 of 3 traces" in silver_note(silver_summary(out), 3)


def test_peoples_labels_mark_the_traces_as_peoples(tmp_path: Path) -> None:
    out = apply_labels([_trace("1")], _labels(tmp_path, [{"query_id": "1", "gold": ["g"]}]))
    assert out[0].meta["labels"] == {"by": "people"} and diagnose(out[0]).stage.value == "none"
    assert silver_summary(out) == {} and silver_note({}, 1) is None


def test_an_unanswerable_label_is_not_a_retrieval_loss(tmp_path: Path) -> None:
    out = apply_labels([_trace("1", refused=True)],
                       _labels(tmp_path, [{"query_id": "1", "gold": [], "answerable": False, "judge": JUDGE}]))
    assert out[0].gold == () and diagnose(out[0]).stage.value == "correct_refusal"


def test_a_trace_without_a_label_is_refused_or_left_out_when_asked(tmp_path: Path) -> None:
    labels = _labels(tmp_path, [{"query_id": "1", "gold": ["g"]}])
    with pytest.raises(TraceError, match="1 trace.*no label.*'2'") as err:
        apply_labels([_trace("1"), _trace("2")], labels, source="run.jsonl")
    assert err.value.path == "run.jsonl" and err.value.field == "query_id"
    assert [t.query_id for t in apply_labels([_trace("1"), _trace("2")], labels, only_labelled=True)] == ["1"]


def test_a_label_matching_no_trace_names_its_line(tmp_path: Path) -> None:
    labels = _labels(tmp_path, [{"query_id": "1", "gold": ["g"]}, {"query_id": "9", "gold": ["g"]}])
    with pytest.raises(TraceError) as err:
        apply_labels([_trace("1")], labels)
    assert (err.value.line, err.value.field) == (2, "query_id") and err.value.path.endswith("labels.jsonl")


def test_a_label_whose_question_differs_is_refused(tmp_path: Path) -> None:
    labels = _labels(tmp_path, [{"query_id": "1", "query": "another question", "gold": ["g"]}])
    with pytest.raises(TraceError) as err:
        apply_labels([_trace("1")], labels)
    assert (err.value.line, err.value.field) == (1, "query")


def test_span_gold_is_refused_here(tmp_path: Path) -> None:
    labels = _labels(tmp_path, [{"query_id": "1", "gold_spans": [{"id": "d", "start": 0, "end": 5}]}])
    with pytest.raises(TraceError) as err:
        apply_labels([_trace("1")], labels)
    assert err.value.field == "gold_spans"
