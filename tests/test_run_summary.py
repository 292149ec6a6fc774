"""prompt_fill: how many of the top-ranked passages a run's prompts could hold."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstage import Trace
from ragstage.run_summary import prompt_fill


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
