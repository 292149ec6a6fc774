"""Trace sets shared by the Parquet and Spark tests: the chapter fixtures, the mini run, synthetic traces."""

import random

from ragstage import Trace

TRACE_FILES = [
    "five_cases/cases.jsonl", "five_cases/not_relevance.jsonl", "policy/audit_cases.jsonl",
    "incidents/four_logs.jsonl", "incidents/batch.jsonl", "incidents/after_fix.jsonl",
    "intervals/multi_relevant.jsonl", "stages/query_understanding.jsonl",
    "mini_run/bm25/traces.jsonl", "mini_run/bm25_rerank/traces.jsonl", "mini_run/dense/traces.jsonl",
    "mini_run/dense_rerank/traces.jsonl", "mini_run/dense_rerank/traces-revised.jsonl",
]


def synthetic(n, seed=0):
    """Traces that reach every bucket and both flags, with a meta key to group by."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        docs = [f"d{rng.randrange(50)}" for _ in range(8)]
        out.append(Trace(query_id=f"q{i}", pipeline=rng.choice(["a", "b"]), gold=[rng.choice(docs + ["zz"])],
                         retrieved=docs, reranked=docs[:4] if rng.random() < 0.7 else None,
                         prompt=docs[: rng.randrange(0, 4)] if rng.random() < 0.9 else None,
                         answer_ids=[rng.choice(docs)] if rng.random() < 0.8 else None,
                         answer=rng.choice(["", "It takes 3 days.", "See [2].", "See [7]."]),
                         answerable=rng.random() < 0.95, refused=rng.random() < 0.1,
                         error={"stage": "retrieval", "message": "down"} if rng.random() < 0.02 else None,
                         meta={"kind": rng.choice(["rare", "broad"])}))
    return out
