"""The comparison page in headless Chromium when it lists only part of the pairs: the cards keep
``compare``'s numbers over every pair, the table's title says how many it lists and in which order,
and a note says per transition how many pairs it counted but did not list.

Marked ``browser``: skipped locally without Chromium or Playwright, a failure on CI (``CI=true``).
"""

from __future__ import annotations

import json

import pytest
from browser_helpers import CHROMIUM_ARGS, chromium_or_skip
from trace_sets import synthetic

from ragstage import write_traces
from ragstage.html import write_comparison

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


def opened(browser, path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.goto(path.resolve().as_uri(), timeout=LOAD)
    page.wait_for_selector("body[data-ready=true]", timeout=LOAD)
    assert errors == []
    return page


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
