"""The comparison page's data at scale: ``compare``'s numbers over every pair, at most ``max_questions``
pairs listed (newly critical, broken, fixed, moved, then unchanged), and per transition how many
pairs were counted but not listed."""

from __future__ import annotations

from collections import Counter

import pytest
from trace_sets import synthetic

from ragstage import compare, write_traces
from ragstage.gate import pair_runs
from ragstage.html.paired import GROUPS, comparison_data


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    before, after = synthetic(400, seed=0), synthetic(400, seed=1)
    write_traces(folder / "before.jsonl", before)
    write_traces(folder / "after.jsonl", after)
    return folder / "before.jsonl", folder / "after.jsonl", before, after


def group_of(pair) -> int:
    """The page's group of a gate pair, said from the gate's own status and criticality."""
    if pair.newly_critical:
        return 0
    if pair.status in ("broken", "fixed"):
        return GROUPS.index(pair.status)
    return 3 if pair.before_bucket != pair.after_bucket else 4


@pytest.mark.parametrize("cap", [0, 1, 17, 60, 150, 399, 400, None])
def test_the_counts_are_compare_s_and_the_changed_pairs_are_listed_first(runs, cap):
    before_path, after_path, before, after = runs
    data = comparison_data(before_path, after_path, max_questions=cap)
    assert data["comparison"] == compare(before, after).to_dict()  # every pair counted, whatever is listed
    paired = pair_runs(before, after)
    expected = sorted(paired.pairs, key=group_of)  # stable: each group in file order
    listed = expected[: len(expected) if cap is None else cap]
    assert data["listed"] == len(listed) == len(data["questions"])
    assert [q["id"] for q in data["questions"]] == [p.query_id for p in listed]
    statuses = data["statuses"]
    for q, p in zip(data["questions"], listed):
        assert statuses[q["st"]] == p.status and q["crit"] == list(p.newly_critical)
        assert data["buckets"][q["a"]["b"]] == p.before_bucket and data["buckets"][q["z"]["b"]] == p.after_bucket


@pytest.mark.parametrize("cap", [0, 25, 150, None])
def test_the_pairs_left_out_are_counted_per_transition(runs, cap):
    before_path, after_path, before, after = runs
    data = comparison_data(before_path, after_path, max_questions=cap)
    paired = pair_runs(before, after)
    shown = {q["id"] for q in data["questions"]}
    expected = Counter((GROUPS[group_of(p)], p.before_bucket, p.after_bucket)
                       for p in paired.pairs if p.query_id not in shown)
    got = {(x["group"], x["before"], x["after"]): x["count"] for x in data["left_out"]}
    assert got == dict(expected)
    assert sum(got.values()) + data["listed"] == data["comparison"]["n"] == 400
    groups = [GROUPS.index(x["group"]) for x in data["left_out"]]
    assert groups == sorted(groups)  # in the page's group order


def test_a_negative_cap_is_refused(runs):
    with pytest.raises(ValueError, match="must not be negative"):
        comparison_data(runs[0], runs[1], max_questions=-1)
