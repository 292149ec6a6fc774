"""A LangChain application's spans recorded by OpenLIT itself (``fixtures/ingest/recorded/openlit-1.45.0/``).

OpenLIT does not install beside this environment (docs/stacks.md), so its OTLP JSON was written once,
in an environment of its own, by ``fixtures/ingest/recorded/record_openlit.py`` (its README gives the
versions and the date); this test reads the committed file with ``ragstage ingest spans`` and never
imports OpenLIT. OpenLIT's retrieval span keeps the first three documents and their count: a gold
document ranked fourth of five is not observable there, so that request must be written as
``label_missing`` and named on stderr, never as a retrieval loss.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from repo_paths import REPO

from ragstage import diagnose, read_traces

RECORDED = REPO / "fixtures" / "ingest" / "recorded" / "openlit-1.45.0"
BELOW_THREE = "How often do passwords rotate?"
#: question -> the bucket its request must land in (the stage that lost the evidence, where observable)
EXPECTED = {
    "How many weeks of paid parental leave do new parents receive?": "none",
    "What is the hotel cap per night?": "generation",
    "What is the nightly hotel cap in most cities?": "generation",  # a refusal of an answerable question
    "What is the login secret schedule?": "retrieval",  # three returned, three recorded, none holds the gold
    BELOW_THREE: "label_missing",  # gold ranked fourth of five (cut by the prompt's three): not recorded
    "Does the training budget cover conferences?": "none",  # gold first of five: recorded
    "How often are laptops replaced and passwords changed?": "prompt_assembly",  # evicted by a one-passage prompt
    "How are remote workers paid for internet costs?": "endpoint_unavailable",  # the retriever raised
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    out = tmp_path_factory.mktemp("openlit") / "traces.jsonl"
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(RECORDED / "spans.otlp.jsonl"),
                          "--labels", str(RECORDED / "labels.jsonl"), "--judge", "contains", "--out", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run, {t.query: t for t in read_traces(out)}


def test_every_recorded_request_lands_in_its_bucket(ingested):
    _, traces = ingested
    assert {q: diagnose(t).stage.value for q, t in traces.items()} == EXPECTED


def test_gold_below_the_three_recorded_is_named_as_unobservable_not_a_retrieval_loss(ingested):
    run, traces = ingested
    hidden = traces[BELOW_THREE]
    assert hidden.retrieved == ("equipment", "remote", "travel") and hidden.gold == ()  # three of the five
    line = next(x for x in run.stderr.splitlines() if "their stage cannot be observed" in x)
    assert "(OpenLIT records the first three)" in line and "not as a retrieval loss" in line
    assert line.endswith(f": {hidden.query_id}")  # named, and the only one


def test_the_summary_names_the_conventions_read(ingested):
    run, _ = ingested
    line = next(x for x in run.stderr.splitlines() if ": spans by convention: " in x)
    # the application's own span around each request is in no convention, not counted as OpenInference
    assert line.endswith("15 OpenTelemetry GenAI (gen_ai.*), 8 no convention (the application's own spans)")
    assert "1 request(s) with no LLM span" in run.stderr  # the failing retriever's request


def test_without_a_span_around_each_request_the_split_is_named_not_blamed_on_a_cut_export(tmp_path):
    """Recorded with no application span around the requests, OpenLIT's retrieval and chat spans
    are root spans of separate traces: no model half is written with a stage, and the summary
    names the split instead of an export cut by a limit."""
    out = tmp_path / "traces.jsonl"
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans",
                          str(RECORDED / "spans.unlinked.otlp.jsonl"), "--labels", str(RECORDED / "labels.jsonl"),
                          "--judge", "contains", "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    traces = list(read_traces(out))
    assert len(traces) == 8 and all(t.prompt is None and not t.answer for t in traces)  # the retriever halves
    line = next(x for x in run.stderr.splitlines() if x.startswith("7 incomplete request(s) not written"))
    assert "retriever and model spans in separate traces" in line and "needs the application to open one" in line
    assert "an export cut by a limit" not in line
