"""The pieces of ``ragstage.gate`` that the gate on gold labels and the gate on a judge's share: a question's
outcome, the verdict of rules in order, the critical rule's reason, and Markdown that data cannot act in."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from ragstage import Trace
from ragstage.attribution import BUCKETS, RIGHT, UNDECIDED
from ragstage.gate import critical_rule, decide, gate, md_code, md_text, outcome, pair_runs
from ragstage.testing import assert_no_regression


@given(st.sampled_from(BUCKETS), st.sampled_from(BUCKETS))
def test_outcome_is_what_compare_counts(before, after):
    status = outcome(before, after)
    if before in UNDECIDED or after in UNDECIDED:
        assert status == "undecided"
    else:
        assert status == {(True, True): "both_right", (True, False): "broken", (False, True): "fixed",
                          (False, False): "both_wrong"}[(before in RIGHT, after in RIGHT)]


@given(st.lists(st.booleans(), min_size=3, max_size=3))
def test_decide_names_the_first_rule_that_fired_and_the_others_after(fired):
    rules = ("one", "two", "three")
    verdict = decide(rules, {r: (f, f"{r} fired") for r, f in zip(rules, fired)}, "counts")
    failed = tuple(r for r, f in zip(rules, fired) if f)
    assert verdict.passed == (not failed) and verdict.failed == failed
    if not failed:
        assert verdict.line == "PASS: not significantly worse: counts" and verdict.rule is None
    else:
        also = f"; also failed: {', '.join(failed[1:])}" if len(failed) > 1 else ""
        assert verdict.line == f"FAIL ({failed[0]}): {failed[0]} fired: counts{also}" and verdict.rule == failed[0]


def test_critical_rule_names_three_questions_and_counts_the_rest():
    right = {"gold": ["d1"], "retrieved": ["d1"], "prompt": ["d1"], "answer_ids": ["d1"]}
    fabricated = {"gold": ["d1"], "retrieved": ["d1"], "prompt": ["d1"], "answer": "Yes [3].", "correct": True}
    ids = ["a", "b\n", "c", "d", "e"]
    paired = pair_runs([Trace(query_id=q, **right) for q in ids], [Trace(query_id=q, **fabricated) for q in ids])
    fired, why = critical_rule(paired.newly_critical)
    assert fired and why == ("5 question(s) newly critical (a fabricated_citation, b\\n fabricated_citation, "
                             "c fabricated_citation and 2 more)")
    assert critical_rule([]) == (False, "0 question(s) newly critical ()")


def test_md_text_and_md_code_keep_data_inert():
    page = MarkdownIt("commonmark").enable("table").render(
        f"| a | b |\n|---|---|\n| {md_code('x|`y`', cell=True)} | {md_text('<img src=x> [l](u) | # *e*')} |\n")
    assert "<img" not in page and "<a " not in page and "<em>" not in page
    assert page.count("<td>") == 2 and "<code>x|`y`</code>" in page
    assert md_code("C:\\runs") == "`C:\\runs`" and md_code("`a`") == "`` `a` ``"


def test_the_gate_on_people_s_labels_refuses_a_run_labelled_by_a_judge():
    from judged_runs import judged

    runs = judged(questions=40, n=10)
    people = [dataclasses.replace(t, meta={}) for t in runs.silver["before"]]
    for check in (gate, assert_no_regression):
        with pytest.raises(ValueError, match="^after: labelled by a judge .* on 40 of 40 traces: a gate on a judge's "
                                             "labels would pass or fail on the judge's errors"):
            check(people, runs.silver["after"])
