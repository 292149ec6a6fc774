"""The case editor's inputs without widgets: text <-> values, and inputs -> a lossless trace."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage import Trace, read_traces
from ragstage.widgets import CaseEditor
from ragstage.widgets.case_form import case_inputs, read_case
from ragstage.widgets.parsing import INPUT_FIELDS, LIST_FIELDS, InputField

# Any id a trace may hold, including ones the text boxes cannot spell ("a b", "x,y", "null").
any_id = st.text(min_size=0, max_size=6)
plain_id = st.text(alphabet="abcdxyz019_-:", min_size=1, max_size=4).filter(lambda s: s.lower() not in ("null", "none"))
score = st.floats(allow_nan=False, allow_infinity=False, width=64)
maybe_bool = st.none() | st.booleans()


def ranked(ids: st.SearchStrategy[str]) -> st.SearchStrategy[list]:
    """A ranked list as plain ids, as {"id", "score"} entries, or with some sections."""
    entry = st.fixed_dictionaries({"id": ids, "score": score}, optional={"section": st.text(max_size=5)})
    return st.lists(ids, max_size=4) | st.lists(entry, min_size=1, max_size=4)


def records(ids: st.SearchStrategy[str] = any_id) -> st.SearchStrategy[dict]:
    """A trace record using every field of the format, each optional."""
    return st.fixed_dictionaries({"query_id": ids}, optional={
        "pipeline": st.text(max_size=4), "query": st.text(max_size=10),
        "gold": st.lists(ids, max_size=3), "answerable": st.booleans(),
        "retrieved": ranked(ids), "reranked": st.none() | ranked(ids),
        "prompt": st.none() | st.lists(ids, max_size=3),
        "prompt_source": st.none() | st.sampled_from(["logged", "recovered"]),
        "truncated": st.none() | st.lists(ids, max_size=3), "answer": st.text(max_size=10),
        "answer_ids": st.none() | st.lists(ids, max_size=3), "correct": maybe_bool,
        "refused": st.booleans(), "claims": st.none() | st.lists(st.booleans(), max_size=3),
        "complete": maybe_bool, "query_ok": maybe_bool,
        "error": st.none() | st.fixed_dictionaries({"stage": st.text(max_size=5), "message": st.text(max_size=5)}),
        "model": st.none() | st.text(max_size=4), "prompt_version": st.none() | st.text(max_size=4),
        "timestamp": st.none() | st.text(max_size=4),
        # orjson writes 64-bit integers only
        "meta": st.dictionaries(st.text(max_size=3), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=3),
                                max_size=2),
    })


@given(records())
def test_unedited_inputs_read_back_as_the_same_trace(record):
    trace = Trace.from_dict(record)
    assert read_case(case_inputs(trace), trace, trace).to_dict() == trace.to_dict()


@settings(max_examples=50, deadline=None)  # builds a whole editor per example
@given(st.lists(records(), min_size=1, max_size=3, unique_by=lambda r: r["query_id"]), st.data())
def test_save_round_trips_any_trace_after_an_edit_elsewhere(tmp_path_factory, cases, data):
    traces = [Trace.from_dict(r) for r in cases]
    editor = CaseEditor(traces)
    # edit one judgment of one case and put it back: nothing else may change on the way
    qid = data.draw(st.sampled_from([t.query_id for t in traces]))
    name = data.draw(st.sampled_from(["correct", "query_ok", "complete", "refused", "answerable"]))
    before = editor.fields[qid][name].value
    editor.fields[qid][name].value = data.draw(st.sampled_from(
        [True, False] if INPUT_FIELDS[name].kind == "flag" else ["not set", "true", "false"]))
    editor.fields[qid][name].value = before
    target = tmp_path_factory.mktemp("save") / "cases.jsonl"
    assert editor.save(target) == target
    assert [t.to_dict() for t in read_traces(target)] == [t.to_dict() for t in traces]


@given(records(plain_id), st.data())
def test_retyped_ranked_lists_keep_their_scores_and_sections(record, data):
    trace = Trace.from_dict(record)
    inputs = case_inputs(trace)
    # retype every list with other spacing: the same ids, so the same entries
    for name in LIST_FIELDS:
        if inputs[name] != "null":
            inputs[name] = data.draw(st.sampled_from([",", " ,  ", ",\t"])).join(str(inputs[name]).split(", "))
    back = read_case(inputs, trace, trace)
    assert back.to_dict() == trace.to_dict()


def test_a_ranked_list_keeps_scores_while_every_id_has_one():
    loaded = Trace(query_id="q", gold=["a"], retrieved=["a", "b"], retrieved_scores=[3.0, 2.0],
                   retrieved_sections=["s1", None], reranked=["b", "a"], reranked_scores=[0.9, 0.1])
    inputs = case_inputs(loaded) | {"retrieved": "b", "reranked": "a, b"}
    one = read_case(inputs, loaded, loaded)
    assert (one.retrieved, one.retrieved_scores, one.retrieved_sections) == (("b",), (2.0,), None)
    assert (one.reranked, one.reranked_scores) == (("a", "b"), (0.1, 0.9))
    two = read_case(case_inputs(one) | {"retrieved": "b, a", "reranked": "a, c"}, one, loaded)
    assert two.retrieved_scores == (2.0, 3.0) and two.retrieved_sections == (None, "s1")  # from the loaded case
    assert two.reranked == ("a", "c") and two.reranked_scores is None  # c never had a score


def test_unshown_fields_are_carried_over():
    loaded = Trace(query_id="q", gold=["a"], retrieved=["a"], prompt=["a"], prompt_source="recovered",
                   truncated=["a"], complete=True, answer="it is a", meta={"k": 1})
    edited = read_case(case_inputs(loaded) | {"complete": "false", "prompt": "null"}, loaded, loaded)
    assert (edited.complete, edited.prompt) == (False, None)
    assert (edited.prompt_source, edited.truncated, edited.answer, edited.meta) == ("recovered", ("a",), "it is a",
                                                                                     {"k": 1})


@pytest.mark.parametrize("inputs,words", [
    ({"gold": "null"}, "gold: cannot be null"),
    ({"prompt": "a b"}, "prompt: 'a b' has a space"),
    ({"claims": "maybe"}, "claims: claim label 'maybe'"),
    ({"correct": "perhaps"}, "correct: choose one of"),
])
def test_bad_inputs_name_the_field(inputs, words):
    trace = Trace(query_id="q", gold=["a"])
    with pytest.raises(ValueError, match=words):
        read_case(case_inputs(trace) | inputs, trace, trace)


@given(st.lists(plain_id, max_size=4), st.none() | st.lists(st.booleans(), min_size=1, max_size=4), maybe_bool)
def test_every_field_parses_what_it_shows(ids, claims, judgment):
    for field in INPUT_FIELDS.values():
        value = {"ids": ids, "claims": claims, "tristate": judgment, "flag": bool(judgment)}[field.kind]
        assert field.parse(field.show(value)) == value
        assert field.parse(field.coerce(value)) == value
    assert InputField("reranked", "ids").parse("NULL") is None


def test_coerce_takes_text_as_typed():
    assert INPUT_FIELDS["prompt"].coerce("d1,d2") == "d1,d2"
    assert INPUT_FIELDS["prompt"].coerce(None) == "null"
    assert INPUT_FIELDS["correct"].coerce(False) == "false"
    assert INPUT_FIELDS["refused"].coerce(1) is True
