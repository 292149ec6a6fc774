"""``ragstage.gate_ppi``: the gate on judge-labelled runs, its estimate against ppi_py to 1e-9, its refusals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judged_runs import JUDGE, judged, requests, trace
from repo_paths import JUNIT_XSD

from ragstage.gate import pair_runs
from ragstage.gate_ppi import (
    PAIRED_SMALL_FLIPPED,
    PAIRED_SMALL_SAMPLE,
    RULES,
    gate_on_judge,
    gold_buckets,
    judge_estimate,
    paired_too_few,
)
from ragstage.ppi.coverage import simulate_paired
from ragstage.ppi.sample import draw
from ragstage.run_labels import run_labels


@pytest.fixture(scope="module")
def ppi_py():
    return pytest.importorskip("ppi_py")


def reference(ppi_py, y, yhat, u, lam=None):
    """ppi_py's point estimate and 95% interval (tuned lambda unless given)."""
    y, yhat, u = (np.asarray(x, dtype=float) for x in (y, yhat, u))
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, u, lam=lam)))
    low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(y, yhat, u, alpha=0.05, lam=lam))
    return point, low, high


def assert_close(ours, theirs):
    assert abs(ours.estimate - theirs[0]) <= 1e-9 and abs(ours.low - theirs[1]) <= 1e-9
    assert abs(ours.high - theirs[2]) <= 1e-9


def gated(runs, **kwargs):
    return gate_on_judge(runs.silver["before"], runs.silver["after"], gold=(runs.gold["before"], runs.gold["after"]),
                         samples=(runs.samples["before"], runs.samples["after"]), **kwargs)


def check_against_ppi_py(ppi_py, runs, estimate):
    """The three PPI figures of ``estimate`` against ppi_py on the per-question arrays built from the truth."""
    inside = np.isin(runs.ids, runs.drawn)
    order = [runs.ids.index(q) for q in runs.drawn]
    t_b, t_a = runs.truth["before"][order], runs.truth["after"][order]
    j_b, j_a = runs.judge["before"], runs.judge["after"]
    d_gold = t_a.astype(float) - t_b
    d_judge = j_a.astype(float) - j_b
    assert_close(estimate.change, reference(ppi_py, d_gold, d_judge[order], d_judge[~inside]))
    assert_close(estimate.gold_only, reference(ppi_py, d_gold, d_judge[order], d_judge[~inside], lam=0))
    broke_judge = (j_b & ~j_a).astype(float)
    assert_close(estimate.broken, reference(ppi_py, (t_b & ~t_a), broke_judge[order], broke_judge[~inside]))
    assert estimate.judge_fixed == int((~j_b & j_a).sum()) and estimate.judge_broken == int((j_b & ~j_a).sum())
    assert estimate.gold_fixed == int((~t_b & t_a).sum()) and estimate.gold_broken == int((t_b & ~t_a).sum())


def test_the_estimate_is_ppi_py_s_on_the_per_question_differences(ppi_py):
    runs = judged()
    result = gated(runs)
    check_against_ppi_py(ppi_py, runs, result.estimate)
    assert result.rules == RULES and result.passed


@settings(max_examples=25, deadline=None)
@given(fixed=st.floats(0.0, 0.3), broken=st.floats(0.0, 0.3), accuracy=st.floats(0.5, 1.0),
       lenient=st.floats(0.0, 0.5), n=st.integers(10, 150), seed=st.integers(0, 2**16))
def test_every_estimate_is_ppi_py_s_and_decides_the_rules_whatever_the_judge(ppi_py, fixed, broken, accuracy,
                                                                             lenient, n, seed):
    runs = judged(questions=200, fixed=fixed, broken=broken, accuracy=accuracy, lenient_after=lenient, n=n,
                  seed=seed)
    result = gated(runs, max_broken=5)
    estimate = result.estimate
    assert ("paired PPI++" in result.verdict.failed) == (estimate.change.high < 0)
    assert ("max broken" in result.verdict.failed) == (estimate.broken_count()[0] > 5)
    assert result.passed == (not result.verdict.failed)
    d_judge = runs.judge["after"].astype(float) - runs.judge["before"]
    if np.var(d_judge) == 0 or np.var((runs.judge["before"] & ~runs.judge["after"]).astype(float)) == 0:
        return  # a constant judge: ppi_py divides 0 by 0 (ragstage.ppi.means gives the gold-only interval)
    check_against_ppi_py(ppi_py, runs, estimate)


def test_a_judge_that_favours_the_new_run_hides_a_regression_the_estimate_finds():
    runs = judged(fixed=0.02, broken=0.10, lenient_after=0.3)
    result = gated(runs)
    e = result.estimate
    assert e.judge_only > 0 and e.judge_p < 0.05  # the judge alone calls the change a significant improvement
    assert e.change.high < 0 and not result.passed and result.verdict.rule == "paired PPI++"
    assert result.verdict.line.startswith("FAIL (paired PPI++): significantly worse")
    assert f"judge only {e.judge_only:+.3f}" in result.verdict.line and f"{e.change.low:+.3f}" in result.verdict.line


def test_max_broken_is_decided_on_the_estimated_count():
    runs = judged(fixed=0.10, broken=0.05, accuracy=0.95)
    estimate = gated(runs).estimate
    count = estimate.broken_count()[0]
    assert estimate.broken_count() == pytest.approx(
        tuple(x * 600 for x in (estimate.broken.estimate, max(estimate.broken.low, 0), estimate.broken.high)))
    below, above = gated(runs, max_broken=int(count) + 1), gated(runs, max_broken=int(count) - 1)
    assert below.passed and not above.passed and above.verdict.rule == "max broken"
    assert f"about {count:.1f} questions broke" in above.verdict.line


def test_the_critical_rule_reads_the_judge_s_traces():
    runs = judged()
    after = [dataclasses.replace(t, answer="Yes [3].", answer_ids=None, correct=True) if t.query_id == "q0001" else t
             for t in runs.silver["after"]]
    result = gate_on_judge(runs.silver["before"], after, gold=(runs.gold["before"], runs.gold["after"]),
                           samples=(runs.samples["before"], runs.samples["after"]))
    assert result.verdict.rule == "critical" and "q0001 fabricated_citation" in result.verdict.line
    assert result.observed["critical"] == "1 question(s), by the judge's labels"


def test_a_run_labelled_by_people_is_its_own_gold():
    runs = judged()
    people = [trace(q, r, "base") for q, r in zip(runs.ids, runs.truth["before"])]
    result = gate_on_judge(people, runs.silver["after"], gold=(None, runs.gold["after"]),
                           samples=(None, runs.samples["after"]))
    assert result.estimate.labels[0].judged == 0 and result.estimate.labels[1].judged == 600
    paired = pair_runs(people, runs.silver["after"])
    own = {p.query_id: p.before_bucket for p in paired.pairs}
    gold_after = gold_buckets(runs.silver["after"], runs.gold["after"], runs.samples["after"])
    expected = judge_estimate(paired, own, gold_after, runs.drawn, labels=result.estimate.labels)
    assert result.estimate.change == expected.change


def test_judge_estimate_refuses_a_sample_of_every_question_and_questions_not_paired():
    runs = judged(questions=30, n=10)
    paired = pair_runs(runs.silver["before"], runs.silver["after"])
    labels = (run_labels(runs.silver["before"], "b"), run_labels(runs.silver["after"], "a"))
    everything = {q: "none" for q in runs.ids}
    with pytest.raises(ValueError, match="the sample holds every question"):
        judge_estimate(paired, everything, everything, runs.ids, labels=labels)
    with pytest.raises(ValueError, match="1 drawn question"):
        judge_estimate(paired, everything, everything, ["elsewhere"], labels=labels)


def test_gold_buckets_refuses_what_attribute_refuses():
    runs = judged(questions=60, n=20)
    silver, gold, sample = runs.silver["after"], runs.gold["after"], runs.samples["after"]
    assert gold_buckets(silver, gold, sample) == {t.query_id: ("none" if t.gold == ("a",) else "retrieval")
                                                  for t in gold}
    picked = [trace(q, True, "fix") for q in runs.ids[:20]]
    with pytest.raises(ValueError, match="were not drawn in S"):
        gold_buckets(silver, picked, sample, names=("T", "G", "S"))
    with pytest.raises(ValueError, match="S was drawn from other traces than T: 60 requests .* then, 59 now"):
        gold_buckets(silver[1:], gold, sample, names=("T", "G", "S"))
    with pytest.raises(ValueError, match="G: labelled by a judge .* a gold sample is labelled by people"):
        gold_buckets(silver, [dataclasses.replace(t, meta={"labels": JUDGE}) for t in gold], sample,
                     names=("T", "G", "S"))
    with pytest.raises(ValueError, match="appears twice"):
        gold_buckets(silver, gold + gold[:1], sample)
    stratified = draw(requests(silver), 20, 7, by_bucket=True)
    with pytest.raises(ValueError, match="stratified by silver bucket"):
        gold_buckets(silver, gold, stratified)


def test_gate_on_judge_refuses_samples_of_other_questions_and_runs_without_a_judge():
    runs = judged(questions=80, n=20)
    other = draw(requests(runs.silver["after"]), 20, 8)
    with pytest.raises(ValueError, match=r"the two samples draw other questions \(\d+ only in B, \d+ only in A"):
        gate_on_judge(runs.silver["before"], runs.silver["after"], gold=(runs.gold["before"], runs.gold["after"]),
                      samples=(runs.samples["before"], other), sample_names=("B", "A"))
    people = [trace(q, True, "p") for q in runs.ids]
    with pytest.raises(ValueError, match="neither run is labelled by a judge"):
        gate_on_judge(people, people, gold=(None, None), samples=(None, None))
    with pytest.raises(ValueError, match="alpha"):
        gated(runs, alpha=1.5)


def test_paired_too_few_is_the_documented_rule():
    assert paired_too_few(PAIRED_SMALL_SAMPLE - 1, 100)
    assert paired_too_few(PAIRED_SMALL_SAMPLE, PAIRED_SMALL_FLIPPED - 1)
    assert not paired_too_few(PAIRED_SMALL_SAMPLE, PAIRED_SMALL_FLIPPED)


def test_the_warning_rule_flags_every_cell_the_paired_simulation_undercovers():
    """A smaller run of the docs' paired simulation: every cell whose coverage is clearly below 93% has
    fewer gold labels than the rule's threshold, and every cell at or above it covers 93% within noise."""
    for errors in ("shared", "independent"):
        table = simulate_paired(errors=errors, reps=300, population=3000, sizes=(50, 100, 200, 400), seed=11)
        for row in table.itertuples():
            flagged_always = paired_too_few(row.n, 10**6)  # the sample-size part of the rule
            if row.mc_high < 0.93:
                assert flagged_always, row
            if not flagged_always:
                assert row.mc_high >= 0.93, row


def test_the_estimate_prints_warns_and_exports_its_three_figures():
    small = gated(judged(n=60)).estimate
    assert small.warning and "60 gold labels" in small.warning
    assert any(line.startswith("! paired PPI++: 60 gold labels") for line in small.text())
    assert any(line.startswith("**Warning**") for line in small.markdown())
    props = dict(small.properties())
    assert float(props["ppi_low"]) == small.change.low and float(props["judge_estimate"]) == small.judge_only
    assert props["labels"] == "judge" and props["warning"] == small.warning
    data = small.to_dict()
    assert (data["estimate"], data["low"], data["high"]) == (small.change.estimate, small.change.low,
                                                            small.change.high)
    assert data["judges"]["after"] == {"stand-in, model labelled-stand-in, prompt evidence-v1": 600}
    big = gated(judged(n=300)).estimate
    assert big.warning is None and big.to_dict()["warning"] is None
    assert big.threshold("paired PPI++", None).startswith("the 95% PPI++ interval")
    assert big.threshold("max broken", 3) == "PPI++ estimate of broken questions > 3"
    assert big.threshold("max broken", None) is None and big.threshold("critical", None) is None


def test_alpha_sets_the_level_of_the_interval_the_verdict_reads(ppi_py):
    runs = judged()
    wide, narrow = gated(runs).estimate, gated(runs, alpha=0.2).estimate
    assert (wide.level, narrow.level) == ("95%", "80%") and wide.change.estimate == narrow.change.estimate
    order = [runs.ids.index(q) for q in runs.drawn]
    inside = np.isin(runs.ids, runs.drawn)
    d_judge = runs.judge["after"].astype(float) - runs.judge["before"]
    d_gold = runs.truth["after"][order].astype(float) - runs.truth["before"][order]
    low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(d_gold, d_judge[order], d_judge[~inside],
                                                                   alpha=0.2))
    assert abs(narrow.change.low - low) <= 1e-9 and abs(narrow.change.high - high) <= 1e-9
    assert f", 80% {narrow.change.low:+.3f} to {narrow.change.high:+.3f};" in gated(runs, alpha=0.2).verdict.line


def test_a_drawn_question_without_its_gold_row_is_refused():
    runs = judged(questions=60, n=20)
    gold = [t for t in runs.gold["after"] if t.query_id != runs.drawn[0]]
    with pytest.raises(ValueError, match=f"1 drawn request\\(s\\) have no row in G: '{runs.drawn[0]}'"):
        gold_buckets(runs.silver["after"], gold, runs.samples["after"], names=("T", "G", "S"))


@pytest.fixture(scope="module")
def small_runs():
    return judged(questions=40, n=12)


@settings(max_examples=40, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), min_size=1))
def test_any_judge_name_leaves_the_junit_valid_and_the_markdown_its_shape(small_runs, name):
    import xml.etree.ElementTree as ET

    import xmlschema

    def result(judge_name: str):
        judge = {**JUDGE, "judge": judge_name}
        silver = {side: [dataclasses.replace(t, meta={"labels": judge}) for t in small_runs.silver[side]]
                  for side in ("before", "after")}
        return gate_on_judge(silver["before"], silver["after"], gold=(small_runs.gold["before"],
                                                                      small_runs.gold["after"]),
                             samples=(small_runs.samples["before"], small_runs.samples["after"]),
                             names=(name, "after"), gold_names=(name, "g"), sample_names=(name, "s"))

    hostile, plain = result(name), result("plain")
    schema = xmlschema.XMLSchema(str(JUNIT_XSD))
    schema.validate(ET.fromstring(hostile.to_junit().split("\n", 1)[1].encode("utf-8")))
    assert len(hostile.to_markdown().splitlines()) == len(plain.to_markdown().splitlines())
    assert all("\n" not in line for line in hostile.estimate.text())
    assert len(hostile.estimate.text()) == len(plain.estimate.text())
