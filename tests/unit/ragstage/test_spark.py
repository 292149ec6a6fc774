"""ragstage.spark on a local Spark session (``spark`` in conftest.py): the same tables as the local functions,
the same errors. That Spark gives each trace what the rules mean is ``tests/conformance/test_rule_conformance.py``'s."""

import os
import shutil

import pandas as pd
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'ragstage[spark]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("no Java runtime for Spark (install a JDK 17, or set JAVA_HOME)", allow_module_level=True)

from trace_sets import MINI_RUN_PAIR, TRACE_FILES, synthetic  # noqa: E402

from ragstage import TraceError, attribution_table, compare, read_traces  # noqa: E402
from ragstage.fixtures import fixture_path  # noqa: E402
from ragstage.parquet import write_parquet  # noqa: E402
from ragstage.report import flag_table, flag_table_from_counts, table_from_counts  # noqa: E402
from ragstage.tally import tally_records  # noqa: E402


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Every test set as one Parquet file each: {name: (traces, path)}."""
    folder = tmp_path_factory.mktemp("sets")
    out = {}
    named = {name: list(read_traces(fixture_path(*name.split("/")))) for name in TRACE_FILES}
    named["synthetic"] = synthetic(20_000)
    for i, (name, traces) in enumerate(named.items()):
        path = folder / f"set{i}.parquet"
        write_parquet(path, traces, rows_per_group=3000)
        out[name] = traces, str(path)
    return out


def test_tables_equal_the_local_ones_on_every_set(spark, sets):
    from ragstage import spark as on_spark

    for name, (traces, path) in sets.items():  # one Spark count per set: buckets and flags together
        counts = on_spark.tally(spark.read.parquet(path))
        local = tally_records(traces)  # the funnel's facts too: query_judged and reranked
        assert counts == local and list(counts.buckets) == list(local.buckets), name
        pd.testing.assert_frame_equal(table_from_counts(counts.buckets), attribution_table(traces), obj=name)
        pd.testing.assert_frame_equal(flag_table_from_counts(counts.flags, counts.totals()), flag_table(traces),
                                      obj=name)
    traces, path = sets["synthetic"]
    df = spark.read.parquet(path)
    for by, require in [(None, "all"), ("kind", "any")]:
        assert on_spark.tally(df, by, require) == tally_records(traces, by, require)
        pd.testing.assert_frame_equal(on_spark.attribution_table(df, by, require, empty=True),
                                      attribution_table(traces, by, require, empty=True), obj=f"{by} {require}")
    pd.testing.assert_frame_equal(on_spark.flag_table(df, "kind"), flag_table(traces, "kind"))


def test_compare_equals_the_local_comparison(spark, sets):
    from ragstage import spark as on_spark

    pairs = [("incidents/batch.jsonl", "incidents/after_fix.jsonl"), MINI_RUN_PAIR]
    for before, after in pairs:
        local = compare(sets[before][0], sets[after][0])
        remote = on_spark.compare(spark.read.parquet(sets[before][1]), spark.read.parquet(sets[after][1]))
        assert remote.to_dict() == local.to_dict()
        pd.testing.assert_frame_equal(remote.migration, local.migration)
    shared = spark.read.parquet(sets["incidents/batch.jsonl"][1])
    fewer = shared.where("query_id != 'inc-201'")
    with pytest.raises(ValueError, match=r"1 only before, 0 only after, e.g. inc-201"):
        on_spark.compare(shared, fewer)
    assert on_spark.compare(shared, fewer, intersect=True).only_before == ("inc-201",)


def test_bad_rows_unknown_columns_and_duplicates_fail_clearly(spark, sets):
    from pyspark.sql import functions as F

    from ragstage import spark as on_spark

    df = spark.read.parquet(sets["synthetic"][1])
    nulled = df.withColumn("gold", F.when(F.col("query_id") == "q17", F.lit(None)).otherwise(F.col("gold")))
    with pytest.raises(TraceError, match=r"\(query_id 'q17'\), field 'gold': must not be null"):
        on_spark.attribution_table(nulled)
    with pytest.raises(TraceError, match="field 'promt': unknown field"):
        on_spark.attribution_table(df.withColumn("promt", F.col("prompt")))
    with pytest.raises(TraceError, match=r"field 'query_id': duplicate query_id 'q3' for pipeline"):
        on_spark.attribution_table(df.union(df.where("query_id = 'q3'")))
    with pytest.raises(ValueError, match="before: query_id 'q3' appears twice"):
        on_spark.compare(df.union(df.where("query_id = 'q3'")), df)
    with pytest.raises(ValueError, match="require must be"):
        on_spark.attribution_table(df, require="most")
