"""Ragas samples saved by Ragas itself (``fixtures/ingest/recorded/ragas-0.4.3/``), read by ``ingest ragas``.

Ragas does not install beside this environment (docs/stacks.md), so its files were written once, in
an environment of their own, by ``fixtures/ingest/recorded/record_ragas.py`` (its README gives the
versions and the date); this test reads the committed files and never imports Ragas. Each sample
lost its evidence at a known stage; a sample holds only the contexts the model saw, so a
reranker's cut, a failing retriever and an evicted passage land in ``retrieval``, which stderr says.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from repo_paths import REPO

from ragstage import diagnose, read_traces

RECORDED = REPO / "fixtures" / "ingest" / "recorded" / "ragas-0.4.3"
#: question -> (the stage that lost the evidence, the bucket a Ragas sample can show)
EXPECTED = {
    "How many weeks of leave?": ("none", "none"),
    "What is the login secret schedule?": ("retrieval", "retrieval"),
    "What is the hotel cap?": ("generation", "generation"),
    "May I bring my dog?": ("correct_refusal", "correct_refusal"),
    "What is the nightly hotel cap in most cities?": ("generation", "generation"),
    "Who approves flights?": ("reranking", "retrieval"),
    "Does the training budget cover conferences?": ("endpoint_unavailable", "retrieval"),
    "How often are passwords changed?": ("prompt_assembly", "retrieval"),
}
SHAPES = ["samples.jsonl", "samples.csv", "samples.json"]  # to_jsonl, to_csv, to_pandas().to_json()


def _ingest(tmp_path, name: str):
    out = tmp_path / f"{name}.traces.jsonl"
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "ragas", str(RECORDED / name),
                          "--labels", str(RECORDED / "labels.jsonl"), "--judge", "contains", "--out", str(out),
                          "--strict"], capture_output=True, text=True)
    return run, read_traces(out) if run.returncode == 0 else []


@pytest.mark.parametrize("name", SHAPES)
def test_every_recorded_sample_lands_in_the_bucket_a_sample_can_show(tmp_path, name):
    run, traces = _ingest(tmp_path, name)
    assert run.returncode == 0, run.stderr  # --strict: every label matched a sample
    assert {t.query: diagnose(t).stage.value for t in traces} == {q: b for q, (_, b) in EXPECTED.items()}
    # the three losses a sample cannot tell from a retrieval loss are said to be read as one
    assert "no reranker list and no error" in run.stderr
    assert "a reranker's cut, an assembly loss and an outage all read as evidence lost before the prompt" \
        in run.stderr


def test_the_three_saved_shapes_give_the_same_traces(tmp_path):
    jsonl, csv, json = ([t.to_dict() for t in _ingest(tmp_path, name)[1]] for name in SHAPES)
    assert len(jsonl) == len(EXPECTED) and jsonl == csv == json
    assert [t["query_id"] for t in jsonl] == [f"sample-{n}" for n in range(1, 9)]  # the sample's position


def test_the_samples_own_ids_name_the_contexts(tmp_path):
    traces = {t.query: t for t in _ingest(tmp_path, "samples.csv")[1]}
    leave = traces["How many weeks of leave?"]
    assert leave.retrieved == ("leave", "travel") and leave.gold == ("leave",)
    hotel = traces["What is the hotel cap?"]  # no ids: the context's own content id, found by the quoted sentence
    assert hotel.gold == hotel.retrieved and len(hotel.retrieved) == 1
    assert traces["Does the training budget cover conferences?"].retrieved == ()
