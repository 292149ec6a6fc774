"""``ragstage report``: the page's numbers are what ``attribute`` and ``compare`` print, its data is whole.

The page is read back from the file the command wrote (the JSON block the script renders
from); tests/integration/test_report_browser.py checks what the browser shows from it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ragstage import Trace, diagnose, write_traces
from ragstage.fixtures import fixture_path
from ragstage.html import report_html
from ragstage.html.data import expand_trace, missing_fields
from ragstage.ingest.doctor import FIELD_CHECKS

BATCH = str(fixture_path("incidents", "batch.jsonl"))
AFTER = str(fixture_path("incidents", "after_fix.jsonl"))
FIVE = str(fixture_path("five_cases", "cases.jsonl"))
FOUR = str(fixture_path("incidents", "four_logs.jsonl"))
MULTI = str(fixture_path("intervals", "multi_relevant.jsonl"))


def ragstage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *args], capture_output=True, text=True)


def page_data(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="ragstage-data">(.*?)</script>', text, re.S)
    assert block, "the page carries no data block"
    return json.loads(block.group(1))


@pytest.mark.parametrize("files,options", [
    ([BATCH], []),
    ([FIVE, FOUR], []),
    ([FIVE, FOUR], ["--by", "none"]),
    ([MULTI], ["--require", "all"]),
])
def test_report_numbers_are_attribute_s_json(tmp_path, files, options):
    out = tmp_path / "report.html"
    done = ragstage("report", *files, "--out", str(out), *options)
    assert done.returncode == 0, done.stderr
    data = page_data(out)
    buckets = json.loads(ragstage("attribute", *files, "--format", "json", *options).stdout)
    flags = json.loads(ragstage("attribute", *files, "--format", "json", "--flags", *options).stdout)
    assert data["attribution"] == buckets
    assert data["flags"] == flags
    # every question is on the page, in the bucket the attribution counted
    per_group = Counter((data["groups"][q["g"]], data["buckets"][q["b"]]) for q in data["questions"])
    assert per_group == Counter({(r["group"], r["stage"]): r["count"] for r in buckets})
    assert data["n"] == len(data["questions"]) == sum(r["count"] for r in buckets) // 1


def test_compare_page_numbers_are_compare_s_json(tmp_path):
    out = tmp_path / "compare.html"
    done = ragstage("report", BATCH, AFTER, "--compare", "--out", str(out))
    assert done.returncode == 0, done.stderr
    data = page_data(out)
    assert data["comparison"] == json.loads(ragstage("compare", BATCH, AFTER, "--format", "json").stdout)
    status = Counter(data["statuses"][q["st"]] for q in data["questions"])
    assert status["fixed"] == data["comparison"]["fixed"] and status["broken"] == data["comparison"]["broken"]
    assert status["undecided"] == data["comparison"]["undecided"]
    assert len(data["questions"]) == data["comparison"]["n"]
    # both traces of every question are on the page: the after side as its difference from the before side
    from ragstage.trace import read_traces

    before = {t.query_id: t for t in read_traces(BATCH)}
    after = {t.query_id: t for t in read_traces(AFTER)}
    for q in data["questions"]:
        rebuilt = {k: v for k, v in {**q["a"]["t"], **q["z"]["d"]}.items() if k not in q["z"]["gone"]}
        assert Trace(**expand_trace(q["a"]["t"], data["strings"])) == before[q["id"]]
        assert Trace(**expand_trace(rebuilt, data["strings"])) == after[q["id"]]


def test_each_question_carries_its_trace_diagnosis_and_missing_fields():
    from ragstage.html.data import report_data
    from ragstage.trace import read_traces

    data = report_data([BATCH])
    traces = list(read_traces(BATCH))
    for q, t in zip(data["questions"], traces):
        d = diagnose(t)
        assert q["t"]["query_id"] == t.query_id and Trace(**expand_trace(q["t"], data["strings"])) == t
        assert data["buckets"][q["b"]] == d.stage.value and data["reasons"][q["r"]] == d.reason
        assert q["s"] == d.severity
        assert [data["flag_names"][i] for i in range(len(data["flag_names"])) if q["f"] >> i & 1] == list(d.flags)
        assert [data["checks"][i]["name"] for i in q["m"]] == [c.name for c in FIELD_CHECKS if c.missing(t)]
    assert [c["impact"] for c in data["checks"]] == [c.impact for c in FIELD_CHECKS]


def test_missing_fields_names_the_doctor_s_checks():
    bare = Trace(query_id="q", gold=["d1"], retrieved=["d1"])
    names = [FIELD_CHECKS[i].name for i in missing_fields(bare)]
    assert "prompt" in names and "query" in names and "gold" not in names


def test_the_page_is_self_contained_and_cannot_be_broken_by_a_question():
    nasty = Trace(query_id="q1", query="</script><script>alert(1)</script> & <b>", gold=["d1"], retrieved=["d1"])
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        write_traces(path, [nasty])
        page, n = report_html([path])
    assert n == 1
    assert page.count("</script>") == 2  # the data block's and the script's own
    assert "alert(1)" in page and "<script>alert" not in page
    assert not re.search(r'\b(src|href)="(https?:)?//', page), "the page must not load anything"
    assert "<svg" in page  # the figures are inline


def test_an_empty_file_gives_a_page_that_says_so(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = tmp_path / "report.html"
    done = ragstage("report", str(empty), "--out", str(out))
    assert done.returncode == 0, done.stderr
    data = page_data(out)
    assert data["n"] == 0 and data["questions"] == [] and data["attribution"] == []
    assert "wrote the report of 0 traces" in done.stderr


@pytest.mark.parametrize("content", [
    '{"query_id": "q1", "gold": "d1"}\n',
    '{"query_id": "q1"}\n{"query_id": "q1"}\n',
    "not json\n",
    '{"query_id": "q1", "answerable": "yes"}\n',
])
def test_bad_input_gives_attribute_s_one_line_error_and_writes_nothing(tmp_path, content):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    out = tmp_path / "report.html"
    report = ragstage("report", str(bad), "--out", str(out))
    attribute = ragstage("attribute", str(bad))
    assert report.returncode == attribute.returncode == 2
    assert report.stderr == attribute.stderr.replace("ragstage attribute:", "ragstage report:")
    assert len(report.stderr.strip().splitlines()) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_compare_form_needs_two_files_and_reports_compare_s_errors(tmp_path):
    out = tmp_path / "c.html"
    done = ragstage("report", BATCH, "--compare", "--out", str(out))
    assert done.returncode == 2 and "two trace files" in done.stderr
    done = ragstage("report", BATCH, FIVE, "--compare", "--out", str(out))
    plain = ragstage("compare", BATCH, FIVE)
    assert done.returncode == plain.returncode == 2
    assert done.stderr == plain.stderr.replace("ragstage compare:", "ragstage report:")
    assert not out.exists()


def test_a_failed_report_keeps_the_earlier_page(tmp_path):
    out = tmp_path / "report.html"
    out.write_text("the earlier page")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert ragstage("report", str(bad), "--out", str(out)).returncode == 2
    assert out.read_text() == "the earlier page"


def test_the_report_never_overwrites_one_of_its_inputs(tmp_path):
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(Path(BATCH).read_bytes())
    done = ragstage("report", str(traces), "--out", str(traces))
    assert done.returncode == 2 and "must not be the input" in done.stderr
    assert traces.read_bytes() == Path(BATCH).read_bytes()
