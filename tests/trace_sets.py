"""Trace sets shared by the Parquet and Spark tests: the chapter fixtures, the mini run, synthetic traces."""

import random

from hypothesis import strategies as st

from ragstage import Trace
from ragstage.fixtures import fixtures_dir

# The mini run's trace files are found, not listed: chapter 5 decides which pipelines it holds.
MINI_RUN = sorted(str(p.relative_to(fixtures_dir())) for p in fixtures_dir().glob("mini_run/*/traces*.jsonl"))
#: The pipeline of the mini run with a prompt-only re-run: (its traces, the re-run's traces).
MINI_RUN_PAIR = next((name.replace("-revised", ""), name) for name in MINI_RUN if "-revised" in name)

TRACE_FILES = [
    "five_cases/cases.jsonl", "five_cases/not_relevance.jsonl", "policy/audit_cases.jsonl",
    "incidents/four_logs.jsonl", "incidents/batch.jsonl", "incidents/after_fix.jsonl",
    "intervals/multi_relevant.jsonl", "stages/query_understanding.jsonl",
    *MINI_RUN,
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


IDS = st.lists(st.sampled_from(["g1", "g2", "d1", "d2", "d3"]), max_size=5)  # repeats allowed
ANSWERS = st.sampled_from(["", "ID: d1", "It is 20 weeks [1].", "It is 20 weeks.", "See [9].", "[2] and [1]",
                           "Two. 3 [1].", "x [0]"])


@st.composite
def random_traces(draw):
    """A trace with every field the rules and the groups read, each optional one null or not."""
    maybe = lambda s: st.none() | s  # noqa: E731
    return Trace(query_id=draw(st.sampled_from(["q1", "q2", "q3", "é\x00"])),
                 pipeline=draw(st.sampled_from(["a", "b", "default"])),
                 gold=draw(IDS), retrieved=draw(IDS), reranked=draw(maybe(IDS)), prompt=draw(maybe(IDS)),
                 truncated=draw(maybe(IDS)), answer_ids=draw(maybe(IDS)), answer=draw(ANSWERS),
                 answerable=draw(st.booleans()), refused=draw(st.booleans()), correct=draw(maybe(st.booleans())),
                 claims=draw(maybe(st.lists(st.booleans(), max_size=3))), complete=draw(maybe(st.booleans())),
                 query_ok=draw(maybe(st.booleans())), model=draw(maybe(st.sampled_from(["m1", "m2"]))),
                 error=draw(st.none() | st.none() | st.just({"stage": "retrieval", "message": "down"})),
                 meta=draw(st.sampled_from([{}, {"kind": "rare"}, {"kind": 3}, {"model": "m9"}])))


#: The columns the rules read besides query_id, gold and retrieved: each may be left out of a batch.
OPTIONAL = ["reranked", "prompt", "truncated", "answer_ids", "correct", "claims", "complete", "query_ok", "error",
            "answer", "answerable", "refused", "pipeline"]


def arrow_batch(traces, dropped=(), dictionary=False):
    """The traces as one Arrow batch of the schema's columns, less ``dropped`` (each field then at
    its default, as in a file without that column); id lists dictionary-encoded if asked."""
    import pyarrow as pa

    from ragstage.parquet import SCHEMA

    names = ["query_id", "gold", "retrieved", *(c for c in OPTIONAL if c not in dropped)]
    rows = [{c: list(v) if isinstance(v := getattr(t, c), tuple) else v for c in names} for t in traces]
    batch = pa.RecordBatch.from_pylist(rows, schema=pa.schema([SCHEMA.field(c) for c in names]))
    if dictionary:
        ids = pa.list_(pa.dictionary(pa.int32(), pa.string()))
        batch = pa.RecordBatch.from_arrays(
            [c.cast(ids) if c.type == pa.list_(pa.string()) else c for c in batch.columns], names=names)
    return batch
