"""A report of many groups: the figures draw the largest twelve, and the page stays usable at 10,000.

Before, the stage figure drew one panel per group (300 groups: 89 s, 1,000: minutes) and the
page built every row of its number tables at once (10,000 groups: 17 s before it answered).
"""

from __future__ import annotations

import re
import time

import pytest
from test_browser import chromium  # noqa: F401 - the fixture that finds the browser
from test_report_browser import Opened, browser  # noqa: F401 - the browser fixture

from ragstage import Trace, write_traces
from ragstage.html import MAX_DRAWN_GROUPS, report_html, write_report


def groups_file(path, groups: int, per_group: int = 1):
    traces = []
    for i in range(groups * per_group):
        right = i % 3 == 0
        traces.append(Trace(query_id=f"q{i}", pipeline=f"g{i % groups}", gold=["d1"],
                            retrieved=["d1" if right else "d2"], prompt=["d1" if right else "d2"], answer_ids=["d1"]))
    traces += [Trace(query_id=f"big{i}", pipeline="g7", gold=["d1"], retrieved=["d2"]) for i in range(5)]
    write_traces(path, traces)
    return path


def test_the_figures_draw_the_largest_groups_and_say_so(tmp_path):
    page, n = report_html([groups_file(tmp_path / "t.jsonl", 40, 2)])
    stages = page.split('id="fig-stages"')[1].split("</figure>")[0]
    panels = set(re.findall(r'id="stages-axes_(\d+)"', stages))
    assert len(panels) == MAX_DRAWN_GROUPS == 12
    assert "g7 (n=7)" in stages  # the largest group is drawn
    assert stages.count("the 12 largest of 40 groups (by questions)") == 1
    assert "the 12 largest of 40 groups" in page.split('id="fig-funnel"')[1]


def test_a_few_groups_are_all_drawn_with_no_note(tmp_path):
    page, _ = report_html([groups_file(tmp_path / "t.jsonl", 8, 2)])
    assert len(set(re.findall(r'id="stages-axes_(\d+)"', page))) == 8 and "largest of" not in page


@pytest.mark.browser
def test_a_page_of_10000_groups_opens_and_pages_its_tables(browser, tmp_path):  # noqa: F811
    out = tmp_path / "groups.html"
    started = time.monotonic()
    write_report([groups_file(tmp_path / "t.jsonl", 10_000)], out)
    assert time.monotonic() - started < 120
    opened = Opened(browser, out)
    opened.assert_clean()
    assert len(opened.page.query_selector_all("#attribution-table tbody tr")) == 500
    info = "#tables .paged .page-info"
    assert opened.page.inner_text(info).startswith("rows 1–500 of ")
    opened.page.click("#tables .paged .table-next")
    assert opened.page.inner_text(info).startswith("rows 501–1000 of ")
    opened.select("group", "7")
    assert opened.row_ids() == ["q7"] + [f"big{i}" for i in range(5)]
