"""``ragstage.report.diagnosed_by_query``: one run read once, what is kept per question chosen by the caller."""

from __future__ import annotations

import pytest
from trace_sets import synthetic

from ragstage import diagnose
from ragstage.report import diagnosed_by_query


def test_each_question_keeps_its_bucket_or_what_the_caller_keeps():
    traces = [t for t in synthetic(60, seed=3) if t.pipeline == "a"]
    assert diagnosed_by_query(traces, "any", "before") == {t.query_id: diagnose(t).stage.value for t in traces}
    kept = diagnosed_by_query(traces, "all", "after", lambda t, d: (t.query_id, d.flags))
    assert kept == {t.query_id: (t.query_id, diagnose(t, "all").flags) for t in traces}


def test_a_question_twice_is_an_error_naming_the_side():
    trace = synthetic(1)[0]
    with pytest.raises(ValueError, match=r"^after: query_id 'q0' appears twice"):
        diagnosed_by_query([trace, trace], "any", "after")
