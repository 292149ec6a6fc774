"""The report and comparison pages in headless Chromium: they load clean, filter, open traces, show the JSON's numbers.

Each page is opened from a ``file://`` URL with every request recorded: the only request is
the page itself (its styles, script, data and figures are inline). Marked ``browser``:
skipped locally without Chromium or Playwright, a failure on CI (``CI=true``). Screenshots
go to ``artifacts/browser/``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from browser_helpers import CHROMIUM_ARGS
from test_browser import ARTIFACTS, chromium  # noqa: F401 - the fixture that finds the browser
from trace_sets import synthetic

from ragstage import diagnose, write_traces
from ragstage.fixtures import fixture_path
from ragstage.gate import pair_runs
from ragstage.html import write_comparison, write_report
from ragstage.trace import read_traces

pytestmark = pytest.mark.browser

BATCH = str(fixture_path("incidents", "batch.jsonl"))
AFTER = str(fixture_path("incidents", "after_fix.jsonl"))
LOAD = 30_000  # ms


def cli_json(*args: str):
    done = subprocess.run([sys.executable, "-m", "ragstage.cli", *args, "--format", "json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pages")
    empty = folder / "empty.jsonl"
    empty.write_text("")
    many = folder / "many.jsonl"
    write_traces(many, synthetic(250, seed=3))
    out = {name: folder / f"{name}.html" for name in ("report", "compare", "empty", "many")}
    write_report([BATCH], out["report"])
    write_comparison(BATCH, AFTER, out["compare"])
    write_report([empty], out["empty"])
    write_report([many], out["many"], by="kind")
    out["many.jsonl"] = many
    return out


@pytest.fixture(scope="module")
def browser(chromium):  # noqa: F811 - the fixture imported above
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True, timeout=LOAD)
        yield b
        b.close()


class Opened:
    """A page opened from its file, with the console messages and the requests it made."""

    def __init__(self, browser, path: Path) -> None:
        self.url = path.resolve().as_uri()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(self.url, timeout=LOAD)
        self.page.wait_for_selector("body[data-ready=true]", timeout=LOAD)

    def assert_clean(self) -> None:
        assert self.errors == [], f"console errors: {self.errors}"
        assert self.requests == [self.url], f"the page made requests: {self.requests}"

    def row_ids(self) -> list[str]:
        return self.page.eval_on_selector_all("#question-table tbody tr", "rows => rows.map(r => r.dataset.qid)")

    def select(self, name: str, value: str) -> None:
        self.page.select_option(f"#filter-{name}", value)

    def table_values(self, selector: str) -> list[dict[str, str]]:
        return self.page.eval_on_selector_all(f"{selector} tbody tr", """rows => rows.map(r => Object.fromEntries(
            [...r.querySelectorAll('td')].map(td => [td.dataset.col, [td.dataset.value, td.textContent]])))""")


def as_shown(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) and not value.is_integer() else str(value)


def check_table(rows_shown, expected) -> None:
    """Each cell holds the JSON value exactly (data-value) and shows it as the page formats it."""
    assert len(rows_shown) == len(expected)
    for shown, row in zip(rows_shown, expected):
        for column, value in row.items():
            exact, text = shown[column]
            if isinstance(value, (int, float)):
                assert float(exact) == value, (column, exact, value)
                assert text == as_shown(value) if isinstance(value, float) else text == str(value)
            else:
                assert exact == str(value) and text == str(value)


def test_report_page_loads_clean_and_shows_attribute_s_numbers(browser, pages):
    opened = Opened(browser, pages["report"])
    opened.assert_clean()
    check_table(opened.table_values("#attribution-table"), cli_json("attribute", BATCH))
    flags = sorted(cli_json("attribute", BATCH, "--flags"), key=lambda r: ("critical", "high", "medium").index(
        r["severity"]))
    check_table(opened.table_values("#flag-table"), flags)
    assert opened.page.inner_text("#card-n .v") == "40"
    assert opened.page.locator("#figures > figure").count() == 2  # stage bars, funnel
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened.page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    opened.page.close()


def test_report_filters_narrow_the_table_to_the_expected_questions(browser, pages):
    traces = list(read_traces(BATCH))
    opened = Opened(browser, pages["report"])
    assert opened.row_ids() == [t.query_id for t in traces]
    opened.select("bucket", "retrieval")
    assert opened.row_ids() == [t.query_id for t in traces if diagnose(t).stage.value == "retrieval"]
    opened.select("bucket", "")
    opened.select("flag", "fabricated_citation")
    expected = [t.query_id for t in traces if "fabricated_citation" in diagnose(t).flags]
    assert expected and opened.row_ids() == expected
    opened.select("flag", "")
    opened.page.fill("#search", "Parental")
    expected = [t.query_id for t in traces if "parental" in t.query.lower()]
    assert expected and opened.row_ids() == expected
    assert opened.page.inner_text("#match-count") == f"{len(expected)} of 40 questions"
    opened.select("severity", "critical")
    assert opened.row_ids() == [t.query_id for t in traces if "parental" in t.query.lower()
                                and diagnose(t).severity == "critical"]
    opened.assert_clean()
    opened.page.close()


def test_clicking_a_question_shows_its_trace_with_the_gold_highlighted(browser, pages):
    traces = {t.query_id: t for t in read_traces(BATCH)}
    opened = Opened(browser, pages["report"])
    qid = "inc-237"
    opened.page.click(f"#question-table tr[data-qid='{qid}']")
    view = opened.page.locator(f"#trace-view .trace[data-qid='{qid}']")
    view.wait_for(timeout=LOAD)
    t, d = traces[qid], diagnose(traces[qid])
    assert view.locator(".reason").inner_text() == d.reason
    assert view.locator(".bucket").first.inner_text() == d.stage.value
    retrieved = view.locator("table.retrieved tbody tr")
    assert retrieved.count() == len(t.retrieved)
    for i in range(retrieved.count()):
        row = retrieved.nth(i)
        gold = row.get_attribute("data-id") in t.gold
        assert ("gold" in (row.get_attribute("class") or "")) is gold
        if gold:
            colour = row.locator("td").first.evaluate("td => getComputedStyle(td).backgroundColor")
            assert colour not in ("rgba(0, 0, 0, 0)", "transparent")
    assert [view.locator("table.retrieved tbody tr").nth(i).locator("td").nth(2).inner_text()
            for i in range(len(t.retrieved))] == [f"{s:.3f}" for s in t.retrieved_scores]
    assert sorted(view.locator(".gold-ids .id").all_inner_texts()) == sorted(t.gold)
    assert view.locator("table.prompt tbody tr.gold").count() == sum(p in t.gold for p in t.prompt)
    assert view.locator(".answer .marker").count() == t.answer.count("[")
    missing = view.locator(".missing li").evaluate_all("items => items.map(li => li.dataset.field)")
    assert missing == [name for name in ("retrieved.section", "reranked")]
    opened.assert_clean()
    opened.page.close()


def test_compare_page_shows_compare_s_numbers_and_both_traces(browser, pages):
    expected = cli_json("compare", BATCH, AFTER)
    opened = Opened(browser, pages["compare"])
    opened.assert_clean()
    for key in ("n", "fixed", "broken", "undecided"):
        assert int(opened.page.get_attribute(f"#card-{key}", "data-value")) == expected[key]
        assert opened.page.inner_text(f"#card-{key} .v") == str(expected[key])
    assert float(opened.page.get_attribute("#card-p", "data-value")) == expected["p_value"]
    assert opened.page.locator("#figures > figure").count() == 2  # the migration heatmap and flow
    cells = opened.page.eval_on_selector_all("#migration-table td", "tds => tds.map(td => [td.dataset.before, "
                                             "td.dataset.after, Number(td.dataset.value)])")
    shown = {(a, b): v for a, b, v in cells if v}
    assert shown == {(a, b): v for a, row in expected["migration"].items() for b, v in row.items()}

    paired = pair_runs(read_traces(BATCH), read_traces(AFTER))
    opened.select("status", "broken")
    assert opened.row_ids() == [p.query_id for p in paired.broken]
    opened.select("status", "fixed")
    assert opened.row_ids() == [p.query_id for p in paired.fixed]
    qid = paired.fixed[0].query_id
    opened.page.click(f"#question-table tr[data-qid='{qid}']")
    sides = opened.page.locator(f"#trace-view .trace[data-qid='{qid}']")
    sides.first.wait_for(timeout=LOAD)
    assert sides.evaluate_all("boxes => boxes.map(b => b.dataset.side)") == ["before", "after"]
    pair = paired.fixed[0]
    assert [sides.nth(i).locator(".bucket").first.inner_text() for i in range(2)] == [pair.before_bucket,
                                                                                       pair.after_bucket]
    gold = set(pair.before.gold)
    for i, t in enumerate((pair.before, pair.after)):
        assert sides.nth(i).locator("table.prompt tbody tr.gold").count() == sum(p in gold for p in t.prompt)
    opened.select("status", "")
    opened.select("critical", "yes")
    assert opened.row_ids() == [p.query_id for p in paired.newly_critical]
    opened.assert_clean()
    opened.page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
    opened.page.close()


def test_the_table_renders_one_page_of_rows_at_a_time(browser, pages):
    traces = list(read_traces(pages["many.jsonl"]))
    opened = Opened(browser, pages["many"])
    ids = [t.query_id for t in traces]
    assert opened.row_ids() == ids[:100]
    assert opened.page.inner_text("#page-info") == "rows 1–100 of 250"
    opened.page.click("#next")
    assert opened.row_ids() == ids[100:200]
    opened.page.click("#next")
    assert opened.row_ids() == ids[200:]
    assert opened.page.is_disabled("#next")
    opened.select("bucket", "retrieval")
    expected = [t.query_id for t in traces if diagnose(t).stage.value == "retrieval"]
    assert opened.row_ids() == expected[:100]
    assert opened.page.inner_text("#match-count") == f"{len(expected)} of 250 questions"
    opened.select("group", "0")
    group0 = opened.page.eval_on_selector("#filter-group option[value='0']", "o => o.textContent").split(" (")[0]
    assert opened.row_ids() == [q for q, t in zip(ids, traces) if q in expected and t.meta["kind"] == group0][:100]
    check_table(opened.table_values("#attribution-table"), cli_json("attribute", str(pages["many.jsonl"]),
                                                                    "--by", "kind"))
    opened.assert_clean()
    opened.page.close()


def test_an_empty_file_gives_a_page_that_says_so(browser, pages):
    opened = Opened(browser, pages["empty"])
    opened.assert_clean()
    assert opened.page.is_visible("#empty")
    assert opened.page.inner_text("#empty").startswith("No traces: ")
    assert opened.page.locator("#question-table").count() == 0
    opened.page.close()
