"""The trace record and its JSON Lines reader/writer."""

import gzip
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ragstage import Trace, TraceError, read_traces, write_traces
from ragstage.trace import FIELDS, JSON_SPACE, check_record, is_blank, read_records


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_fields_are_exactly_the_documented_ones():
    assert list(FIELDS) == ["query_id", "pipeline", "query", "gold", "answerable", "retrieved", "reranked",
                            "prompt", "prompt_source", "truncated", "answer", "answer_ids", "correct", "refused",
                            "claims", "complete", "query_ok", "error", "model", "prompt_version", "timestamp", "meta"]


def test_defaults_and_keyword_construction():
    t = Trace(query_id="q1", gold=["d1"], retrieved=["d1", "d2"])
    assert t.pipeline == "default" and t.answerable is True and t.refused is False
    assert t.reranked is None and t.prompt is None and t.correct is None
    assert t.gold == ("d1",) and t.retrieved == ("d1", "d2") and t.meta == {}


def test_from_dict_accepts_scored_retrieval_and_round_trips(tmp_path):
    t = Trace.from_dict({"query_id": "q", "retrieved": [{"id": "a", "score": 2}, {"id": "b", "score": 1.5}]})
    assert t.retrieved == ("a", "b") and t.retrieved_scores == (2.0, 1.5)
    path = tmp_path / "t.jsonl"
    write_traces(path, [t])
    line = json.loads(path.read_text())
    assert line["retrieved"] == [{"id": "a", "score": 2.0}, {"id": "b", "score": 1.5}]
    assert list(read_traces(path)) == [t]


def test_reranked_scores_and_sections_round_trip(tmp_path):
    record = {"query_id": "q",
              "retrieved": [{"id": "a", "score": 2.0, "section": "returns"}, {"id": "b", "score": 1.0}],
              "reranked": [{"id": "b", "score": 0.9}, {"id": "a", "score": 0.1}]}
    t = Trace.from_dict(record)
    assert t.retrieved_sections == ("returns", None) and t.reranked == ("b", "a")
    assert t.reranked_scores == (0.9, 0.1) and t.reranked_sections is None
    path = tmp_path / "t.jsonl"
    write_traces(path, [t])
    line = json.loads(path.read_text())
    assert line["retrieved"] == record["retrieved"] and line["reranked"] == record["reranked"]
    assert list(read_traces(path)) == [t]
    assert Trace(query_id="q", reranked=["x"], reranked_scores=[0.5]).to_dict()["reranked"] == [
        {"id": "x", "score": 0.5}]
    with pytest.raises(TraceError, match="scores"):
        Trace(query_id="q", reranked=["x", "y"], reranked_scores=[0.5])


def test_integer_ids_are_read_as_text():
    t = Trace.from_dict({"query_id": 7, "gold": [13, "x"]})
    assert t.query_id == "7" and t.gold == ("13", "x")


@pytest.mark.parametrize("record, field, words", [
    ({"query_id": "q", "gold": "d1"}, "gold", "list of ids"),
    ({"query_id": "q", "promt": ["d1"]}, "promt", "unknown field"),
    ({"gold": ["d1"]}, "query_id", "missing"),
    ({"query_id": None}, "query_id", "missing"),
    ({"query_id": "q", "answerable": "yes"}, "answerable", "true or false"),
    ({"query_id": "q", "claims": [1, 0]}, "claims", "claim labels"),
    ({"query_id": "q", "gold": [True]}, "gold", "ids must be"),
    ({"query_id": "q", "retrieved": [{"score": 1}]}, "retrieved", "score"),  # an entry without an id
    ({"query_id": "q", "retrieved": [{"id": "a", "score": 1, "rank": 1}]}, "retrieved", "unknown key"),
    ({"query_id": "q", "error": "down"}, "error", "stage"),
    ({"query_id": "q", "meta": []}, "meta", "object"),
    ({"query_id": "q", "retrieved": None}, "retrieved", "null"),
    ({"query_id": "q", "reranked": [{"id": "a", "score": "high"}]}, "reranked", "score"),
    ({"query_id": "q", "retrieved": [{"id": "a", "score": 1, "section": 3}]}, "retrieved", "section"),
    ({"query_id": "q", "prompt_source": "guessed"}, "prompt_source", "logged, recovered"),
    ({"query_id": "q", "truncated": "d1"}, "truncated", "list of ids"),
    ({"query_id": "q", "complete": "no"}, "complete", "true or false"),
])
def test_bad_fields_name_the_field(record, field, words):
    with pytest.raises(TraceError) as info:
        check_record(record)
    assert info.value.field == field
    assert words in str(info.value)


def test_keyword_construction_is_checked_like_a_file():
    with pytest.raises(TraceError, match="field 'gold'"):
        Trace(query_id="q", gold="d1")


def test_reader_names_file_line_and_field(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", ['{"query_id": "a"}', "", '{"query_id": "b", "gold": "d1"}'])
    with pytest.raises(TraceError) as info:
        list(read_traces(path))
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 3, "gold")
    assert str(err).startswith(f"{path}, line 3, field 'gold': ")


def test_invalid_json_names_the_line(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", ['{"query_id": "a"}', '{"query_id": "b",'])
    with pytest.raises(TraceError, match=r"line 2: invalid JSON"):
        list(read_traces(path))


def test_non_object_line_is_rejected(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", ['["query_id", "a"]'])
    with pytest.raises(TraceError, match="line 1: a trace must be a JSON object"):
        list(read_traces(path))


def test_duplicate_query_and_pipeline_is_an_error(tmp_path):
    path = write_lines(tmp_path / "dup.jsonl", ['{"query_id": "a", "pipeline": "x"}',
                                                 '{"query_id": "a", "pipeline": "y"}',
                                                 '{"query_id": "a", "pipeline": "x"}'])
    with pytest.raises(TraceError, match=r"line 3, field 'query_id': duplicate .*first on line 1"):
        list(read_traces(path))


def test_gzip_round_trip(tmp_path):
    traces = [Trace(query_id=f"q{i}", gold=["d"], prompt=["d"], correct=bool(i % 2)) for i in range(5)]
    path = tmp_path / "t.jsonl.gz"
    assert write_traces(path, traces) == 5
    with gzip.open(path, "rt") as handle:
        assert len(handle.readlines()) == 5
    assert list(read_traces(path)) == traces


def test_missing_file_and_corrupt_gzip(tmp_path):
    with pytest.raises(TraceError, match="cannot open"):
        list(read_traces(tmp_path / "nope.jsonl"))
    bad = tmp_path / "broken.jsonl.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(TraceError, match="unreadable"):
        list(read_traces(bad))


def test_reader_streams(tmp_path):
    # The second line is bad: a streaming reader yields the first before failing.
    path = write_lines(tmp_path / "s.jsonl", ['{"query_id": "a"}', '{"query_id": 1.5}'])
    stream = read_records(path)
    assert next(stream)[0] == 1
    with pytest.raises(TraceError, match="line 2"):
        next(stream)


def test_replace_checks_the_change():
    t = Trace(query_id="q", gold=["d1"])
    assert t.replace(prompt=["d1"]).prompt == ("d1",)
    with pytest.raises(TraceError):
        t.replace(prompt="d1")


def test_an_error_pickles_whole(tmp_path):
    """An error raised in a worker process reaches the caller with its file, position and field."""
    import pickle

    from ragstage.ingest import SpanError

    for error in (TraceError("bad", path="f.parquet", line=3, field="gold", unit="row"),
                  SpanError("loops", path="s.jsonl", line=9, field="parent_id")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
        assert (copy.detail, copy.path, copy.line, copy.field, copy.unit) == (
            error.detail, error.path, error.line, error.field, error.unit)


# half the values plain (string ids, float scores, string sections), where a fast path may take them
_IDS = st.sampled_from(["d1", "d2", "d3"]) | st.sampled_from([7, True, None, 1.5])
_SCORES = (st.floats(allow_nan=False, allow_infinity=False) | st.none()
           | st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308])
           | st.sampled_from([1, -2, True, "0.5"]))
_SECTIONS = st.sampled_from(["intro", "", "methods"]) | st.none() | st.integers(0, 2)


def _outcome(build):
    try:
        return build().to_dict()
    except TraceError as exc:
        return (exc.field, exc.detail)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_IDS, _SCORES, _SECTIONS), min_size=1, max_size=5), st.booleans(), st.booleans())
@example([("d1", float("nan"), None)], True, False)
@example([("d1", 1e308, None), ("d2", 1e308, "s")], True, True)
def test_from_row_equals_from_dict_of_the_same_entries(entries, with_scores, with_sections):
    """Columns (Trace.from_row, a fast path when nothing needs converting) give the trace, or the
    error, that the same list given as entries gives (Trace.from_dict, each entry checked)."""
    ids = [i for i, _, _ in entries]
    scores = [s for _, s, _ in entries] if with_scores else None
    sections = [s for _, _, s in entries] if with_sections else None
    as_entries = [{"id": i, **({"score": s} if with_scores and s is not None else {}),
                   **({"section": c} if with_sections and c is not None else {})} for i, s, c in entries]
    row = {"query_id": "q", "retrieved": ids, "retrieved_scores": scores, "retrieved_sections": sections}
    by_entries = ({"query_id": "q", "retrieved": as_entries} if with_scores or with_sections
                  else {"query_id": "q", "retrieved": ids})
    assert _outcome(lambda: Trace.from_row(row)) == _outcome(lambda: Trace.from_dict(by_entries))


_PLAIN_IDS = st.lists(st.sampled_from(["d1", "d2", "d3"]), max_size=3)
_META = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner,
                                                                                   max_size=2),
                     max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_trace_line_is_the_json_of_to_dict(data):
    """trace_line writes the held tuples and meta as they are: the same bytes as to_dict's JSON."""
    import orjson

    from ragstage.trace import trace_line

    ids = data.draw(_PLAIN_IDS)
    scores = data.draw(st.none() | st.lists(st.none() | st.floats(-1, 1), min_size=len(ids), max_size=len(ids)))
    row = {"query_id": "q", "gold": data.draw(_PLAIN_IDS), "retrieved": ids, "retrieved_scores": scores,
           "prompt": data.draw(st.none() | _PLAIN_IDS),
           "claims": data.draw(st.none() | st.lists(st.booleans(), max_size=2)),
           "meta": data.draw(st.dictionaries(st.text(max_size=3), _META, max_size=3))}
    trace = Trace.from_row(row)
    assert trace_line(trace) == orjson.dumps(trace.to_dict()) + b"\n"


@given(st.one_of(st.text(alphabet=" \t\r\n\xa0\u2028x{", max_size=6),
                 st.binary(max_size=6).map(lambda b: b.replace(b"\x00", b" "))))
def test_is_blank_is_nothing_but_json_whitespace(line):
    """Told from the first character when it is no space; the same answer as stripping the line."""
    space = JSON_SPACE if isinstance(line, bytes) else JSON_SPACE.decode()
    assert is_blank(line) == (line.strip(space) == line[:0])
