"""The Arrow interpreter's counting: a counted batch, its key digests, and a Parquet count against
the JSON Lines count of the same traces (what each trace's bucket and flags are is
``test_rule_conformance.py``'s)."""

from array import array

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_sets import synthetic

from ragstage import Trace, write_traces
from ragstage.arrow_rules import count_batch
from ragstage.formats import count_file
from ragstage.parquet import SCHEMA, count_parquet, write_parquet
from ragstage.tally import key_digest, key_digests, pair_digests, tally_of_rows, tally_records

IDS = st.lists(st.sampled_from(["g1", "g2", "d1", "d2", "d3"]), max_size=5)  # repeats allowed
ANSWERS = st.sampled_from(["", "ID: d1", "It is 20 weeks [1].", "It is 20 weeks.", "See [9].", "[2] and [1]",
                           "Two. 3 [1].", "x [0]"])
OPTIONAL = ["reranked", "prompt", "truncated", "answer_ids", "correct", "claims", "complete", "query_ok", "error",
            "answer", "answerable", "refused", "pipeline"]


@st.composite
def trace_rows(draw):
    """A trace with every field the rules read, each optional one null or not."""
    maybe = lambda s: st.none() | s  # noqa: E731
    return Trace(query_id=draw(st.sampled_from(["q1", "q2", "q3"])), pipeline=draw(st.sampled_from(["a", "b"])),
                 gold=draw(IDS), retrieved=draw(IDS), reranked=draw(maybe(IDS)), prompt=draw(maybe(IDS)),
                 truncated=draw(maybe(IDS)), answer_ids=draw(maybe(IDS)), answer=draw(ANSWERS),
                 answerable=draw(st.booleans()), refused=draw(st.booleans()), correct=draw(maybe(st.booleans())),
                 claims=draw(maybe(st.lists(st.booleans(), max_size=3))), complete=draw(maybe(st.booleans())),
                 query_ok=draw(maybe(st.booleans())),
                 error=draw(st.none() | st.none() | st.just({"stage": "retrieval", "message": "down"})))


def _batch(traces, dropped=(), dictionary=False):
    """The traces as one Arrow batch of the schema's columns, less ``dropped`` (each field then at
    its default, as in a file without that column); id lists dictionary-encoded if asked."""
    names = ["query_id", "gold", "retrieved", *(c for c in OPTIONAL if c not in dropped)]
    rows = [{c: list(v) if isinstance(v := getattr(t, c), tuple) else v for c in names} for t in traces]
    batch = pa.RecordBatch.from_pylist(rows, schema=pa.schema([SCHEMA.field(c) for c in names]))
    if dictionary:
        ids = pa.list_(pa.dictionary(pa.int32(), pa.string()))
        batch = pa.RecordBatch.from_arrays(
            [c.cast(ids) if c.type == pa.list_(pa.string()) else c for c in batch.columns], names=names)
    return batch


@settings(max_examples=200, deadline=None)
@given(st.lists(trace_rows(), min_size=1, max_size=12), st.sampled_from(["pipeline", None]),
       st.sampled_from(["any", "all"]))
def test_a_counted_batch_equals_the_walks_tally_and_digests(traces, by, require):
    traces = [t.replace(error=None) for t in traces]  # a batch with a service failure is walked row by row
    batch = _batch(traces)
    rows, digests, walked = {}, array("q"), array("I")
    count_batch(batch, by, require, rows, digests)
    want = tally_records(traces, by, require, walked)
    assert tally_of_rows(rows) == want
    assert list(digests) == pair_digests(walked.tobytes()).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=12) | st.text(min_size=250, max_size=300), st.text(max_size=6)),
                max_size=30))
def test_key_digests_of_byte_columns_are_the_digests_of_each_key(keys):
    def column(texts):
        data = [t.encode() for t in texts]
        lengths = np.asarray([len(d) for d in data], np.int64)
        return np.frombuffer(b"".join(data) or b"\0", np.uint8), np.cumsum(lengths) - lengths, lengths

    if not keys:
        return
    got = key_digests([column([q for q, _ in keys]), column([p for _, p in keys])])
    assert list(got) == [key_digest(q, p) for q, p in keys]


@pytest.mark.parametrize("by, require", [("pipeline", "any"), (None, "all"), ("kind", "any")])
def test_a_parquet_count_equals_the_json_lines_count(tmp_path, by, require):
    traces = synthetic(3000) + [Trace(query_id=f"e{i}", gold=["g"], retrieved=["g", "g"], prompt=["g"],
                                      answer_ids=[], claims=[True, False], truncated=["g"]) for i in range(5)]
    if by != "kind":  # grouped by a meta key, the batches are walked row by row; else counted over columns
        traces = [t.replace(error=None, meta={}) for t in traces]
    write_traces(tmp_path / "t.jsonl", traces)
    write_parquet(tmp_path / "t.parquet", traces, rows_per_group=700)
    assert pq.ParquetFile(tmp_path / "t.parquet").num_row_groups > 1
    want, got = count_file(tmp_path / "t.jsonl", by, require), count_parquet(tmp_path / "t.parquet", by, require, 2)
    assert (got.buckets, got.flags, got.query_judged, got.reranked) == (
        want.buckets, want.flags, want.query_judged, want.reranked)
