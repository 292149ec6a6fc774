"""Benchmark: `ragstage attribute FILE --by pipeline --format json` on a million traces.

Writes synthetic traces (20 retrieved ids, 10 reranked, 1-5 in the prompt, four
pipelines, seeded) to a JSON Lines file once, then times the command in a subprocess
and reads its peak memory from the OS. Target on the 2-core machine: under 10 s wall
and under 500 MB peak resident memory.

    python benchmarks/bench_attribute.py [--traces 1000000] [--file /tmp/ragstage-bench.jsonl]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

PIPELINES = ("bm25", "bm25+ce", "minilm", "minilm+ce")


def write_synthetic(path: Path, n: int, seed: int = 0) -> None:
    """Traces whose gold survives each stage with falling probability, like a real run."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as handle:
        for i in range(n):
            docs = [f"doc{d}" for d in rng.choice(5000, size=20, replace=False)]
            gold = [docs[int(rng.integers(0, 20))]] if rng.random() < 0.93 else ["doc-missing"]
            reranked = docs[:10]
            prompt = reranked[: int(rng.integers(1, 6))]
            answer = gold[0] if rng.random() < 0.5 else docs[0]
            rec = {
                "query_id": f"q{i // len(PIPELINES)}",
                "pipeline": PIPELINES[i % len(PIPELINES)],
                "gold": gold,
                "retrieved": docs,
                "reranked": reranked,
                "prompt": prompt,
                "answer": f"ID: {answer}",
                "answer_ids": [answer],
            }
            handle.write(orjson.dumps(rec) + b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--file", type=Path, default=Path("/tmp/ragstage-bench.jsonl"))
    args = parser.parse_args()
    if not args.file.exists():
        t0 = time.perf_counter()
        write_synthetic(args.file, args.traces)
        print(f"wrote {args.traces:,} traces ({args.file.stat().st_size / 1e6:.0f} MB) "
              f"in {time.perf_counter() - t0:.1f} s")
    cmd = [sys.executable, "-m", "ragstage.cli", "attribute", str(args.file), "--by", "pipeline", "--format", "json"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    wall = time.perf_counter() - t0
    if done.returncode:
        print(done.stderr, file=sys.stderr)
        return done.returncode
    # ru_maxrss of the children: the largest single process (KiB on Linux). The command's
    # workers run one per core, so the sum over processes is also reported, approximately.
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows = orjson.loads(done.stdout)
    print(f"attribute: {wall:.2f} s wall, peak RSS of the largest process {peak_mb:.0f} MB, "
          f"{sum(r['count'] for r in rows):,} traces in {len(rows)} rows, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
