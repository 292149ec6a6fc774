"""The report page in headless Chromium: a gold sample's three rates per bucket, a judge's labels said as
such, and a page that lists part of its questions saying how many of each bucket it left out; the
comparison page that lists part of its pairs keeps ``compare``'s numbers over every pair in its cards and
says per transition how many pairs it left out.

Marked ``browser``: skipped locally without Chromium or Playwright, a failure on CI (``CI=true``).
"""

from __future__ import annotations

import json

import pytest
from browser_helpers import CHROMIUM_ARGS, chromium_or_skip
from gold_sample_sets import ragstage, write_gold_run
from trace_sets import synthetic

from ragstage import write_traces
from ragstage.html import write_comparison, write_report

pytestmark = pytest.mark.browser
LOAD = 30_000  # ms


@pytest.fixture(scope="module")
def browser():
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True, timeout=LOAD)
        yield b
        b.close()


JUDGE_NAME = "relevance, model stand-in, prompt p1"


def opened(browser, path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.goto(path.resolve().as_uri(), timeout=LOAD)
    page.wait_for_selector("body[data-ready=true]", timeout=LOAD)
    assert errors == []
    return page


def test_the_gold_sample_s_rates_and_the_judge_s_labels_are_on_the_page(browser, tmp_path):
    run = write_gold_run(tmp_path)
    out = tmp_path / "report.html"
    done = ragstage("report", run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"], "--out", out)
    assert done.returncode == 0, done.stderr
    rows = json.loads(ragstage("attribute", run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"],
                               "--format", "json").stdout)
    page = opened(browser, out)
    shown = page.eval_on_selector_all("#gold-sample-table tbody tr", """rows => rows.map(r => ({
        stage: r.dataset.stage,
        cells: Object.fromEntries([...r.querySelectorAll('td[data-col]')].map(
            td => [td.dataset.col, [td.dataset.value, td.textContent]]))}))""")
    assert [r["stage"] for r in shown] == [r["stage"] for r in rows]
    for s, r in zip(shown, rows):
        cells = s["cells"]
        assert float(cells["judge_rate"][0]) == r["judge_rate"] and cells["judge_rate"][1].endswith("(biased)")
        assert float(cells["estimate"][0]) == r["estimate"]
        assert [float(x) for x in cells["interval"][0].split()] == [r["low"], r["high"]]
        assert [float(x) for x in cells["gold"][0].split()] == [r["gold_low"], r["gold_high"]]
        assert cells["interval"][1] == f"{r['low']:.3f} to {r['high']:.3f}"
        assert cells["estimate"][1] == f"{r['estimate']:.3f}"
    headers = page.eval_on_selector_all("#gold-sample-table th", "ths => ths.map(t => t.textContent)")
    assert "judge-only rate (biased)" in headers and "gold-only 95% Wilson" in headers
    note = page.inner_text("#judge-labels")
    assert note.startswith("Labels by a judge:") and "300 of 300 traces" in note and JUDGE_NAME in note
    page.close()


def test_a_page_of_gold_labels_says_nothing_of_a_judge(browser, tmp_path):
    path, out = tmp_path / "t.jsonl", tmp_path / "r.html"
    write_traces(path, synthetic(50, seed=1))
    write_report([path], out)
    page = opened(browser, out)
    assert page.locator("#judge-labels").count() == 0 and page.locator("#gold-sample-table").count() == 0
    assert page.locator("#left-out").count() == 0 and page.inner_text("#questions h2") == "Every question"
    page.close()


def test_a_page_that_lists_part_says_what_it_left_out(browser, tmp_path):
    path, out = tmp_path / "t.jsonl", tmp_path / "r.html"
    traces = synthetic(400, seed=2)
    write_traces(path, traces)
    write_report([path], out, max_questions=150)
    data = json.loads(out.read_text().split('id="ragstage-data">')[1].split("</script>")[0])
    page = opened(browser, out)
    assert page.inner_text("#card-n .v") == "400" and page.inner_text("#card-listed .v") == "150"
    assert page.inner_text("#questions h2") == "The first 150 of 400 questions (in file order)"
    note = page.inner_text("#left-out")
    assert page.get_attribute("#left-out", "data-value") == "250" and note.startswith("250 questions are counted")
    for bucket, k in data["left_out"].items():
        assert f"{bucket} {k:,}" in note
    assert page.inner_text("#match-count") == "150 of 150 questions"
    assert page.inner_text("#severity-cards").count("listed questions of severity") == 4
    page.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    write_traces(folder / "before.jsonl", synthetic(400, seed=0))
    write_traces(folder / "after.jsonl", synthetic(400, seed=1))
    return folder


def test_a_capped_comparison_page_says_what_it_left_out(browser, runs):
    out = runs / "capped.html"
    write_comparison(runs / "before.jsonl", runs / "after.jsonl", out, max_questions=150)
    data = json.loads(out.read_text().split('id="ragstage-data">')[1].split("</script>")[0])
    page = opened(browser, out)
    assert page.inner_text("#card-n .v") == "400" and page.inner_text("#card-listed .v") == "150"
    assert page.get_attribute("#card-broken", "data-value") == str(data["comparison"]["broken"])
    assert page.inner_text("#questions h2").startswith(
        "The 150 paired questions listed of 400: newly critical, broken, fixed, moved, unchanged")
    note = page.inner_text("#left-out")
    assert page.get_attribute("#left-out", "data-value") == "250"
    assert note.startswith("250 paired questions are counted in every card, table and figure above")
    rows = page.eval_on_selector_all("#left-out-table tbody tr", """rows => rows.map(r => [
        r.dataset.group, r.dataset.before, r.dataset.after, Number(r.dataset.value),
        r.querySelector('td:last-child').textContent])""")
    assert rows == [[x["group"], x["before"], x["after"], x["count"], f"{x['count']:,}"] for x in data["left_out"]]
    assert sum(r[3] for r in rows) == 250
    assert page.inner_text("#match-count") == "150 of 150 questions"
    page.close()


def test_a_comparison_page_of_every_pair_has_no_note(browser, runs):
    out = runs / "whole.html"
    write_comparison(runs / "before.jsonl", runs / "after.jsonl", out)
    page = opened(browser, out)
    assert page.locator("#left-out").count() == 0 and page.locator("#card-listed").count() == 0
    assert page.inner_text("#questions h2").startswith("Every paired question: newly critical, broken")
    page.close()
