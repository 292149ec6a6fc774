"""Stage attribution: the published fixtures, every bucket and reason, and its monotonicity."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage import BUCKETS, Outcome, Trace, diagnose, replay
from ragstage.attribution import FLAGS, REASONS, RIGHT, SEVERITY, UNDECIDED, survives
from ragstage.fixtures import load_traces


def test_five_cases_of_the_hand_fixture(five_cases):
    got = {t.query_id: diagnose(t).stage for t in five_cases}
    assert got == {"A": Outcome.RETRIEVAL, "B": Outcome.RERANKING, "C": Outcome.GENERATION,
                   "D": Outcome.PROMPT_ASSEMBLY, "E": Outcome.NONE}


def test_service_failure_and_unlabelled_question_are_not_relevance_failures():
    got = {t.query_id: diagnose(t) for t in load_traces("five_cases", "not_relevance.jsonl")}
    assert got["F"].stage is Outcome.ENDPOINT_UNAVAILABLE
    assert "retired" in got["F"].reason and "reranking" in got["F"].reason
    assert got["G"].stage is Outcome.LABEL_MISSING
    assert got["G"].recall is None and got["G"].retention is None


@pytest.mark.parametrize("case, recall, retention, support, stage", [
    ("retrieval-miss", 0.0, 0.0, 0.0, Outcome.RETRIEVAL),
    ("context-dropped", 1.0, 0.0, 0.0, Outcome.PROMPT_ASSEMBLY),
    ("unsupported-answer", 1.0, 1.0, 0.5, Outcome.GENERATION),
    ("supported-answer", 1.0, 1.0, 1.0, Outcome.UNJUDGED),  # support is not correctness
    ("correct-refusal", None, None, None, Outcome.CORRECT_REFUSAL),
    ("unnecessary-refusal", 1.0, 1.0, None, Outcome.GENERATION),
])
def test_six_audit_cases_with_require_all(audit_cases, case, recall, retention, support, stage):
    d = diagnose(audit_cases[case], require="all")
    assert (d.recall, d.retention, d.support, d.stage) == (recall, retention, support, stage)


def test_audit_reasons(audit_cases):
    assert diagnose(audit_cases["unsupported-answer"], "all").reason == REASONS["unsupported"]
    assert diagnose(audit_cases["unnecessary-refusal"], "all").reason == REASONS["refused"]


def test_four_stored_incidents_replay_into_one_count_per_bucket(four_logs):
    counts = replay(four_logs)
    assert counts == {"retrieval": 1, "prompt_assembly": 1, "generation": 1, "source_or_label": 1}


def base(**kw):
    fields = dict(query_id="q", gold=["g"], retrieved=["x", "g"], reranked=["g"], prompt=["g", "x"])
    fields.update(kw)
    return Trace(**fields)


def test_exercises_of_the_audit_article(audit_cases):
    moved = audit_cases["context-dropped"].replace(prompt=["returns-v1", "returns-v2"])
    assert diagnose(moved, "all").stage is Outcome.GENERATION
    supported = diagnose(audit_cases["unsupported-answer"].replace(claims=[True, True]), "all")
    assert supported.stage is Outcome.UNJUDGED and "correctness was not judged" in supported.reason
    missing = audit_cases["correct-refusal"].replace(refused=False)
    d = diagnose(missing, "all")
    assert d.stage is Outcome.MISSING_REFUSAL and d.recall is None
    two = Trace(query_id="two", gold=["a", "b"], retrieved=["a", "x"], prompt=["a"], claims=[True])
    assert diagnose(two, "all").recall == 0.5
    assert diagnose(two, "all").stage is Outcome.RETRIEVAL
    assert diagnose(two, "any").stage is Outcome.UNJUDGED


def test_absent_reranked_means_no_reranking_stage():
    assert diagnose(base(reranked=None, answer_ids=["g"])).stage is Outcome.NONE
    assert diagnose(base(reranked=[], answer_ids=["g"])).stage is Outcome.RERANKING


def test_prompt_not_logged_is_neither_a_loss_nor_right():
    for judged in (dict(correct=False), dict(correct=True), dict(answer_ids=["g"])):
        d = diagnose(base(prompt=None, **judged))
        assert d.stage is Outcome.NOT_LOGGED and "not logged" in d.reason and d.retention is None
        assert not d.right
    # a loss at a logged stage upstream is still named
    assert diagnose(base(prompt=None, reranked=["x"])).stage is Outcome.RERANKING


def test_truncated_gold_is_an_assembly_loss_with_its_own_reason():
    d = diagnose(base(prompt=["x"], truncated=["g"], answer_ids=["x"]))
    assert d.stage is Outcome.PROMPT_ASSEMBLY and d.reason.startswith("truncated")
    assert "truncated" not in diagnose(base(prompt=["x"], truncated=["x"])).reason


def test_query_understanding_comes_before_retrieval():
    assert diagnose(base(query_ok=False, retrieved=[])).stage is Outcome.QUERY_UNDERSTANDING
    assert diagnose(base(query_ok=True, answer_ids=["g"])).stage is Outcome.NONE


def test_error_comes_first():
    d = diagnose(base(error={"stage": "generation", "message": "timeout"}, answerable=False))
    assert d.stage is Outcome.ENDPOINT_UNAVAILABLE


def test_judgement_order_correct_then_answer_ids_then_claims():
    assert diagnose(base(correct=True, answer_ids=["x"], claims=[False])).stage is Outcome.NONE
    assert diagnose(base(answer_ids=["g"], claims=[False])).stage is Outcome.NONE
    assert diagnose(base(answer_ids=[])).stage is Outcome.GENERATION  # a NONE answer is wrong
    assert diagnose(base(claims=[True, True])).stage is Outcome.UNJUDGED
    assert diagnose(base(claims=[True, False])).stage is Outcome.GENERATION
    assert diagnose(base(claims=[True], complete=False)).stage is Outcome.GENERATION
    assert diagnose(base(complete=True)).stage is Outcome.UNJUDGED
    assert diagnose(base()).stage is Outcome.UNJUDGED
    assert diagnose(base(claims=[])).stage is Outcome.UNJUDGED


@pytest.mark.parametrize("kw, reason", [
    (dict(refused=True, correct=True), "refused"),
    (dict(answer_ids=["z"]), "cited_outside"),
    (dict(answer="Leave is 14 weeks [3].", correct=False), "cited_outside"),
    (dict(answer="Leave is paid [1]. It lasts 20 weeks.", correct=False), "numeric_unmarked"),
    (dict(answer="Leave lasts 20 weeks.", correct=False), "numeric_unmarked"),
    (dict(answer="Leave is paid [1].", correct=False, claims=[False]), "unsupported"),
    (dict(answer="Leave is paid [1].", correct=False, claims=[True], complete=False), "partial"),
    (dict(answer_ids=["x"]), "non_gold"),
    (dict(answer_ids=["g"], correct=False), "gold_named_wrong"),
    (dict(correct=False), "wrong"),
])
def test_generation_reasons(kw, reason):
    d = diagnose(base(**kw))
    assert d.stage is Outcome.GENERATION and (d.code, d.reason) == (reason, REASONS[reason])


def test_id_answers_are_not_free_text_and_are_never_flagged_for_numbers():
    d = diagnose(base(answer="ID: 12345", answer_ids=["12345"], prompt=["g", "12345"], correct=False))
    assert d.reason == REASONS["non_gold"]
    assert "numeric_unmarked" not in d.flags


@pytest.mark.parametrize("answer, flagged", [
    ("Leave lasts 20 weeks.", True),             # no markers at all: still flagged
    ("Leave lasts 20 weeks [1].", False),
    ("Leave is paid [1]. It lasts 20 weeks.", True),
    ("Leave is paid in full [1].", False),
    ("", False),
])
def test_numeric_unmarked_flag_on_free_text(answer, flagged):
    assert ("numeric_unmarked" in diagnose(base(answer=answer, correct=True)).flags) is flagged


def test_fabricated_citation_is_flagged_on_right_answers_too():
    right = diagnose(base(answer_ids=["g", "z"]))         # names gold (right), and z is not in the prompt
    assert right.stage is Outcome.NONE and right.flags == ("fabricated_citation",)
    assert right.severity == "critical"
    marker = diagnose(base(answer="Paid leave [1][4].", correct=True))
    assert marker.flags == ("fabricated_citation",)
    assert diagnose(base(answer="Paid leave [2].", correct=True)).flags == ()
    assert diagnose(base(prompt=None, answer_ids=["z"])).flags == ()  # no prompt logged: nothing to check


def test_severities_follow_seed_004():
    assert set(FLAGS) <= set(SEVERITY) and set(SEVERITY.values()) == {"critical", "high", "medium"}
    assert SEVERITY["missing_refusal"] == "critical" and SEVERITY["retrieval"] == "high"
    assert diagnose(base(answer_ids=["g"])).severity is None
    assert diagnose(base(answer_ids=["x"])).severity == "high"
    assert diagnose(base(answer="It is 20 weeks.", correct=True)).severity == "medium"
    for bucket in ("none", "correct_refusal", "unjudged", "not_logged", "label_missing"):
        assert bucket not in SEVERITY


def test_wrong_but_fully_supported_points_at_source_or_label():
    d = diagnose(base(correct=False, claims=[True, True]))
    assert d.stage is Outcome.SOURCE_OR_LABEL and d.support == 1.0
    # ... unless the answer is known to be incomplete: then it is partial extraction
    assert diagnose(base(correct=False, claims=[True], complete=False)).reason == REASONS["partial"]


def test_refusals_on_unanswerable_questions():
    assert diagnose(base(answerable=False, gold=[], refused=True)).stage is Outcome.CORRECT_REFUSAL
    assert diagnose(base(answerable=False, gold=[], refused=False)).stage is Outcome.MISSING_REFUSAL
    assert diagnose(base(gold=[])).stage is Outcome.LABEL_MISSING


def test_right_buckets_and_bucket_order():
    assert RIGHT == {"none", "correct_refusal"} and UNDECIDED == {"unjudged", "not_logged"}
    assert not RIGHT & UNDECIDED
    assert BUCKETS[0] == "endpoint_unavailable" and BUCKETS[-2:] == ("unjudged", "not_logged")
    assert diagnose(base(correct=True)).right and not diagnose(base(correct=False)).right
    assert str(Outcome.RETRIEVAL) == "retrieval" and Outcome.RETRIEVAL == "retrieval"


def test_require_is_checked():
    with pytest.raises(ValueError, match="require"):
        diagnose(base(), require="most")


# --- properties -------------------------------------------------------------------------
IDS = st.sampled_from(["g1", "g2", "d1", "d2", "d3", "d4"])
ID_LISTS = st.lists(IDS, max_size=5, unique=True)
STAGE_ORDER = {s: i for i, s in enumerate([Outcome.RETRIEVAL, Outcome.RERANKING, Outcome.NOT_LOGGED,
                                            Outcome.PROMPT_ASSEMBLY, Outcome.GENERATION, Outcome.SOURCE_OR_LABEL,
                                            Outcome.NONE, Outcome.UNJUDGED])}


@st.composite
def traces(draw):
    return Trace(query_id="q", gold=draw(st.lists(st.sampled_from(["g1", "g2"]), min_size=1, unique=True)),
                 retrieved=draw(ID_LISTS), reranked=draw(st.none() | ID_LISTS), prompt=draw(st.none() | ID_LISTS),
                 answer_ids=draw(st.none() | ID_LISTS), correct=draw(st.none() | st.booleans()),
                 claims=draw(st.none() | st.lists(st.booleans(), max_size=3)), refused=draw(st.booleans()),
                 complete=draw(st.none() | st.booleans()), query_ok=draw(st.none() | st.just(True)),
                 answer=draw(st.sampled_from(["", "ID: d1", "It is 20 weeks [1].", "It is 20 weeks.", "See [9]."])))


@settings(max_examples=400, deadline=None)
@given(traces(), st.sampled_from(["retrieved", "reranked", "prompt"]), st.sampled_from(["any", "all"]))
def test_adding_gold_to_a_later_stage_never_moves_the_diagnosis_earlier(trace, stage_field, require):
    before = diagnose(trace, require).stage
    current = getattr(trace, stage_field)
    if current is None:
        return
    after = diagnose(trace.replace(**{stage_field: list(current) + [g for g in trace.gold if g not in current]}),
                     require).stage
    assert STAGE_ORDER[after] >= STAGE_ORDER[before]


@settings(max_examples=300, deadline=None)
@given(traces())
def test_every_reason_is_the_text_of_its_code(trace):
    d = diagnose(trace)
    assert d.reason == REASONS[d.code]
    failed = diagnose(trace.replace(error={"stage": "retrieval", "message": "timeout"}))
    assert (failed.code, failed.reason) == ("service_failure", "service failure at retrieval: timeout")


@settings(max_examples=300, deadline=None)
@given(traces())
def test_all_never_loses_a_question_later_than_any(trace):
    assert STAGE_ORDER[diagnose(trace, "all").stage] <= STAGE_ORDER[diagnose(trace, "any").stage]


@settings(max_examples=300, deadline=None)
@given(traces())
def test_numbers_are_shares_or_none(trace):
    d = diagnose(trace)
    for value in (d.recall, d.retention, d.support):
        assert value is None or 0.0 <= value <= 1.0
    assert (d.support is None) == (not trace.claims)


@settings(max_examples=300, deadline=None)
@given(traces())
def test_flags_are_known_and_do_not_depend_on_gold(trace):
    flags = diagnose(trace).flags
    assert set(flags) <= set(FLAGS)
    assert diagnose(trace.replace(gold=["d4"])).flags == flags


@settings(max_examples=300, deadline=None)
@given(ID_LISTS, ID_LISTS, st.sampled_from(["any", "all"]))
def test_survives_matches_its_definition(gold, ids, require):
    kept = [g for g in gold if g in ids]
    expected = bool(kept) if require == "any" else len(kept) == len(gold)
    assert survives(gold, ids, require) is expected


@settings(max_examples=300, deadline=None)
@given(traces())
def test_an_unlogged_prompt_is_never_right_and_never_blames_assembly_or_generation(trace):
    d = diagnose(trace.replace(prompt=None))
    assert not d.right
    assert d.stage not in (Outcome.PROMPT_ASSEMBLY, Outcome.GENERATION, Outcome.SOURCE_OR_LABEL, Outcome.UNJUDGED)


@settings(max_examples=300, deadline=None)
@given(traces(), st.sampled_from(["any", "all"]))
def test_a_repeated_gold_id_changes_nothing(trace, require):
    # One gold id is tested by membership, several by set intersection: the two must agree.
    repeated = trace.replace(gold=[*trace.gold, *trace.gold])
    assert diagnose(repeated, require) == diagnose(trace, require)


@settings(max_examples=400, deadline=None)
@given(traces(), st.sampled_from(["any", "all"]))
def test_the_walk_stops_where_survives_says(trace, require):
    # diagnose_record tests survival inline for speed; it must agree with survives() stage by stage.
    stage = diagnose(trace, require).stage
    kept = [survives(trace.gold, trace.retrieved, require),
            trace.reranked is None or survives(trace.gold, trace.reranked, require),
            trace.prompt is None or survives(trace.gold, trace.prompt, require)]
    lost = {Outcome.RETRIEVAL: 0, Outcome.RERANKING: 1, Outcome.PROMPT_ASSEMBLY: 2}
    first_lost = kept.index(False) if False in kept else None
    assert lost.get(stage) == first_lost
