"""The report's labels: a judge's labels said on the page with counts, and the rates of a gold sample
exactly as ``ragstage attribute --gold-sample --format json`` prints them (ragstage.ppi's estimate)."""

from __future__ import annotations

import json

import pytest
from gold_sample_sets import JUDGE, ragstage, trace, write_gold_run

from ragstage import read_traces, write_traces
from ragstage.html import report_html
from ragstage.html.data import report_data
from ragstage.html.gold import judge_labels
from ragstage.judge.notice import judge_of


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return write_gold_run(tmp_path_factory.mktemp("gold"))


NAME = "relevance, model stand-in, prompt p1"


def test_judge_of_reads_the_silver_contract():
    assert judge_of({"labels": JUDGE}) == NAME
    for meta in (None, {}, {"labels": {"by": "people"}}, {"labels": "judge"}, {"other": 1}):
        assert judge_of(meta) is None
    assert judge_labels([{"labels": JUDGE}, None, {"labels": {"by": "people"}}, {"labels": JUDGE}]) == {
        "traces": 4, "judged": 2, "judges": {NAME: 2}}


def test_the_page_holds_attribute_s_gold_sample_rows_and_says_the_labels_are_a_judge_s(run):
    done = ragstage("attribute", run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"],
                    "--format", "json")
    assert done.returncode == 0, done.stderr
    data = report_data([run["silver"]], gold_sample=run["gold"], sample=run["sample"])
    assert data["gold_sample"]["rows"] == json.loads(done.stdout)
    assert {r["stage"] for r in data["gold_sample"]["rows"]} >= {"none", "retrieval"}
    assert data["gold_sample"]["drawn"] == 60 and data["gold_sample"]["seed"] == 7
    assert data["gold_sample"]["agreement"]["n"] == 60
    assert data["judge_labels"] == {"traces": 300, "judged": 300, "judges": {NAME: 300}}
    gold = report_data([run["gold"]])
    assert gold["gold_sample"] is None and gold["judge_labels"]["judged"] == 0


def test_a_partial_listing_counts_judge_labels_among_what_it_read(run):
    data = report_data([run["silver"]], max_questions=25)
    assert data["judge_labels"] == {"traces": 25, "judged": 25, "judges": {NAME: 25}}


def test_the_command_line_writes_the_page_and_refuses_what_does_not_belong_together(run):
    out = run["tmp"] / "report.html"
    done = ragstage("report", run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"], "--out", out)
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert '"gold_sample":{"rows":[' in page and '"judged":300' in page
    half = run["tmp"] / "half.jsonl"
    write_traces(half, list(read_traces(run["gold"]))[:30])
    for args, message in (((run["silver"], "--gold-sample", run["gold"]), "go together"),
                          ((run["silver"], run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"]),
                           "one SILVER_TRACES"),
                          ((run["silver"], "--gold-sample", half, "--sample", run["sample"]), "have no row in"),
                          ((run["silver"], run["gold"], "--compare", "--gold-sample", run["gold"], "--sample",
                            run["sample"]), "does not combine with them")):
        done = ragstage("report", *args, "--out", run["tmp"] / "refused.html")
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
        assert not (run["tmp"] / "refused.html").exists()


def test_a_page_without_judge_labels_says_nothing_of_a_judge(tmp_path):
    path = tmp_path / "gold.jsonl"
    write_traces(path, [trace("q1", "none"), trace("q2", "retrieval", {"labels": {"by": "people"}})])
    page, _ = report_html([path])
    assert '"judged":0' in page and '"gold_sample":null' in page
