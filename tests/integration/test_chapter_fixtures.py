"""The fixtures of chapters 1-4 say what the chapters claim they say, and the simulation is sound."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.stats import binom

from ragstage import Trace, compare, diagnose, normal_interval, replay, wilson
from ragstage.attribution import GENERATION_KINDS, REASONS, generation_kind
from ragstage.fixtures import edit_case, find_case, load_json, load_traces
from ragstage.oracles import correctness, sufficiency
from ragstage.simulate import STAGES, end_to_end, simulate_pipeline
from ragstage.stats import interval_coverage


# -- chapter 1 ---------------------------------------------------------------------------------
def test_five_case_corpus_covers_every_id_in_the_cases(five_cases):
    corpus = load_json("five_cases", "corpus.json")
    ids = {d["id"] for d in corpus["documents"]}
    assert ids == {"d1", "d2", "d3"}
    cases = five_cases + load_traces("five_cases", "not_relevance.jsonl")
    used = set()
    for t in cases:
        used |= set(t.gold) | set(t.retrieved) | set(t.reranked or ()) | set(t.prompt or ())
    assert used <= ids
    assert corpus["question"] == cases[0].query and corpus["gold"] == list(cases[0].gold)


# -- chapter 3 ---------------------------------------------------------------------------------
def test_policy_corpus_matches_the_audit_and_dates_the_versions(audit_cases):
    docs = {d["id"]: d for d in load_json("policy", "corpus.json")["documents"]}
    assert set(docs) == {"returns-v1", "returns-v2", "shipping", "leave", "benefits"}
    assert "14 days" in docs["returns-v1"]["text"] and "30 days" in docs["returns-v2"]["text"]
    assert docs["returns-v1"]["effective_to"] < docs["returns-v2"]["effective_from"]
    assert "14 weeks" in docs["leave"]["text"]
    for t in audit_cases.values():
        assert set(t.gold) | set(t.retrieved) | set(t.prompt or ()) <= set(docs)


def test_policy_exercises_produce_their_expected_diagnoses(audit_cases):
    spec = load_json("policy", "exercises.json")
    assert len(spec["exercises"]) == 4
    for ex in spec["exercises"]:
        d = diagnose(audit_cases[ex["case"]].replace(**ex["edit"]), spec["require"])
        want = ex["expect"]
        assert d.stage.value == want["stage"], ex["name"]
        for key in ("recall", "retention", "support"):
            assert getattr(d, key) == want[key], (ex["name"], key)
        if "reason" in want:
            assert d.reason == want["reason"]


def test_incident_batch_exercises_every_citation_check(incident_batch, four_logs):
    assert len(incident_batch) == 40
    handbook = {d["id"] for d in load_json("incidents", "handbook.json")["documents"]}
    assert {"handbook:leave", "handbook:benefits", "handbook:holidays"} <= handbook
    for t in incident_batch + four_logs:
        assert set(t.gold) | set(t.retrieved) | set(t.prompt or ()) <= handbook
    reasons = Counter(diagnose(t).reason for t in incident_batch)
    for key in ("refused", "cited_outside", "numeric_unmarked", "unsupported"):
        assert reasons[REASONS[key]] >= 2, key
    counts = replay(incident_batch)
    assert counts["retrieval"] == 8 and counts["prompt_assembly"] == 9 and counts["generation"] == 10


def test_the_fix_moved_incidents_instead_of_removing_them(incident_batch):
    after = load_traces("incidents", "after_fix.jsonl")
    assert [t.query_id for t in incident_batch] == [t.query_id for t in after]
    c = compare(incident_batch, after)
    assert (c.n, c.fixed, c.broken) == (40, 2, 2)
    assert c.p_value == 1.0
    assert c.migration.loc["prompt_assembly", "generation"] == 5
    assert c.migration.loc["none", "generation"] == 2


def test_dropping_the_prompt_field_hides_generation(incident_batch):
    blind = replay(t.replace(prompt=None) for t in incident_batch)
    assert "generation" not in blind and "source_or_label" not in blind
    assert blind["retrieval"] == replay(incident_batch)["retrieval"]


# -- chapter 2 ---------------------------------------------------------------------------------
def test_published_figures_are_self_consistent():
    pub = load_json("intervals", "figures.json")["published"]
    assert wilson(pub["recall_at_3"]["k"], pub["recall_at_3"]["n"]) == pytest.approx((0.480, 0.891), abs=5e-4)
    ill = load_json("intervals", "figures.json")["illustration"]["funnel"]
    assert sum(ill.values()) == 300 and 300 - ill["retrieval"] == 210


def test_multi_relevant_fixture_has_several_relevant_documents():
    ts = load_traces("intervals", "multi_relevant.jsonl")
    sizes = Counter(len(t.gold) for t in ts)
    assert len(ts) == 60 and sizes[1] and sizes[2] and sizes[3]


# -- chapter 4 ---------------------------------------------------------------------------------
def test_query_understanding_traces():
    got = {t.query_id: diagnose(t).stage.value for t in load_traces("stages", "query_understanding.jsonl")}
    assert got == {"qu-1": "query_understanding", "qu-2": "query_understanding", "qu-3": "none", "qu-4": "none"}


def test_end_to_end_is_the_product():
    assert end_to_end({s: 0.9 for s in STAGES}) == pytest.approx(0.59049)
    assert end_to_end({"retrieval": 0.7}) == end_to_end({"generation": 0.7}) == pytest.approx(0.7)
    with pytest.raises(ValueError):
        end_to_end({"search": 0.9})
    with pytest.raises(ValueError):
        end_to_end({"retrieval": 1.5})


def test_simulation_is_seeded_and_writes_valid_traces():
    a = simulate_pipeline(200, {"retrieval": 0.8, "generation": 0.9}, seed=3)
    b = simulate_pipeline(200, {"retrieval": 0.8, "generation": 0.9}, seed=3)
    assert [t.to_dict() for t in a.traces] == [t.to_dict() for t in b.traces]
    c = simulate_pipeline(200, {"retrieval": 0.8, "generation": 0.9}, seed=4)
    assert [t.to_dict() for t in a.traces] != [t.to_dict() for t in c.traces]
    for t in a.traces:
        Trace.from_dict(t.to_dict())
        assert len(t.retrieved) == 20 and len(t.reranked) == 5 and 2 <= len(t.prompt) <= 5
        assert t.query_ok is None


def test_a_perfect_system_answers_everything():
    run = simulate_pipeline(100, {}, seed=0)
    assert correctness(run.traces) == (100, 100)
    assert sufficiency(run.traces) == (100, 100)


def test_simulated_stage_rates_match_their_settings():
    rates = {"query_understanding": 0.9, "retrieval": 0.8, "reranking": 0.85, "prompt_assembly": 0.9,
             "generation": 0.7}
    run = simulate_pipeline(4000, rates, seed=11)
    stages = Counter(diagnose(t).stage.value for t in run.traces)
    entered = 4000
    for stage in STAGES:
        lost = stages[stage]
        rate = (entered - lost) / entered
        low, high = wilson(entered - lost, entered, z=3.3)
        assert low <= rates[stage] <= high, (stage, rate)
        entered -= lost
    k, n = correctness(run.traces)
    assert abs(k / n - end_to_end(rates)) < 0.03


def test_oracles_separate_the_two_halves():
    up = simulate_pipeline(2000, {"retrieval": 0.75, "generation": 0.95}, seed=5)
    down = simulate_pipeline(2000, {"retrieval": 0.95, "generation": 0.75}, seed=5)

    def share(kn):
        return kn[0] / kn[1]

    assert share(correctness(up.oracle)) > 0.92 and share(sufficiency(up.traces)) < 0.8
    assert share(correctness(down.oracle)) < 0.8 and share(sufficiency(down.traces)) > 0.92
    # the oracle forces the gold passage into every prompt
    assert sufficiency(up.oracle) == (2000, 2000)
    # on questions whose gold reached the prompt, the oracle and the run agree
    for t, o in zip(up.traces, up.oracle):
        if set(t.gold) & set(t.prompt):
            assert (diagnose(t).stage.value == "none") == (diagnose(o).stage.value == "none")


def test_generation_kinds_follow_the_weights():
    run = simulate_pipeline(3000, types={"x": {"rates": {"generation": 0.5},
                                              "kinds": {"wrong_passage": 1.0}}}, seed=2)
    kinds = Counter(generation_kind(t) for t in run.traces)
    assert set(kinds) == {None, "wrong_passage"}
    run = simulate_pipeline(3000, {"generation": 0.4}, seed=2)
    kinds = Counter(generation_kind(t) for t in run.traces)
    assert set(kinds) - {None} == set(GENERATION_KINDS)
    assert all(t.meta == {} for t in run.traces)


def test_generation_kind_on_hand_traces():
    base = dict(query_id="q", gold=["g"], retrieved=["g", "x"], prompt=["g", "x"])
    assert generation_kind(Trace(**base, correct=True)) is None
    assert generation_kind(Trace(**base, refused=True)) == "refused"
    assert generation_kind(Trace(**base, claims=[True, False])) == "ignored_context"
    assert generation_kind(Trace(**base, answer_ids=["z"])) == "ignored_context"
    assert generation_kind(Trace(**base, answer_ids=["x"])) == "wrong_passage"
    assert generation_kind(Trace(**base, answer_ids=["g"], correct=False)) == "partial"
    assert generation_kind(Trace(**base, correct=False)) == "unclassified"
    assert generation_kind(Trace(query_id="q", gold=["g"], retrieved=["x"], correct=False)) is None


def test_question_types_are_recorded_and_split():
    spec = load_json("stages", "systems.json")
    run = simulate_pipeline(spec["n"], types=spec["question_types"], seed=spec["seed"])
    by_type = Counter(t.meta["qtype"] for t in run.traces)
    assert set(by_type) == {"specific-rare", "broad"}
    lost = {q: Counter(diagnose(t).stage.value for t in run.traces if t.meta["qtype"] == q) for q in by_type}
    assert lost["specific-rare"]["retrieval"] > lost["specific-rare"]["generation"]
    assert lost["broad"]["generation"] > lost["broad"]["retrieval"]


def test_simulation_rejects_bad_settings():
    with pytest.raises(ValueError):
        simulate_pipeline(0, {})
    with pytest.raises(ValueError):
        simulate_pipeline(10, {}, types={"a": {"rates": {}}})
    with pytest.raises(ValueError):
        simulate_pipeline(10, None)
    with pytest.raises(ValueError):
        simulate_pipeline(10, types={"a": {"rates": {}, "kinds": {"daydream": 1}}})
    with pytest.raises(ValueError):
        simulate_pipeline(10, {}, top_n=1)


def _exact_coverage(n: int, p: float, method) -> float:
    ks = np.arange(n + 1)
    covers = np.array([lo <= p <= hi for lo, hi in (method(int(k), n) for k in ks)])
    return float(binom.pmf(ks, n, p)[covers].sum())


def test_simulated_coverage_agrees_with_the_exact_coverage():
    cov = interval_coverage([10, 15, 50], [0.5, 0.9], reps=40_000, seed=7)
    for row in cov.itertuples():
        method = wilson if row.method == "wilson" else normal_interval
        exact = _exact_coverage(row.n, row.p, method)
        assert row.mc_low - 0.005 <= exact <= row.mc_high + 0.005, row
    again = interval_coverage([10, 15, 50], [0.5, 0.9], reps=40_000, seed=7)
    assert cov.equals(again)
    with pytest.raises(ValueError):
        interval_coverage([10], [1.0])


# -- the exercises at the end of each chapter say what an edit should produce ------------------
# Chapters 1-3 declare their exercises' outcomes once, in ragstage/exercises/ch01-ch03.py;
# tests/integration/test_exercises.py runs each solution from its chapter's namespace against them.
def test_chapter_2_multi_relevant_fixture():
    from ragstage.metrics import hit_at_k
    runs = load_traces("intervals", "multi_relevant.jsonl")
    hits = [hit_at_k(t.retrieved, t.gold, 5) for t in runs]
    assert sum(hits) == 25
    m03 = next(t for t in runs if t.query_id == "m03")
    assert m03.gold == ("s020",) and m03.retrieved[0] == "s150" and not hit_at_k(m03.retrieved, m03.gold, 5)




# -- the one-call edit the exercises use -----------------------------------------------------------
def test_edit_case_changes_a_copy_and_checks_the_edit():
    batch = load_traces("incidents", "batch.jsonl")
    edited = edit_case(batch, ["inc-210", "inc-211"], correct=True)
    assert [t.query_id for t in edited] == [t.query_id for t in batch]
    assert find_case(edited, "inc-210").correct is True and find_case(edited, "inc-211").correct is True
    assert find_case(batch, "inc-210") is batch[[t.query_id for t in batch].index("inc-210")]
    assert sum(a is not b for a, b in zip(batch, edited)) == 2
    with pytest.raises(KeyError, match="no case 'inc-999' among 40 traces"):
        edit_case(batch, "inc-999", correct=True)
    with pytest.raises(Exception, match="retrieved"):
        edit_case(batch, "inc-210", retrieved=5)
