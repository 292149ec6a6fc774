"""prompt_fill: how many of the top-ranked passages a run's prompts could hold."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage import Trace
from ragstage.attribution import BUCKETS
from ragstage.report import funnel_from_counts
from ragstage.runs.summary import Points, prompt_ceiling, prompt_fill


def _trace(qid, ranked, kept, pipeline="p", **extra):
    return Trace(query_id=qid, pipeline=pipeline, gold=["d0"], retrieved=ranked,
                 prompt=None if kept is None else ranked[:kept], **extra)


def test_counts_against_the_offer_and_leaves_out_what_says_nothing():
    traces = [_trace("a", [f"d{i}" for i in range(8)], 2), _trace("b", ["d0", "d1", "d2"], 3),
              _trace("c", ["d0"], None), _trace("d", ["d0"], 0, error={"stage": "generation", "message": "down"}),
              _trace("e", [f"d{i}" for i in range(9)], 5, pipeline="q")]
    fill = prompt_fill(traces, top=5).set_index("group")
    assert fill.loc["p"].questions == 2 and fill.loc["p"].mean_offered == 4.0 and fill.loc["p"].mean_in_prompt == 2.5
    assert fill.loc["p"].share == pytest.approx(5 / 8) and fill.loc["p"].budget_stopped == 1
    assert fill.loc["q"].share == 1.0 and fill.loc["q"].budget_stopped == 0
    reranked = Trace(query_id="x", gold=["d0"], retrieved=["d0", "d1", "d2"], reranked=["d0"], prompt=["d0"])
    assert prompt_fill([reranked]).mean_offered.item() == 1.0  # the reranked list is what assembly was offered
    with pytest.raises(ValueError, match="top must be at least 1"):
        prompt_fill(traces, top=0)


@given(st.lists(st.tuples(st.integers(1, 12), st.integers(0, 12)), min_size=1, max_size=30), st.integers(1, 8))
def test_mean_in_prompt_is_share_times_mean_offered(sizes, top):
    traces = [_trace(str(i), [f"d{j}" for j in range(n)], min(k, n, top)) for i, (n, k) in enumerate(sizes)]
    row = prompt_fill(traces, top=top).iloc[0]
    assert row.questions == len(sizes) and 0 <= row.share <= 1
    assert row.mean_in_prompt == pytest.approx(row.share * row.mean_offered)
    assert row.mean_offered == pytest.approx(sum(min(n, top) for n, _ in sizes) / len(sizes))
    assert row.budget_stopped == sum(min(k, n, top) < min(n, top) for n, k in sizes)


def test_the_published_ceiling_is_207_claims():
    from ragstage.published import load_published

    ceiling = prompt_ceiling(load_published().buckets).set_index("group")
    for name, right in (("minilm+ce", 107), ("minilm+ce/revised-prompt", 151)):
        row = ceiling.loc[name]
        assert (row.questions, row.lost_upstream, row.reached_prompt) == (300, 93, 207)
        assert (row.right, row.unknown) == (right, 0)


buckets = st.dictionaries(st.sampled_from(BUCKETS), st.integers(0, 40), min_size=1)


@settings(deadline=None)  # two DataFrames an example: slow on a shared machine, not wrong
@given(buckets)
def test_ceiling_agrees_with_the_funnel(counts):
    row = prompt_ceiling({"g": counts}).iloc[0]
    stages = funnel_from_counts({"g": counts}).set_index("stage")
    judged_reached = stages.loc["generation"].entered if "generation" in stages.index else 0
    assert row.reached_prompt - counts.get("unjudged", 0) == judged_reached
    if "generation" in stages.index:
        assert row.right == stages.loc["generation"].survived
    upstream = stages.drop(index="generation", errors="ignore")
    assert row.lost_upstream == (upstream.entered - upstream.survived).sum()
    assert row.questions == row.lost_upstream + row.reached_prompt + counts.get("not_logged", 0)


@pytest.mark.parametrize("system, oracle, sufficiency, reading", [
    ((70, 100), (95, 100), (72, 100), "generation is capable but starved"),            # Which RAG component broke?
    ((70, 100), (74, 100), (93, 100), "generation fails with the evidence in front of it"),  # and its second
    ((5, 10), (7, 10), (7, 10), "the two halves lose about as much"),
])
def test_points_read_as_seed_003_does(system, oracle, sufficiency, reading):
    points = Points(system, oracle, sufficiency)
    assert points.reading().startswith(reading)
    table = points.table()
    assert list(table.k) == [system[0], oracle[0], sufficiency[0]]
    assert all(low <= rate <= high for rate, low, high in zip(table.rate, table.low, table.high))
    assert points.upstream_gap == pytest.approx(oracle[0] / oracle[1] - system[0] / system[1])
