"""The doctor's shape checks take time linear in a ranked list's length.

Before, the check "reranked outside retrieved" rebuilt the set of retrieved ids once per
reranked id: 30,000 ids took 14 s, 100,000 more than two minutes.
"""

from __future__ import annotations

import signal

import pytest

from ragstage import Trace
from ragstage.ingest.doctor import examine


@pytest.fixture
def deadline():
    def expired(*_):
        raise TimeoutError("the doctor took more than 10 s: quadratic in the ranked list's length")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_long_ranked_lists_are_checked_in_linear_time(deadline):
    ids = [f"d{i}" for i in range(100_000)]
    trace = Trace(query_id="q", gold=["d1"], retrieved=ids, reranked=ids[::-1] + ["extra"], prompt=["d1"],
                  answer_ids=["d1"])
    report = examine([trace])
    assert [(f.count, f.n) for f in report.problems if f.name == "reranked outside retrieved"] == [(1, 1)]
