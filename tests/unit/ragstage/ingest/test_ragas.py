"""Ragas samples as traces: the three shapes an EvaluationDataset is saved in, ids, labels, a judge.

These files are written here the way ``EvaluationDataset`` writes them (``to_jsonl`` one sample
object a line, ``to_csv`` pandas' CSV of ``to_pandas()`` with list columns as Python lists, and
``to_pandas().to_json()`` by columns), so each case can be shaped at will. Files that Ragas 0.4.3
itself wrote, in an environment of its own (its package clashes with the Phoenix server's OpenAI
client), are read by ``test_ragas_recorded.py``.
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pandas as pd
import pytest

from ragstage import diagnose
from ragstage.ingest import judge_contains
from ragstage.ingest.ragas import ragas_ingest, ragas_to_traces
from ragstage.ingest.requests import content_id
from ragstage.ingest.spans import SpanError

LEAVE = "Parental leave. Employees who become parents receive fourteen weeks of paid parental leave."
TRAVEL = "Travel expenses. Flights need approval from a director."
HOTEL = "Hotel costs are capped at 140 euros per night\nin most cities.\nReceipts within thirty days."

SAMPLES = [
    {"user_input": "How many weeks of leave?", "retrieved_contexts": [LEAVE, TRAVEL],
     "retrieved_context_ids": ["leave", "travel"], "response": "Fourteen weeks.", "reference": "fourteen weeks"},
    {"user_input": "What is the login secret schedule?", "retrieved_contexts": [TRAVEL],
     "retrieved_context_ids": ["travel"], "reference_context_ids": ["security"], "response": "Every month."},
    {"user_input": "What is the hotel cap?", "retrieved_contexts": [HOTEL], "response": "100 euros per night."},
    {"user_input": "May I bring my dog?", "retrieved_contexts": [TRAVEL], "retrieved_context_ids": ["travel"],
     "response": "I don't know."},
]
LABELS = [
    {"query": "How many weeks of leave?", "gold": ["leave"], "reference": "fourteen weeks"},
    {"query": "What is the hotel cap?", "gold_text": ["capped at 140 euros per night in most cities"],
     "reference": "140 euros"},
    {"query": "May I bring my dog?", "answerable": False},
    {"query_id": "ghost", "gold": ["leave"]},
]
EXPECTED = ["none", "retrieval", "generation", "correct_refusal"]


def _write(folder, shape: str):
    frame = pd.DataFrame(SAMPLES)  # EvaluationDataset.to_pandas(): one row a sample, absent fields NaN
    if shape == "jsonl":
        path = folder / "samples.jsonl"
        path.write_bytes(b"".join(orjson.dumps(s) + b"\n" for s in SAMPLES))
    elif shape == "csv":
        path = folder / "samples.csv"
        frame.to_csv(path, index=False)
    else:
        path = folder / "samples.json"
        path.write_text(frame.to_json(), encoding="utf-8")
    return path


@pytest.mark.parametrize("shape", ["jsonl", "csv", "json"])
def test_every_saved_shape_gives_the_same_traces(tmp_path, shape):
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in LABELS))
    traces, unmatched = ragas_ingest(_write(tmp_path, shape), labels=labels, judge=judge_contains)
    assert [diagnose(t).stage.value for t in traces] == EXPECTED
    assert traces[0].retrieved == ("leave", "travel") and traces[0].gold == ("leave",)  # the samples' own ids
    assert traces[1].gold == ("security",)  # reference_context_ids, with no label
    assert traces[2].gold == traces[2].retrieved  # a quoted sentence found across the context's line breaks
    assert [lb.query_id for lb in unmatched] == ["ghost"]


def test_without_labels_the_samples_gold_is_read():
    traces = ragas_to_traces(SAMPLES)
    assert traces[1].gold == ("security",) and traces[0].gold == ()
    assert diagnose(traces[1]).stage.value == "retrieval"


def test_cli_takes_labels_and_judge_and_states_what_a_sample_cannot_show(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in LABELS))
    out = tmp_path / "t.jsonl"
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "ragas", str(_write(tmp_path, "csv")),
                          "--labels", str(labels), "--judge", "contains", "--out", str(out), "--strict"],
                         capture_output=True, text=True)
    assert run.returncode == 1  # the ghost label matched no sample
    assert "no reranker list and no error" in run.stderr and "1 label(s) matched no sample: 'ghost'" in run.stderr
    attributed = subprocess.run([sys.executable, "-m", "ragstage.cli", "attribute", str(out), "--format", "json"],
                                capture_output=True, text=True)
    assert attributed.returncode == 0, attributed.stderr


@pytest.mark.parametrize("content, where", [
    ("question,answer\nq,a\n", "a CSV without a 'user_input' column"),
    ('{"question": {"0": "q"}}', "a JSON object of columns without 'user_input'"),
    ("42", "a JSON value in no known shape"),
])
def test_other_shapes_are_refused_naming_the_shapes_expected(tmp_path, content, where):
    path = tmp_path / ("x.csv" if content.startswith("question") else "x.json")
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SpanError) as err:
        ragas_to_traces(path)
    assert where in str(err.value) and "to_csv" in str(err.value) and "to_pandas().to_json()" in str(err.value)



def test_ragas_samples_get_stable_ids_and_state_their_assumption(tmp_path):
    samples = [{"user_input": "q1?", "retrieved_contexts": ["Alpha  text.", "Beta text."],
                "reference_contexts": ["Beta text."], "response": "b", "reference": "b"},
               {"user_input": "q2?", "retrieved_contexts": ["Alpha text."], "reference_contexts": ["Gamma."]}]
    one, two = ragas_to_traces(samples)
    assert one.retrieved[0] == two.retrieved[0] == content_id("Alpha text.")
    assert one.gold == (content_id("Beta text."),) and one.prompt == one.retrieved
    assert "reached the prompt" in one.meta["ingest"]["prompt"] and one.meta["reference"] == "b"
    assert diagnose(two).stage.value == "retrieval"
    path = tmp_path / "ragas.jsonl"
    path.write_text(orjson.dumps(samples[0]).decode() + "\n" + '{"user_input": 3}\n')
    with pytest.raises(SpanError) as info:
        ragas_to_traces(path)
    assert info.value.line == 2 and info.value.field == "user_input"
