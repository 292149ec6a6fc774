"""The counting path's typed decoding: it must accept, convert and reject exactly as check_record does."""

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.attribution import diagnose, diagnose_record
from ragstage.errors import TraceError
from ragstage.fields import FIELDS, check_record
from ragstage.python_rules import count_lines
from ragstage.tally import tally_of_rows, tally_records
from ragstage.typed_record import Record, as_record, decode_record

# Values of every JSON kind, plus the shapes the fields really take (ids, ranked entries, errors).
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.sampled_from(["", "d1", "d2", "logged", "recovered", "ID: d1", "It is 20 weeks [1]."])
IDS = st.lists(st.sampled_from(["d1", "d2", "d3"]) | st.integers(0, 3), max_size=4)
RANKED = st.lists(st.fixed_dictionaries({"id": st.sampled_from(["d1", "d2"]), "score": st.floats(-1, 1)},
                                        optional={"section": st.none() | st.text(max_size=3)}), max_size=3)
VALUES = SCALARS | IDS | RANKED | st.lists(st.booleans(), max_size=3) \
    | st.fixed_dictionaries({"stage": st.sampled_from(["retrieval", 3])}, optional={"message": st.just("down")}) \
    | st.dictionaries(st.sampled_from(["kind", "stage"]), SCALARS | st.integers() | st.lists(st.integers()), max_size=2)
NAMES = st.sampled_from([*FIELDS, "promt", "retrieved_scores"])


def records():
    return st.dictionaries(NAMES, VALUES, max_size=8).map(lambda d: {"query_id": "q", **d} if "query_id" not in d
                                                          or d["query_id"] is None and len(d) % 2 else d)


def _same(rec, clean):
    for name in FIELDS:
        got, want = getattr(rec, name), clean[name]
        assert (type(got), got) == (type(want), want), name  # one normalised form, whichever path


def _agree_or_fail_alike(reference, other, line):
    """``(reference(line), other(line))``; None when ``reference`` rejects the line, after checking
    that ``other`` rejects it with the same field and message."""
    try:
        want = reference(line)
    except TraceError as expected:
        with pytest.raises(TraceError) as got:
            other(line)
        assert (got.value.field, got.value.detail) == (expected.field, expected.detail)
        return None
    return want, other(line)


@settings(max_examples=1500, deadline=None)
@given(records())
def test_decoding_agrees_with_check_record_on_any_object(obj):
    line = json.dumps(obj).encode()  # orjson cannot write integers beyond 64 bits
    # check_record is what every other JSON Lines reader does
    both = _agree_or_fail_alike(lambda raw: check_record(orjson.loads(raw)), decode_record, line)
    if both is None:
        return
    clean, rec = both
    _same(rec, clean)
    assert diagnose_record(rec) == diagnose_record(as_record(clean))


def test_plain_lines_take_the_typed_path_and_others_the_full_check():
    plain = decode_record(b'{"query_id": "q", "gold": ["d1"], "retrieved": ["d1"], "claims": [true]}')
    assert plain.gold == ["d1"] and plain.claims == [True] and plain.meta == {}
    converted = decode_record(b'{"query_id": 7, "retrieved": [{"id": 1, "score": 0.5}], "meta": null}')
    assert converted.query_id == "7" and converted.retrieved == ["1"] and converted.meta == {}
    assert decode_record(b'{"query_id": "q"}').meta is not decode_record(b'{"query_id": "q"}').meta


@pytest.mark.parametrize("line, field, words", [
    (b'{"query_id": "q", "promt": ["d1"]}', "promt", "unknown field"),
    (b'{"query_id": "q", "gold": "d1"}', "gold", "list of ids"),
    (b'{"query_id": "q", "gold": null}', "gold", "must not be null"),
    (b'{"gold": ["d1"]}', "query_id", "missing"),
    (b'{"query_id": null}', "query_id", "missing"),
    (b'{"query_id": "q", "answerable": 1}', "answerable", "true or false"),
    (b'{"query_id": "q", "prompt_source": "guessed"}', "prompt_source", "logged, recovered"),
    (b'["q"]', None, "JSON object"),
])
def test_bad_lines_name_the_field(line, field, words):
    with pytest.raises(TraceError) as err:
        decode_record(line)
    assert err.value.field == field and words in err.value.detail


def test_meta_numbers_read_as_orjson_reads_them():
    # orjson reads an integer beyond 64 bits as a float; the typed path must agree, or a group
    # named by such a meta key would differ between `ragstage attribute` and the notebooks.
    line = b'{"query_id": "q", "meta": {"run": 123456789012345678901234567890, "ok": [1, -9223372036854775809]}}'
    assert decode_record(line).meta == check_record(orjson.loads(line))["meta"]
    assert isinstance(decode_record(line).meta["run"], float)


def test_a_line_that_is_not_json_raises_the_json_error():
    with pytest.raises(orjson.JSONDecodeError):
        decode_record(b'{"query_id": "q",')


def test_record_fields_are_the_trace_fields_in_order():
    assert Record.__struct_fields__ == tuple(FIELDS)


PLAIN_SAMPLES = {str: ["x", ""], bool: [True, False], list[str]: [["a", "b"], []],
                 list[bool]: [[True, False]], dict[str, Any]: [{"k": [1]}]}


@pytest.mark.parametrize("name", [name for name in FIELDS if name != "query_id"])
def test_each_field_takes_its_plain_type_as_is_and_null_as_declared(name):
    spec = FIELDS[name]
    for value in PLAIN_SAMPLES[spec.kind.plain] if spec.kind.plain is not None else []:
        assert check_record({"query_id": "q", name: value})[name] == value
    if spec.nullable:
        assert check_record({"query_id": "q", name: None})[name] == ({} if name == "meta" else None)
    else:
        with pytest.raises(TraceError, match="must not be null"):
            check_record({"query_id": "q", name: None})
    if spec.kind.plain is None:  # a check that does more than a type test: not every string passes
        with pytest.raises(TraceError):
            check_record({"query_id": "q", name: "x"})


def test_as_record_diagnoses_like_the_trace(five_cases):
    for trace in five_cases:
        clean = check_record(trace.to_dict())
        assert diagnose_record(as_record(clean)) == diagnose(trace)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10)


@settings(max_examples=3000, deadline=None)
@given(st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=3))
def test_free_form_meta_reads_as_orjson_reads_it(meta):
    # The assumption behind _as_orjson_reads: big integers are the decoders' only difference.
    line = json.dumps({"query_id": "q", "meta": meta}).encode()
    assert repr(decode_record(line).meta) == repr(orjson.loads(line)["meta"])


def _counted(line):
    """The tally of one line by the counting loop of JSON Lines files (its decoding written into the loop)."""
    rows = {}
    count_lines([[line]], rows, [].append, None, True, [0])
    return tally_of_rows(rows)


@settings(max_examples=800, deadline=None)
@given(records())
def test_the_counting_loop_decodes_as_decode_record(obj):
    both = _agree_or_fail_alike(lambda raw: tally_records([decode_record(raw)]), _counted, json.dumps(obj).encode())
    if both is not None:
        want, got = both
        assert got == want
