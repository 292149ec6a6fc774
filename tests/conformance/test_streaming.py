"""The JSON Lines counter gives the counts of diagnosing Trace objects one by one, on any split."""

import gzip
import tempfile
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_sets import random_traces, synthetic

from ragstage import TraceError, diagnose, write_traces
from ragstage.streaming import count_jsonl
from ragstage.tally import group_of
from ragstage.trace_files import count_files


def by_hand(traces, by="pipeline", require="any"):
    """Bucket and flag counts per group, one trace at a time: the reference for every counter."""
    buckets, flags = {}, {}
    for t in traces:
        d = diagnose(t, require)
        buckets.setdefault(group_of(t, by), Counter())[d.stage.value] += 1
        flags.setdefault(group_of(t, by), Counter()).update(d.flags)
    return buckets, flags


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    traces = synthetic(30_000)
    path = tmp_path_factory.mktemp("s") / "big.jsonl"
    write_traces(path, traces)
    return traces, path


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_split_counts_equal_object_counts(big, workers, monkeypatch):
    traces, path = big
    monkeypatch.setattr("ragstage.streaming.MIN_SPLIT_BYTES", 1)
    tally = count_jsonl(path, workers=workers)
    buckets, flags = by_hand(traces)
    assert tally.buckets == buckets
    assert {g: +c for g, c in tally.flags.items()} == {g: +c for g, c in flags.items()}
    assert tally.totals() == {g: sum(c.values()) for g, c in buckets.items()}
    assert count_jsonl(path, by="kind", require="all", workers=workers).buckets == by_hand(traces, "kind", "all")[0]


def test_error_line_numbers_are_global_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr("ragstage.streaming.MIN_SPLIT_BYTES", 1)
    path = tmp_path / "t.jsonl"
    write_traces(path, synthetic(2000))
    lines = path.read_text().splitlines()
    lines[1733] = '{"query_id": "bad", "prompt": "d1"}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"line 1734, field 'prompt'"):
        count_jsonl(path, workers=2)


def test_duplicates_across_chunks_are_found_with_both_lines(tmp_path, monkeypatch):
    monkeypatch.setattr("ragstage.streaming.MIN_SPLIT_BYTES", 1)
    path = tmp_path / "t.jsonl"
    traces = synthetic(1000)
    write_traces(path, traces + [traces[3]])
    with pytest.raises(TraceError, match=r"line 1001, field 'query_id': duplicate .*first on line 4"):
        count_jsonl(path, workers=2)


def test_blank_lines_are_skipped_and_lines_still_counted(tmp_path, monkeypatch):
    monkeypatch.setattr("ragstage.streaming.MIN_SPLIT_BYTES", 1)
    path = tmp_path / "t.jsonl"
    traces = synthetic(1500)
    write_traces(path, traces)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:700] + ["", "   "] + lines[700:]) + '\n{"query_id": 5, "gold": "x"}\n')
    with pytest.raises(TraceError, match=r"line 1503, field 'gold'"):
        count_jsonl(path, workers=3)
    path.write_text("\n".join(lines[:700] + ["", "   "] + lines[700:]) + "\n")
    assert count_jsonl(path, workers=3).buckets == by_hand(traces)[0]


def test_gzip_and_several_files(tmp_path):
    traces = synthetic(500)
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    write_traces(plain, traces[:200])
    write_traces(packed, traces[200:])
    assert gzip.open(packed).read(1) == b"{"
    assert count_files([plain, packed]).buckets == by_hand(traces)[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(random_traces(), min_size=1, max_size=40), st.sampled_from(["pipeline", None, "kind"]),
       st.sampled_from(["any", "all"]), st.integers(2, 3),
       st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["", "  ", '{"query_id": "x", "gold": 1}', "{",
                                                               '{"query_id": null}', "[]"])), max_size=2))
def test_split_ranges_count_and_fail_as_the_plain_reader(traces, by, require, workers, inserted):
    traces = [t.replace(query_id=f"{t.query_id}-{i}") for i, t in enumerate(traces)]  # no duplicate keys
    lines = [orjson.dumps(t.to_dict()).decode() for t in traces]
    for at, line in sorted(inserted, reverse=True):
        lines.insert(min(at, len(lines)), line)
    text = ("\n".join(lines) + "\n").encode()
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as mp:
        mp.setattr("ragstage.streaming.MIN_SPLIT_BYTES", 1)
        plain, packed = Path(folder, "t.jsonl"), Path(folder, "t.jsonl.gz")
        plain.write_bytes(text)
        packed.write_bytes(gzip.compress(text))  # read in order, by read_records and tally_records
        outcomes = []
        for path in (plain, packed):
            try:
                outcomes.append(count_jsonl(path, by, require, workers))
            except TraceError as exc:
                outcomes.append(str(exc).replace(str(path), "FILE"))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_over_the_limit_is_refused_as_in_every_other_reader(tmp_path, workers):
    from ragstage.trace import MAX_LINE_BYTES

    path = tmp_path / "long.jsonl"
    good = b'{"query_id": "a", "gold": ["d"], "retrieved": ["d"]}\n'
    path.write_bytes(good * 3 + b'{"query_id": "' + b"x" * MAX_LINE_BYTES + b'"}\n' + good.replace(b'"a"', b'"b"'))
    with pytest.raises(TraceError) as err:
        count_jsonl(path, workers=workers)
    assert str(err.value) == f"{path}, line 4: line longer than 64 MiB: not a JSON Lines file"
