"""Benchmark: attribution at 1 and 10 million traces as Parquet: the CLI, the Parquet reader and Spark.

For each size, writes seeded synthetic traces (the shape of ``bench_attribute.py``: 20
retrieved ids, four pipelines) straight to Parquet with pyarrow, under /tmp (never commit
them), then times, each in a fresh subprocess, with wall time, CPU time and peak memory:

* the streaming CLI on JSON Lines (``ragstage convert`` writes the file; skip with --no-jsonl);
* the Parquet reader: ``ragstage attribute FILE.parquet`` (row groups over two processes);
* Spark ``local[2]``: ``ragstage.spark.attribution_table(spark.read.parquet(FILE))``.

    python benchmarks/bench_scale.py [--sizes 1000000 10000000] [--folder /tmp/ragstage-scale] [--no-jsonl]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from timing import show, timed

PIPELINES = np.array(["bm25", "bm25+ce", "minilm", "minilm+ce"])
_IDS = pa.list_(pa.string())

SPARK = """
import os, sys
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession
from ragstage.spark import attribution_table
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "4g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
table = attribution_table(spark.read.parquet(sys.argv[1]))
print(int(table["count"].sum()))
spark.stop()
"""


def _offsets(rows: int, width: int) -> pa.Array:
    return pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32))


def write_parquet_synthetic(path: Path, n: int, seed: int = 0, chunk: int = 250_000) -> None:
    """Vectorised writer (no Python object per trace), so that 10 million traces take a minute."""
    rng = np.random.default_rng(seed)
    docs = np.array([f"doc{d}" for d in range(5000)], dtype=object)
    with pq.ParquetWriter(path, pa.schema([("query_id", pa.string()), ("pipeline", pa.string()), ("gold", _IDS),
                                           ("retrieved", _IDS), ("reranked", _IDS), ("prompt", _IDS),
                                           ("answer", pa.string()), ("answer_ids", _IDS)]),
                          compression="zstd") as writer:
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            idx = np.arange(start, start + m)
            retrieved = docs[rng.integers(0, 5000, size=(m, 20))]
            hit = rng.random(m) < 0.93
            gold = np.where(hit, retrieved[np.arange(m), rng.integers(0, 20, m)], "doc-missing")
            cut = rng.integers(1, 6, m)
            answer = np.where(rng.random(m) < 0.5, gold, retrieved[:, 0])
            flat = pa.array(retrieved.ravel(), pa.string())
            prompt_offsets = pa.array(np.concatenate([[0], np.cumsum(cut)]).astype(np.int32))
            prompt_values = pa.array(np.concatenate([row[:c] for row, c in zip(retrieved, cut)]), pa.string())
            table = pa.table({
                "query_id": pa.array(np.char.add("q", (idx // 4).astype(str)).astype(object), pa.string()),
                "pipeline": pa.array(PIPELINES[idx % 4].astype(object), pa.string()),
                "gold": pa.ListArray.from_arrays(_offsets(m, 1), pa.array(gold, pa.string())),
                "retrieved": pa.ListArray.from_arrays(_offsets(m, 20), flat),
                "reranked": pa.ListArray.from_arrays(_offsets(m, 10), pa.array(retrieved[:, :10].ravel(), pa.string())),
                "prompt": pa.ListArray.from_arrays(prompt_offsets, prompt_values),
                "answer": pa.array(np.char.add("ID: ", answer.astype(str)).astype(object), pa.string()),
                "answer_ids": pa.ListArray.from_arrays(_offsets(m, 1), pa.array(answer, pa.string())),
            })
            writer.write_table(table, row_group_size=131_072)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--folder", type=Path, default=Path("/tmp/ragstage-scale"))
    parser.add_argument("--no-jsonl", action="store_true", help="skip the JSON Lines run (10 M traces: 4.7 GB)")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    results: dict[int, list[dict]] = {}
    for n in args.sizes:
        parquet = args.folder / f"traces-{n}.parquet"
        if not parquet.exists():
            write_parquet_synthetic(parquet, n)
        rows = []
        if not args.no_jsonl:
            jsonl = args.folder / f"traces-{n}.jsonl"
            if not jsonl.exists():
                timed([sys.executable, "-m", "ragstage.cli", "convert", str(parquet), str(jsonl)], "convert")
            rows.append(timed([sys.executable, "-m", "ragstage.cli", "attribute", str(jsonl), "--format", "json"],
                              "streaming CLI, JSON Lines"))
        rows.append(timed([sys.executable, "-m", "ragstage.cli", "attribute", str(parquet), "--format", "json"],
                          "Parquet reader (CLI)"))
        rows.append(timed([sys.executable, "-c", SPARK, str(parquet)], "Spark local[2]"))
        print(f"\n{n:,} traces ({parquet.stat().st_size / 1e6:.0f} MB Parquet)", flush=True)
        show(rows)
        results[n] = rows
    if len(results) > 1:
        small, large = min(results), max(results)
        print(f"\ngrowth from {small:,} to {large:,} traces (x{large / small:.0f}):")
        for a, b in zip(results[small], results[large]):
            grow_wall, grow_peak = b["wall"] / a["wall"], b["peak_mb"] / a["peak_mb"]
            print(f"  {a['label']:30} wall x{grow_wall:.1f}, peak memory x{grow_peak:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
