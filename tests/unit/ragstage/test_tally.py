"""The one counting loop: its groups, its funnel facts and its duplicate check."""

from array import array
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_sets import random_traces, synthetic

from ragstage import Trace, diagnose
from ragstage.tally import (
    Tally,
    find_duplicate,
    group_of,
    key_digest,
    pair_digests,
    repeated_digests,
    tally_records,
)


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
    pairs = array("I")
    tally_records(traces[:10] + [traces[4]], pairs=pairs)
    digests = pair_digests(pairs.tobytes()).tolist()
    assert digests[4] == digests[10] == key_digest(traces[4].query_id, traces[4].pipeline)
    suspects = repeated_digests([pair_digests(pairs[:12].tobytes()), pair_digests(pairs[12:].tobytes())])
    assert suspects == {digests[4]}
    keys = [("f", i + 1, t.query_id, t.pipeline) for i, t in enumerate(traces[:10] + [traces[4]])]
    message, path, position = find_duplicate(keys, suspects, "row")
    assert (path, position) == ("f", 11) and "first on row 5" in message
    assert find_duplicate(keys[:10], suspects, "row") is None  # a suspect digest with no real repeat


def test_an_empty_tally_is_empty():
    assert tally_records([]) == Tally() and Tally().totals() == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(random_traces(), max_size=16), st.sampled_from(["pipeline", None, "kind", "model", "answer"]),
       st.sampled_from(["any", "all"]), st.lists(st.integers(0, 16), max_size=3))
def test_counts_of_parts_add_up_to_the_count_of_the_whole(traces, by, require, cuts):
    want = tally_records(traces, by, require)
    bounds = [0, *sorted(min(c, len(traces)) for c in cuts), len(traces)]
    got = Tally()
    for a, b in zip(bounds, bounds[1:]):  # a worker per part, their tallies added up
        got.update(tally_records(traces[a:b], by, require))
    assert got == want and list(got.buckets) == list(want.buckets)


def test_require_is_checked_before_counting():
    with pytest.raises(ValueError, match="require must be"):
        tally_records([], "pipeline", "most")


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)  # what UTF-8 can encode


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT), max_size=20))
def test_digest_pairs_are_the_key_digests(keys):
    from zlib import adler32, crc32

    pairs = array("I")
    for query_id, pipeline in keys:
        key = f"{query_id}\x00{pipeline}".encode()
        pairs.extend((crc32(key), adler32(key)))
    assert pair_digests(pairs.tobytes()).tolist() == [key_digest(q, p) for q, p in keys]
