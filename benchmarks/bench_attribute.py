"""Benchmark: `ragstage attribute` against DuckDB and a bare parse, side by side, in one run.

Writes a million synthetic traces (20 retrieved ids, 10 reranked, 1-5 in the prompt, four
pipelines, seeded) as JSON Lines and as Parquet (``ragstage convert``) once, then times, each
in a fresh subprocess:

* parsing the JSON Lines file with orjson alone, on one core (the floor for any Python reader),
  and ragstage's own typed decoding and checking alone (no diagnosis), on one core;
* turning the Parquet file's rows into checked records alone, on one core;
* a DuckDB SQL query of the core first-lost-stage rule (``list_has_any`` down the stages) on
  the JSON Lines file and on the Parquet file, with two threads;
* ``ragstage attribute FILE --by pipeline --format json`` on each file (all cores: two here).

DuckDB runs only the core rule (no validation, no flags, no duplicate check): it is the peer
to measure against, not a second implementation; its counts are printed next to ragstage's
as a sanity check. Speed is measured here, never asserted in a test. It prints the fastest run
of each command, and the ratio of ``ragstage attribute`` to DuckDB's query within each round (the
two ran back to back), as a median and a range over the rounds.

With ``--baseline DIR`` (a folder holding another version's ``ragstage`` package, such as an
export of an earlier commit), that version's ``ragstage attribute`` runs in every round too, and its
ratios are printed beside these: a change is measured against the code before it in the same
conditions.

    python benchmarks/bench_attribute.py [--traces 1000000] [--file /tmp/ragstage-bench.jsonl] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import orjson
from timing import show, timed

PIPELINES = ("bm25", "bm25+ce", "minilm", "minilm+ce")

CORE_RULE = """
SELECT pipeline, CASE
    WHEN len(gold) = 0 THEN 'label_missing'
    WHEN NOT list_has_any(retrieved, gold) THEN 'retrieval'
    WHEN reranked IS NOT NULL AND NOT list_has_any(reranked, gold) THEN 'reranking'
    WHEN prompt IS NULL THEN 'not_logged'
    WHEN NOT list_has_any(prompt, gold) THEN 'prompt_assembly'
    WHEN list_has_any(answer_ids, gold) THEN 'none'
    ELSE 'generation' END AS stage, count(*) AS n
FROM {source} GROUP BY ALL ORDER BY ALL
"""
JSON_SOURCE = ("read_json('{path}', format='newline_delimited', columns={{query_id: 'VARCHAR', pipeline: 'VARCHAR', "
               "gold: 'VARCHAR[]', retrieved: 'VARCHAR[]', reranked: 'VARCHAR[]', prompt: 'VARCHAR[]', "
               "answer: 'VARCHAR', answer_ids: 'VARCHAR[]'}})")


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


def duckdb_cmd(source: str) -> list[str]:
    code = ("import duckdb, json, sys; con = duckdb.connect(config={'threads': 2}); "
            "con.execute('SET enable_progress_bar = false'); "
            f"print(json.dumps(con.execute({CORE_RULE.format(source=source)!r}).fetchall()))")
    return [sys.executable, "-c", code]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--file", type=Path, default=Path("/tmp/ragstage-bench.jsonl"))
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; the fastest is shown")
    parser.add_argument("--baseline", type=Path, help="a folder with another version's ragstage package")
    args = parser.parse_args()
    parquet = args.file.with_suffix(".parquet")
    if not args.file.exists():
        t0 = time.perf_counter()
        write_synthetic(args.file, args.traces)
        size = args.file.stat().st_size / 1e6
        print(f"wrote {args.traces:,} traces ({size:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    if not parquet.exists():
        timed([sys.executable, "-m", "ragstage.cli", "convert", str(args.file), str(parquet)], "convert")
        print(f"converted to Parquet ({parquet.stat().st_size / 1e6:.0f} MB)")
    parse = ("import orjson, sys\nwith open(sys.argv[1], 'rb') as h:\n    for line in h:\n        orjson.loads(line)")
    decode = ("import gc, sys\nfrom ragstage.typed_record import decode_record\ngc.disable()\n"
              "with open(sys.argv[1], 'rb') as h:\n    for line in h:\n        decode_record(line)")
    # The columns, batches and conversion to records that read_parquet (compare, convert) uses.
    rows = ("import gc, sys\nfrom ragstage.parquet import _group_records, _groups, batch_records\ngc.disable()\n"
            "for _, _, records in _group_records(_groups(sys.argv[1]), 'pipeline', False, batch_records):\n"
            "    for rec in records:\n        pass")
    attribute = [sys.executable, "-m", "ragstage.cli", "attribute", "--by", "pipeline", "--format", "json"]
    json_peer, parquet_peer = "DuckDB core rule, JSONL (2 threads)", "DuckDB core rule, Parquet (2 threads)"
    ours = {"JSONL": "ragstage attribute, JSONL (2 processes)", "Parquet": "ragstage attribute, Parquet (2 processes)"}
    commands = [
        ([sys.executable, "-c", parse, str(args.file)], "orjson parse alone, JSONL (1 core)"),
        ([sys.executable, "-c", decode, str(args.file)], "ragstage decode+check alone, JSONL (1 core)"),
        (duckdb_cmd(JSON_SOURCE.format(path=args.file)), json_peer),
        ([*attribute, str(args.file)], ours["JSONL"]),
        ([sys.executable, "-c", rows, str(parquet)], "ragstage Arrow -> records alone (1 core)"),
        (duckdb_cmd(f"read_parquet('{parquet}')"), parquet_peer),
        ([*attribute, str(parquet)], ours["Parquet"]),
    ]
    pairs = [(ours["JSONL"], json_peer), (ours["Parquet"], parquet_peer)]
    if args.baseline:
        # The baseline's command line, its package first on the path (worker processes are forked: they keep it).
        run = (f"import runpy, sys; sys.path.insert(0, {str(args.baseline.resolve())!r}); "
               "runpy.run_module('ragstage.cli', run_name='__main__', alter_sys=True)")
        old = [sys.executable, "-c", run, "attribute", "--by", "pipeline", "--format", "json"]
        for at, (kind, path) in ((4, ("JSONL", args.file)), (8, ("Parquet", parquet))):
            commands.insert(at, ([*old, str(path)], f"baseline attribute, {kind} (2 processes)"))
        pairs += [(f"baseline attribute, {kind} (2 processes)", peer) for kind, peer in
                  (("JSONL", json_peer), ("Parquet", parquet_peer))]
        pairs += [(ours[kind], f"baseline attribute, {kind} (2 processes)") for kind in ("JSONL", "Parquet")]
    # Every command runs --repeat times, round robin, and the fastest run of each is shown: on a
    # shared machine the minimum is the least disturbed measurement, for every contender alike.
    # Every other round runs in reverse order: a command's time depends on the one run before it
    # (on the 2-core machine, the second of two alternating commands was the slower in both orders).
    runs: dict[str, list[dict]] = {label: [] for _, label in commands}
    for round_ in range(args.repeat):
        for cmd, label in commands if round_ % 2 == 0 else commands[::-1]:
            runs[label].append(timed(cmd, label))
    fastest = {label: min(runs[label], key=lambda run: run["wall"]) for _, label in commands}
    print(f"{args.traces:,} traces")
    print(f"fastest of {args.repeat} runs each")
    split = next(i for i, (_, label) in enumerate(commands) if "Arrow" in label)
    show([fastest[label] for _, label in commands[:split]], json_peer)
    show([fastest[label] for _, label in commands[split:]], parquet_peer)
    # The same ratio within each round, where the two commands ran one right after the other: a
    # drift in the machine's load moves both, so its spread says how far the fastest runs can be trusted.
    for ours_label, peer_label in pairs:
        for unit in ("wall", "cpu"):
            ratios = sorted(o[unit] / p[unit] for o, p in zip(runs[ours_label], runs[peer_label]))
            print(f"{ours_label} / {peer_label.split(',')[0]}, {unit}, each round: median "
                  f"{statistics.median(ratios):.2f}x (from {ratios[0]:.2f}x to {ratios[-1]:.2f}x "
                  f"over {len(ratios)} rounds)")
    counted = Counter({(r["group"], r["stage"]): r["count"] for r in orjson.loads(fastest[ours["JSONL"]]["stdout"])})
    theirs = Counter({(p, s): n for p, s, n in orjson.loads(fastest[json_peer]["stdout"])})
    same = counted == theirs and fastest[ours["JSONL"]]["stdout"] == fastest[ours["Parquet"]]["stdout"]
    print("counts: ragstage JSONL = ragstage Parquet = DuckDB core rule" if same else "COUNTS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
