"""The report at scale: the files are read once, and a recurring string is stored once on the page.

Before, ``report`` counted the files (``attribute``'s pass) and then read them again with the
full checks, and every question stored its passage ids, sections and provenance in full:
100,000 traces took 24 s (``attribute``: 4 s) and 80 MB of HTML.
"""

from __future__ import annotations

import re

from ragstage import Trace, write_traces
from ragstage.html import report_html

SECTIONS = ["policy", "faq", None]


def run(path, n=300):
    traces = [Trace(query_id=f"q{i}", query=f"question {i}", gold=[f"doc{i % 7}"],
                    retrieved=[{"id": f"doc{(i + k) % 20}", "score": 1 - k / 10, "section": SECTIONS[k % 3]}
                               for k in range(10)],
                    reranked=[f"doc{(i + k) % 20}" for k in range(5)], prompt=[f"doc{i % 20}"],
                    answer=f"It is {i} [1].", correct=i % 2 == 0, model="model-a", prompt_version="v1",
                    timestamp="2026-10-15T13:12:00Z") for i in range(n)]
    write_traces(path, traces)
    return traces


def test_the_report_reads_its_files_once(tmp_path, monkeypatch):
    import ragstage.trace_files

    def second_pass(*args, **kwargs):
        raise AssertionError("the report counted the files in a pass of their own")

    monkeypatch.setattr(ragstage.trace_files, "count_file", second_pass)
    path = tmp_path / "t.jsonl"
    run(path)
    page, n = report_html([path])
    assert n == 300 and '"n":300' in page


def test_recurring_strings_are_stored_once_and_come_back_whole(tmp_path):
    path = tmp_path / "t.jsonl"
    traces = run(path)
    page, _ = report_html([path])
    data = page.split('id="ragstage-data">')[1].split("</script>")[0]
    for text in ("doc3", "policy", "model-a", "v1", "2026-10-15T13:12:00Z"):
        assert len(re.findall(f'"{text}"', data)) == 1, text
    from ragstage.html.data import expand_trace, report_data

    stored = report_data([path])
    assert [Trace(**expand_trace(q["t"], stored["strings"])) for q in stored["questions"]] == traces
