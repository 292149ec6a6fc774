"""The report page's Content-Security-Policy: hashes, never 'unsafe-inline'; no base, no form target.

In Chromium: the page as written loads with no violation (its script, style sheet and every
figure's styles match their hashes), and a script or style added to the page afterwards,
as an injection would be, is refused.
"""

from __future__ import annotations

import re

import pytest
from test_browser import chromium  # noqa: F401 - the fixture that finds the browser
from test_report_browser import BATCH, Opened, browser  # noqa: F401 - the browser fixture

from ragstage import Trace, write_traces
from ragstage.html import write_comparison, write_report


def policy_of(page: str) -> str:
    return re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("policy")
    traces = folder / "hostile.jsonl"
    names = ["<script>document.title='pwned'</script>", "$x$", "</style><style>body{display:none}</style>"]
    write_traces(traces, [Trace(query_id=f"q{i}<img src=x onerror=alert(1)>", pipeline=names[i % 3], gold=["d1"],
                                retrieved=["d1"], prompt=["d1"], answer_ids=["d1"] if i % 2 else ["d2"])
                          for i in range(9)])
    report, compare = folder / "report.html", folder / "compare.html"
    write_report([traces], report)
    write_comparison(BATCH, BATCH, compare)
    return report, compare


def test_the_policy_uses_hashes_and_closes_base_and_forms(hostile_report):
    for path in hostile_report:
        policy = policy_of(path.read_text(encoding="utf-8"))
        assert "'unsafe-inline'" not in policy and "default-src 'none'" in policy
        assert "base-uri 'none'" in policy and "form-action 'none'" in policy
        assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]{44}';", policy)


@pytest.mark.browser
def test_the_page_loads_clean_and_refuses_what_was_not_written(browser, hostile_report, tmp_path):  # noqa: F811
    for path in hostile_report:
        opened = Opened(browser, path)
        opened.assert_clean()
        assert opened.page.title() != "pwned"
        opened.page.close()
    page = hostile_report[0].read_text(encoding="utf-8")
    injected = tmp_path / "injected.html"
    injected.write_text(page.replace("<main>", "<main><script>document.title='ran'</script>"
                                     '<p id="styled" style="color: rgb(255, 0, 0)">x</p>'), encoding="utf-8")
    opened = Opened(browser, injected)
    assert opened.page.title() != "ran"
    assert opened.page.eval_on_selector("#styled", "e => getComputedStyle(e).color") != "rgb(255, 0, 0)"
    assert any("Content Security Policy" in e for e in opened.errors), opened.errors
