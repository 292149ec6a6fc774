"""Parquet in and out: the same counts, traces and errors as JSON Lines, through the same checks."""

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_sets import TRACE_FILES, synthetic

from ragstage import Trace, TraceError, compare, read_traces, write_traces
from ragstage.attribution import diagnose_record
from ragstage.fields import check_row
from ragstage.fixtures import fixture_path
from ragstage.parquet import SCHEMA, batch_records, checked_rows, count_parquet, read_parquet, write_parquet
from ragstage.trace_files import convert, count_file, read_any
from ragstage.typed_record import as_record


@pytest.mark.parametrize("name", TRACE_FILES)
def test_fixtures_round_trip_and_count_the_same(tmp_path, name):
    source = fixture_path(*name.split("/"))
    target = tmp_path / "t.parquet"
    assert convert(source, target) == len(list(read_traces(source)))
    assert list(read_parquet(target)) == list(read_traces(source))
    for by, require in [("pipeline", "any"), (None, "all")]:
        local, lake = count_file(source, by, require), count_parquet(target, by, require)
        assert (lake.buckets, lake.flags) == (local.buckets, local.flags)
    back = tmp_path / "back.jsonl.gz"
    convert(target, back)
    assert list(read_traces(back)) == list(read_traces(source))


def test_ranked_scores_sections_error_and_meta_survive(tmp_path):
    traces = [Trace(query_id="q1", gold=["a"], retrieved=["a", "b"], retrieved_scores=[2.0, 1.5],
                    retrieved_sections=["intro", None], reranked=["a"], reranked_scores=[0.9], prompt=["a"],
                    error={"stage": "generation", "message": "timeout"}, meta={"kind": "rare", "n": [1, 2]}),
              Trace(query_id=7, claims=[True, False], prompt_source="recovered", truncated=["z"], answer="x [1]")]
    write_parquet(tmp_path / "t.parquet", traces)
    assert pq.read_schema(tmp_path / "t.parquet").equals(SCHEMA)
    assert list(read_parquet(tmp_path / "t.parquet")) == traces


def test_folder_row_groups_and_workers_give_the_file_counts(tmp_path):
    traces = synthetic(5000)
    write_traces(tmp_path / "all.jsonl", traces)
    folder = tmp_path / "lake"
    folder.mkdir()
    write_parquet(folder / "part-0.parquet", traces[:3000], rows_per_group=700)
    write_parquet(folder / "part-1.parquet", traces[3000:], rows_per_group=700)
    local = count_file(tmp_path / "all.jsonl", by="kind")
    for workers in (1, 3):
        lake = count_parquet(folder, by="kind", workers=workers)
        assert (lake.buckets, lake.flags) == (local.buckets, local.flags)
    assert list(read_any(folder)) == traces


def _bad_file(tmp_path, column, values, type_=None):
    table = pa.table({"query_id": [f"q{i}" for i in range(len(values))],
                      column: pa.array(values, type=type_ or SCHEMA.field(column).type)})
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path, row_group_size=2)
    return path


@pytest.mark.parametrize("column, values, type_, bad_row, words", [
    ("gold", [["a"], ["b"], None], None, 3, "must not be null"),
    ("gold", [[], [True], []], pa.list_(pa.bool_()), 2, "ids must be strings or integers"),
    ("prompt_source", ["logged", "guessed", None], None, 2, "logged, recovered"),
    ("meta", [None, '{"a": 1}', "[1]"], None, 3, "expected an object"),
    ("meta", [None, "{", None], None, 2, "JSON text of an object"),
    ("query", ["a", None, "c"], None, 2, "must not be null"),
    # Plain-typed columns that a null makes not plain: the batch leaves the fast path.
    ("gold", [["a"], [None], ["b"]], None, 2, "ids must be strings or integers"),
    ("pipeline", ["a", "b", None], None, 3, "must not be null"),
    ("answerable", [True, None, False], None, 2, "must not be null"),
])
def test_bad_rows_name_file_row_and_field(tmp_path, column, values, type_, bad_row, words):
    path = _bad_file(tmp_path, column, values, type_)
    field = column
    for run in (lambda: count_parquet(path, workers=2), lambda: list(read_parquet(path))):
        with pytest.raises(TraceError) as info:
            run()
        err = info.value
        assert (err.path, err.line, err.unit, err.field) == (str(path), bad_row, "row", field)
        assert str(err).startswith(f"{path}, row {bad_row}, field '{field}': ") and words in str(err)


def test_plain_batches_give_the_records_of_the_full_check(tmp_path):
    traces = [t.replace(error=None, meta={}) for t in synthetic(2000, seed=3)]  # no error or meta column: plain
    write_parquet(tmp_path / "plain.parquet", traces)
    table = pq.read_table(tmp_path / "plain.parquet")
    batch = table.select([n for n in table.column_names if table[n].null_count < len(table)]).to_batches()[0]
    fast, full = list(batch_records(batch)), [as_record(r) for r in checked_rows(batch)]
    assert len(fast) == len(full) == batch.num_rows
    for a, b in zip(fast, full):
        assert a == b  # one normalised form: ids in lists, meta a dict
        assert diagnose_record(a) == diagnose_record(b)


def test_unknown_column_missing_file_and_duplicates(tmp_path):
    path = _bad_file(tmp_path, "query", ["a", "b"])
    pq.write_table(pq.read_table(path).append_column("promt", pa.array([["d"], ["d"]])), path)
    with pytest.raises(TraceError, match="field 'promt': unknown field"):
        count_parquet(path)
    with pytest.raises(TraceError, match="cannot open"):
        count_parquet(tmp_path / "nope.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match="no .parquet files"):
        count_parquet(tmp_path / "empty")
    traces = synthetic(300)
    write_parquet(tmp_path / "a.parquet", traces, rows_per_group=100)
    write_parquet(tmp_path / "dup.parquet", traces[:5] + [traces[2]])
    for run in (lambda: count_parquet(tmp_path / "dup.parquet"), lambda: list(read_parquet(tmp_path / "dup.parquet"))):
        with pytest.raises(TraceError, match=r"dup.parquet, row 6, field 'query_id': duplicate .*first on row 3\)"):
            run()


def test_cli_attribute_compare_and_convert_read_parquet(tmp_path):
    before, after = fixture_path("incidents", "batch.jsonl"), fixture_path("incidents", "after_fix.jsonl")
    cli = [sys.executable, "-m", "ragstage.cli"]
    for source, target in [(before, tmp_path / "before.parquet"), (after, tmp_path / "after.parquet")]:
        done = subprocess.run([*cli, "convert", str(source), str(target)], capture_output=True, text=True)
        assert done.returncode == 0 and "wrote 40 traces" in done.stderr
    runs = [subprocess.run([*cli, "attribute", str(p), "--format", "json"], capture_output=True, text=True)
            for p in (before, tmp_path / "before.parquet")]
    assert runs[0].stdout == runs[1].stdout and json.loads(runs[1].stdout)
    pair = [subprocess.run([*cli, "compare", str(b), str(a), "--format", "json"], capture_output=True, text=True)
            for b, a in [(before, after), (tmp_path / "before.parquet", tmp_path / "after.parquet")]]
    assert pair[0].stdout == pair[1].stdout
    assert compare(read_any(tmp_path / "before.parquet"), read_any(after)).to_dict() == json.loads(pair[0].stdout)
    bad = subprocess.run([*cli, "convert", str(before), str(tmp_path / "out.csv")], capture_output=True, text=True)
    assert bad.returncode == 2 and "must end in .parquet, .jsonl or .jsonl.gz" in bad.stderr
    broken = _bad_file(tmp_path, "gold", [["a"], None])
    bad = subprocess.run([*cli, "attribute", str(broken)], capture_output=True, text=True)
    assert bad.returncode == 2 and f"{broken}, row 2, field 'gold': must not be null" in bad.stderr


def test_import_ragstage_loads_neither_pyarrow_module_of_ours_nor_pyspark():
    code = ("import sys, ragstage, ragstage.cli, ragstage.streaming, ragstage.trace_files; "
            "print(sorted(m for m in sys.modules if m in ('ragstage.parquet', 'ragstage.spark', 'pyspark')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- the Arrow path against the full check, on random batches, bad values included ------------
_LIST_STR, _LIST_INT = pa.list_(pa.string()), pa.list_(pa.int64())
_ERROR = SCHEMA.field("error").type
ARROW_TYPES = {  # each column's schema type first, then types a foreign file might hold instead
    "query_id": [pa.string(), pa.int64()], "pipeline": [pa.string()], "query": [pa.string()],
    "gold": [_LIST_STR, _LIST_INT, pa.string()], "answerable": [pa.bool_(), pa.int64()],
    "retrieved": [_LIST_STR, _LIST_INT], "retrieved_scores": [pa.list_(pa.float64())],
    "retrieved_sections": [_LIST_STR], "reranked": [_LIST_STR], "reranked_scores": [pa.list_(pa.float64())],
    "prompt": [_LIST_STR, _LIST_INT], "prompt_source": [pa.string()], "answer": [pa.string()],
    "answer_ids": [_LIST_STR], "correct": [pa.bool_()], "refused": [pa.bool_()],
    "claims": [pa.list_(pa.bool_())], "complete": [pa.bool_()], "query_ok": [pa.bool_()], "error": [_ERROR],
    "model": [pa.string()], "meta": [pa.string()],
}
_WORDS = st.sampled_from(["", "d1", "d2", "logged", "recovered", "It is 20 weeks [1].", "ID: d1"])
ARROW_VALUES = {
    pa.string(): _WORDS, pa.int64(): st.integers(0, 3), pa.bool_(): st.booleans(),
    _LIST_STR: st.lists(st.sampled_from(["d1", "d2", "d3"]) | st.none(), max_size=3),
    _LIST_INT: st.lists(st.integers(0, 3), max_size=3),
    pa.list_(pa.float64()): st.lists(st.floats(-1, 1) | st.none(), max_size=3),
    pa.list_(pa.bool_()): st.lists(st.booleans() | st.none(), max_size=3),
    _ERROR: st.fixed_dictionaries({"stage": st.none() | st.just("retrieval"), "message": st.just("down")}),
}
META_TEXT = st.sampled_from(['{"kind": "rare"}', "{}", "[1]", "{", '{"n": [1, 2]}'])


def _arrow_reference(row):
    """A row as a JSON line would be checked: meta text parsed, then the full check of the row."""
    meta = row.get("meta")
    if meta is not None:
        try:
            row["meta"] = json.loads(meta)
        except json.JSONDecodeError:
            raise TraceError(f"expected JSON text of an object, got {meta!r:.60}", field="meta") from None
    return as_record(check_row(row))


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_arrow_batches_check_and_convert_like_the_full_check(data):
    names = ["query_id", *data.draw(st.lists(st.sampled_from(list(ARROW_TYPES)[1:]), unique=True, max_size=6))]
    n = data.draw(st.integers(1, 4))
    columns = {}
    for name in names:
        type_ = data.draw(st.sampled_from(ARROW_TYPES[name]))
        values = META_TEXT if name == "meta" else ARROW_VALUES[type_]
        nulls = st.none() if data.draw(st.booleans()) else st.nothing()  # a column with or without nulls
        columns[name] = pa.array(data.draw(st.lists(values | nulls, min_size=n, max_size=n)), type=type_)
    batch = pa.RecordBatch.from_pydict(columns)
    want, error = [], None
    for row in batch.to_pylist():
        try:
            want.append(_arrow_reference(row))
        except TraceError as exc:
            error = (exc.field, exc.detail)
            break
    if error is None:
        assert list(batch_records(batch)) == want
        return
    with pytest.raises(TraceError) as got:
        list(batch_records(batch))
    assert (got.value.field, got.value.detail) == error


def test_a_skipped_text_column_is_checked_a_few_megabytes_at_a_time(tmp_path):
    # `query` is no rule's: a count skips it, and checks its text a few megabytes at a time. Read
    # whole, the row group's 100 MB column (0.5 MB on disk) took 250 MB of memory.
    n = 50_000
    table = pa.table({"query_id": [f"q{i}" for i in range(n)], "gold": [["d"]] * n, "retrieved": [["d"]] * n,
                      "query": [f"{i:05d}" + "x" * 2000 for i in range(n)]})
    pq.write_table(table, tmp_path / "wide.parquet", row_group_size=n, compression="zstd")
    code = ("import sys\nfrom ragstage.parquet import count_parquet\n"
            "def peak(): return int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
            "before = peak()\n"
            "tally = count_parquet(sys.argv[1], workers=1)\n"
            "print(sum(tally.totals().values()), peak() - before)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "wide.parquet")], capture_output=True,
                          text=True, check=True)
    traces, grown_kb = map(int, done.stdout.split())
    assert traces == n and grown_kb < 120_000
