"""The one counting loop: its groups, its funnel facts and its duplicate check."""

from array import array
from collections import Counter

import pytest
from trace_sets import synthetic

from ragstage import Trace, diagnose
from ragstage.tally import Tally, find_duplicate, group_of, key_digest, repeated_digests, tally_records


@pytest.fixture(scope="module")
def traces():
    return synthetic(3000, seed=5)


@pytest.mark.parametrize("by", ["pipeline", None, "kind", "model", "answer", "query_id"])
def test_tally_groups_as_group_of_says(traces, by):
    want: dict[str, Counter] = {}
    for t in traces:
        want.setdefault(group_of(t, by), Counter())[diagnose(t).stage.value] += 1
    got = tally_records(traces, by)
    assert got.buckets == want and list(got.buckets) == list(want)  # groups in the order first met


def test_group_of_reads_a_field_then_a_meta_key():
    t = Trace(query_id="q", pipeline="bm25", meta={"kind": "rare", "pipeline": "ignored"})
    assert [group_of(t, by) for by in ("pipeline", "kind", "model", None)] == ["bm25", "rare", "(none)", "all"]


def test_tally_keeps_what_the_funnel_needs(traces):
    traces = [t.replace(query_ok=i % 5 != 0) if i % 3 == 0 else t for i, t in enumerate(traces)]
    tally = tally_records(traces, "pipeline", "all")
    assert sum(tally.query_judged["a"].values()) > 0 and tally.query_judged["a"]["query_understanding"] > 0
    for group in tally.buckets:
        mine = [t for t in traces if t.pipeline == group]
        judged = Counter(diagnose(t, "all").stage.value for t in mine if t.query_ok is not None)
        assert tally.query_judged.get(group, Counter()) == judged
        assert tally.reranked[group] == sum(t.reranked is not None for t in mine)
    halves = tally_records(traces[:1000], "pipeline", "all")
    halves.update(tally_records(traces[1000:], "pipeline", "all"))
    assert halves == tally


def test_digests_and_duplicates(traces):
    digests = array("q")
    tally_records(traces[:10] + [traces[4]], digests=digests)
    assert digests[4] == digests[10] == key_digest(traces[4].query_id, traces[4].pipeline)
    suspects = repeated_digests([digests[:6].tobytes(), digests[6:].tobytes()])
    assert suspects == {digests[4]}
    keys = [("f", i + 1, t.query_id, t.pipeline) for i, t in enumerate(traces[:10] + [traces[4]])]
    message, path, position = find_duplicate(keys, suspects, "row")
    assert (path, position) == ("f", 11) and "first on row 5" in message
    assert find_duplicate(keys[:10], suspects, "row") is None  # a suspect digest with no real repeat


def test_an_empty_tally_is_empty():
    assert tally_records([]) == Tally() and Tally().totals() == {}
