"""Stage attribution on Spark DataFrames, with the package's own rules.

A team whose traces already sit in a table should not export them to a laptop. The columns
are those of :data:`ragstage.parquet.SCHEMA` (any subset, with ``query_id``). Each Arrow batch
goes through the same checks (:func:`~ragstage.parquet.batch_records`) and
:func:`~ragstage.attribution.diagnose_record` as a JSON line, inside the executors
(``mapInArrow``); Spark counts the buckets and does the pairing join; the Wilson intervals
and the exact McNemar test are computed on the driver from those counts by the same
functions the local tables use (:func:`~ragstage.report.table_from_counts`,
:func:`~ragstage.report.comparison_from_moves`). So the tables equal the local ones exactly.

pyspark is an optional extra (``pip install 'ragstage[spark]'``); only this module imports it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .count_key import CODES, count_code
from .errors import TraceError
from .fields import check_columns, missing
from .parquet import batch_records
from .python_rules import flags_of, rule_of
from .report import Comparison, comparison_from_moves, flag_table_from_counts, table_from_counts
from .rules import BUCKETS, RULES, check_require
from .tally import Tally, group_of, tally_of_rows

__all__ = ["tally", "attribution_table", "flag_table", "compare"]

_OUT_NAMES = ("key", "grp", "stage", "error")
_OUT_SCHEMA = pa.schema([*((name, pa.string()) for name in _OUT_NAMES), ("code", pa.int64()), ("pos", pa.int64())])
_DIAGNOSED = ", ".join(f"{name} string" for name in _OUT_NAMES) + ", code long, pos long"
_BUCKET_OF_RULE = tuple(BUCKETS.index(rule.outcome.value) for rule in RULES)


def _checked_columns(df: DataFrame) -> list[str]:
    if "query_id" not in df.columns:
        raise missing("query_id")
    check_columns(df.columns)
    return list(df.columns)


def _diagnoser(by: str | None, require: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each executor runs on its Arrow batches: one output row per trace, with its
    bucket and its count code (:mod:`ragstage.count_key`), by the Python interpreter of the rules.

    A bad row ends the partition with one row holding the error (its position in the
    partition, its query_id, the field and the message), which the driver raises.
    """
    check_require(require)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        row = 0
        for batch in batches:
            positions = batch.column("_pos").to_pylist()
            batch = batch.drop_columns(["_pos"])
            out: dict[str, list[Any]] = {name: [] for name in _OUT_SCHEMA.names}
            records = batch_records(batch)
            for i, pos in enumerate(positions):
                row += 1
                try:
                    rec = next(records)
                except TraceError as exc:
                    where = f"partition row {row} (query_id {batch.column('query_id')[i].as_py()!r})"
                    message = f"{where}, field '{exc.field}': {exc.detail}" if exc.field else f"{where}: {exc.detail}"
                    yield pa.RecordBatch.from_pydict({**{k: [None] for k in out}, "error": [message], "pos": [pos]},
                                                     schema=_OUT_SCHEMA)
                    return
                found = flags_of(rec)
                bucket = _BUCKET_OF_RULE[rule_of(rec, found, require == "any")]
                out["key"].append(rec.query_id)
                out["grp"].append(group_of(rec, by))
                out["stage"].append(BUCKETS[bucket])
                out["code"].append(count_code(bucket, found, rec.query_ok is not None, rec.reranked is not None))
                out["error"].append(None)
                out["pos"].append(pos)
            yield pa.RecordBatch.from_pydict(out, schema=_OUT_SCHEMA)

    return run


def _diagnosed(df: DataFrame, by: str | None, require: str) -> DataFrame:
    """One row per trace (key: query_id as text, group, stage, count code, error, pos: its place in ``df``)."""
    columns = _checked_columns(df)
    return df.select(*columns, F.monotonically_increasing_id().alias("_pos")).mapInArrow(
        _diagnoser(by, require), _DIAGNOSED)


def _raise_first_error(errors: list[Any]) -> None:
    if errors:
        raise TraceError(min(errors, key=lambda r: r["pos"])["error"])


def _check_unique(df: DataFrame, keys: list[str], fail: Callable[[Any], Exception]) -> None:
    """Spark finds a repeated key on the trace columns themselves (ids as text, like check_record)."""
    cast = [F.col(k).cast("string").alias(k) for k in keys if k in df.columns]
    repeated = df.select(*cast).groupBy(*[k for k in keys if k in df.columns]).count().where("count > 1")
    found = repeated.limit(1).collect()
    if found:
        raise fail(found[0])


def tally(df: DataFrame, by: str | None = "pipeline", require: str = "any") -> Tally:
    """Bucket and flag counts per group, and what the funnel needs besides (the same :class:`~ragstage.tally.Tally`
    as a local count), counted by Spark; duplicate (query_id, pipeline) is an error.

    Groups come in the order of their first trace in ``df``, as the command line lists them.
    """
    rows = (_diagnosed(df, by, require).groupBy("grp", "code", "error")
            .agg(F.count(F.lit(1)).alias("count"), F.min("pos").alias("pos")).collect())
    _raise_first_error([r for r in rows if r["error"] is not None])
    _check_unique(df, ["query_id", "pipeline"], lambda r: TraceError(
        f"duplicate query_id {r['query_id']!r} for pipeline {r.asDict().get('pipeline', 'default')!r} "
        f"({r['count']} rows)", field="query_id"))
    first: dict[str, int] = {}
    for r in rows:
        first[r["grp"]] = min(first.get(r["grp"], r["pos"]), r["pos"])
    counts: dict[str, list[int]] = {group: [0] * CODES for group in sorted(first, key=first.__getitem__)}
    for r in rows:
        counts[r["grp"]][r["code"]] += r["count"]
    return tally_of_rows(counts)


def attribution_table(df: DataFrame, by: str | None = "pipeline", require: str = "any", *,
                      empty: bool = False) -> pd.DataFrame:
    """:func:`ragstage.report.attribution_table` of a Spark DataFrame of traces: the same table."""
    return table_from_counts(tally(df, by, require).buckets, empty=empty)


def flag_table(df: DataFrame, by: str | None = "pipeline") -> pd.DataFrame:
    """:func:`ragstage.report.flag_table` of a Spark DataFrame of traces: the same table."""
    counts = tally(df, by)
    return flag_table_from_counts(counts.flags, counts.totals())


def _stages(df: DataFrame, require: str, side: str) -> DataFrame:
    _check_unique(df, ["query_id"], lambda r: ValueError(
        f"{side}: query_id {r['query_id']!r} appears twice; compare one pipeline's run against another's"))
    diagnosed = _diagnosed(df, None, require).select("key", "stage", "error", "pos").cache()
    try:
        _raise_first_error(diagnosed.where(F.col("error").isNotNull()).limit(1).collect())
    except TraceError:
        diagnosed.unpersist()
        raise
    return diagnosed


def compare(before: DataFrame, after: DataFrame, *, intersect: bool = False, require: str = "any") -> Comparison:
    """:func:`ragstage.report.compare` of two Spark DataFrames: paired by a join on ``query_id``.

    Spark counts the (before, after) bucket pairs; the driver turns them into the same
    :class:`~ragstage.report.Comparison` (fixed, broken, exact McNemar p, migration).
    """
    a = _stages(before, require, "before")
    try:
        b = _stages(after, require, "after")
    except ValueError:
        a.unpersist()
        raise
    try:
        joined = a.select("key", F.col("stage").alias("src")).join(
            b.select("key", F.col("stage").alias("dst")), on="key", how="full_outer")
        pairs = joined.groupBy("src", "dst").count().collect()
        moves = {(r["src"], r["dst"]): r["count"] for r in pairs if r["src"] is not None and r["dst"] is not None}
        only_before: list[str] = []
        only_after: list[str] = []
        if len(moves) < len(pairs):
            only_before = [r["key"] for r in joined.where(F.col("dst").isNull()).select("key").collect()]
            only_after = [r["key"] for r in joined.where(F.col("src").isNull()).select("key").collect()]
        return comparison_from_moves(moves, only_before, only_after, intersect=intersect)
    finally:
        a.unpersist()
        b.unpersist()
