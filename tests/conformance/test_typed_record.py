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
from ragstage.trace import load_trace_line
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
    both = _agree_or_fail_alike(lambda raw: check_record(load_trace_line(raw)), decode_record, line)
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


@pytest.mark.parametrize("line, field", [
    (b'{"query_id": "q", "meta": {"run": 123456789012345678901234567890}}', "meta.run"),
    (b'{"query_id": "q", "meta": {"ok": 1, "deep": {"x": [2, -9223372036854775809]}}}', "meta.deep"),
    (b'{"query_id": 7, "meta": {"run": 18446744073709551616}}', "meta.run"),  # the full check's path
])
def test_meta_integers_beyond_64_bits_are_refused_on_every_path(line, field):
    # orjson reads such an integer as a float, msgspec exactly: both paths refuse it, naming the key.
    for read in (decode_record, lambda raw: check_record(load_trace_line(raw))):
        with pytest.raises(TraceError) as err:
            read(line)
        assert err.value.field == field and "64-bit" in err.value.detail


def test_meta_floats_written_as_floats_stay_floats():
    line = b'{"query_id": "q", "meta": {"big": 1e20, "edge": 18446744073709551616.0, "int": 18446744073709551615}}'
    want = {"big": 1e20, "edge": 18446744073709551616.0, "int": (1 << 64) - 1}
    for meta in (decode_record(line).meta, check_record(load_trace_line(line))["meta"]):
        assert repr(meta) == repr(want)


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


EDGE_INTS = st.sampled_from([-(1 << 63) - 1, -(1 << 63), (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 64])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | EDGE_INTS | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10)


def _wide_keys(meta):
    """The keys of ``meta`` holding, at any depth, an integer outside [-2**63, 2**64)."""
    def wide(value):
        if isinstance(value, dict):
            return any(wide(v) for v in value.values())
        if isinstance(value, list):
            return any(wide(v) for v in value)
        return type(value) is int and not -(1 << 63) <= value < 1 << 64
    return {key for key, value in meta.items() if wide(value)}


@settings(max_examples=3000, deadline=None)
@given(st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=3))
def test_free_form_meta_reads_as_orjson_reads_it_within_64_bits(meta):
    # Within 64 bits the decoders agree on every JSON value; beyond, both paths refuse, naming a key.
    line = json.dumps({"query_id": "q", "meta": meta}).encode()
    wide = _wide_keys(meta)
    for read in (lambda raw: decode_record(raw).meta, lambda raw: check_record(load_trace_line(raw))["meta"]):
        if wide:
            with pytest.raises(TraceError) as err:
                read(line)
            assert err.value.field.removeprefix("meta.") in wide
        else:
            assert repr(read(line)) == repr(orjson.loads(line)["meta"])


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
