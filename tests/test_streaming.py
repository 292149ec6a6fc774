"""The streaming counter gives the same counts as diagnosing Trace objects, on any split."""

import gzip

import pytest
from trace_sets import synthetic

from ragstage import TraceError, write_traces
from ragstage.report import count_buckets, count_flags
from ragstage.streaming import _ranges, count_file, count_files


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    traces = synthetic(30_000)
    path = tmp_path_factory.mktemp("s") / "big.jsonl"
    write_traces(path, traces)
    return traces, path


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_split_counts_equal_object_counts(big, workers, monkeypatch):
    traces, path = big
    monkeypatch.setattr("ragstage.streaming._MIN_SPLIT", 1)
    tally = count_file(path, workers=workers)
    assert tally.buckets == count_buckets(traces)
    flags, totals = count_flags(traces)
    assert {g: +c for g, c in tally.flags.items()} == {g: +c for g, c in flags.items()}
    assert tally.totals() == dict(totals)
    assert count_file(path, by="kind", require="all", workers=workers).buckets == count_buckets(traces, "kind", "all")


def test_ranges_split_at_line_starts(big, monkeypatch):
    _, path = big
    monkeypatch.setattr("ragstage.streaming._MIN_SPLIT", 1)
    data = path.read_bytes()
    ranges = _ranges(path, 4)
    assert len(ranges) == 4 and ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert _ranges(path, 1) == [(0, len(data))]
    for (_, b), (c, _) in zip(ranges, ranges[1:]):
        assert b == c and data[c - 1:c] == b"\n"


def test_error_line_numbers_are_global_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr("ragstage.streaming._MIN_SPLIT", 1)
    path = tmp_path / "t.jsonl"
    write_traces(path, synthetic(2000))
    lines = path.read_text().splitlines()
    lines[1733] = '{"query_id": "bad", "prompt": "d1"}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"line 1734, field 'prompt'"):
        count_file(path, workers=2)


def test_duplicates_across_chunks_are_found_with_both_lines(tmp_path, monkeypatch):
    monkeypatch.setattr("ragstage.streaming._MIN_SPLIT", 1)
    path = tmp_path / "t.jsonl"
    traces = synthetic(1000)
    write_traces(path, traces + [traces[3]])
    with pytest.raises(TraceError, match=r"line 1001, field 'query_id': duplicate .*first on line 4"):
        count_file(path, workers=2)


def test_gzip_and_several_files(tmp_path):
    traces = synthetic(500)
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    write_traces(plain, traces[:200])
    write_traces(packed, traces[200:])
    assert gzip.open(packed).read(1) == b"{"
    assert count_files([plain, packed]).buckets == count_buckets(traces)


@pytest.mark.parametrize("by", ["pipeline", None, "kind", "model", "answer", "query_id"])
def test_the_counting_loops_grouper_is_group_of(big, by):
    from ragstage.streaming import _grouper, group_of

    traces, _ = big
    group = _grouper(by)
    assert [group(t) for t in traces[:500]] == [group_of(t, by) for t in traces[:500]]
