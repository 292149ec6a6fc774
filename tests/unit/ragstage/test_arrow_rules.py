"""The Arrow interpreter's counting: a counted batch, its key digests, and a Parquet count against
the JSON Lines count of the same traces (what each trace's bucket and flags are is
``tests/conformance/test_rule_conformance.py``'s)."""

from array import array

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_sets import arrow_batch, random_traces, synthetic

from ragstage import Trace, write_traces
from ragstage.arrow_rules import count_batch
from ragstage.parquet import count_parquet, write_parquet
from ragstage.tally import key_digest, key_digests, pair_digests, tally_of_rows, tally_records
from ragstage.trace_files import count_file


@settings(max_examples=200, deadline=None)
@given(st.lists(random_traces(), min_size=1, max_size=12), st.sampled_from(["pipeline", None]),
       st.sampled_from(["any", "all"]))
def test_a_counted_batch_equals_the_walks_tally_and_digests(traces, by, require):
    traces = [t.replace(error=None) for t in traces]  # a batch with a service failure is walked row by row
    batch = arrow_batch(traces)
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
