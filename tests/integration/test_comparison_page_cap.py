"""``ragstage report --compare --max-questions N`` in a subprocess: the page's numbers are ``compare
--format json``'s over every pair, it lists at most N pairs (the changed ones first), and it says per
transition how many it counted but did not list."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from gold_sample_sets import ragstage
from trace_sets import synthetic

from ragstage import write_traces


def page_data(path):
    return json.loads(path.read_text().split('id="ragstage-data">')[1].split("</script>")[0])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    write_traces(folder / "before.jsonl", synthetic(400, seed=0))
    write_traces(folder / "after.jsonl", synthetic(400, seed=1))
    return folder / "before.jsonl", folder / "after.jsonl"


@pytest.mark.parametrize("cap", ["0", "40", "-1"])
def test_the_capped_page_counts_every_pair_as_compare_does(runs, tmp_path, cap):
    out = tmp_path / "c.html"
    done = ragstage("report", *runs, "--compare", "--max-questions", cap, "--out", out)
    assert done.returncode == 0, done.stderr
    data = page_data(out)
    printed = json.loads(ragstage("compare", *runs, "--format", "json").stdout)
    assert data["comparison"] == printed
    listed = 400 if cap == "-1" else int(cap)
    assert data["listed"] == len(data["questions"]) == listed
    # what is listed plus what is left out is the migration compare prints, transition by transition
    buckets = data["buckets"]
    seen = Counter((buckets[q["a"]["b"]], buckets[q["z"]["b"]]) for q in data["questions"])
    for x in data["left_out"]:
        seen[x["before"], x["after"]] += x["count"]
    assert {k: v for k, v in seen.items() if v} == {(a, z): k for a, row in printed["migration"].items()
                                                    for z, k in row.items()}
    assert sum(x["count"] for x in data["left_out"]) == 400 - listed


def test_the_default_cap_and_a_bad_cap(runs, tmp_path):
    out = tmp_path / "c.html"
    assert ragstage("report", *runs, "--compare", "--out", out).returncode == 0
    assert page_data(out)["listed"] == 400  # under the default cap of 50,000 every pair is listed
    done = ragstage("report", *runs, "--compare", "--workers", "2", "--out", out)
    assert done.returncode == 2 and "--workers make a report of one run" in done.stderr
