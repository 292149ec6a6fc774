"""Benchmark: `ragstage ingest spans SPANS --labels LABELS --out TRACES` beside a bare orjson parse.

Writes a synthetic OTLP JSON Lines file once (seeded): each request is five spans shaped like
the LangChain instrumentor's (a root CHAIN span with the query id in its metadata, a
RETRIEVER span with 10 documents of about 300 characters carrying source and start offset,
a formatting CHAIN span, an LLM span whose input message holds 1-5 of those passages, one of
them cut mid-passage in a tenth of the requests, and an output parser span), written in
batches of 100 requests a line as the Collector's file exporter does. Labels give a
character span in one source document per request. Then it times the command in a
subprocess (prompt recovery and span-level gold included) and reads its peak memory.

    python benchmarks/bench_ingest.py [--spans 10000 30000 100000] [--file /tmp/ragstage-bench-spans.jsonl]

Ingest holds every span in memory, so the cyclic garbage collector, run again and again over a
growing heap of small dicts, once made it superlinear (10,000 / 30,000 / 100,000 spans: 3.7 /
9.0 / 66.8 s); ``ingest_openinference`` pauses it while it reads, and the time per span is flat.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

WORDS = np.array("the of leave budget travel hotel weeks days approval laptop security remote staff policy "
                 "request receipt euros monthly allowance training conference director people team".split())


def _attr(key: str, value: object) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(trace: str, span: str, parent: str | None, name: str, kind: str, t: int, attrs: dict) -> dict:
    out = {"traceId": trace, "spanId": span, "name": name, "kind": 1, "startTimeUnixNano": str(t),
           "endTimeUnixNano": str(t + 1000), "status": {"code": 1},
           "attributes": [_attr("openinference.span.kind", kind)] + [_attr(k, v) for k, v in attrs.items()]}
    if parent:
        out["parentSpanId"] = parent
    return out


def write_synthetic(spans_path: Path, labels_path: Path, n_spans: int, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    n_requests = n_spans // 5
    passages = [" ".join(rng.choice(WORDS, size=50)) for _ in range(2000)]
    with open(spans_path, "wb") as out, open(labels_path, "wb") as labels:
        batch: list[dict] = []
        for r in range(n_requests):
            trace = f"{r + 1:032x}"
            ids = [f"{r * 5 + k + 1:016x}" for k in range(5)]
            docs = rng.choice(len(passages), size=10, replace=False)
            retrieval = {}
            for i, d in enumerate(int(x) for x in docs):
                p = f"retrieval.documents.{i}.document"
                retrieval[f"{p}.content"] = passages[d]
                where = {"source": f"doc{d // 4}", "start_index": (d % 4) * 400}
                retrieval[f"{p}.metadata"] = orjson.dumps(where).decode()
                retrieval[f"{p}.score"] = float(10 - i)
            shown = [passages[int(d)] for d in docs[: int(rng.integers(1, 6))]]
            if rng.random() < 0.1:
                shown[-1] = shown[-1][:150]
            t = 1_700_000_000_000_000_000 + r * 10_000
            meta = orjson.dumps({"query_id": f"q{r}"}).decode()
            batch += [
                _span(trace, ids[0], None, "RunnableSequence", "CHAIN", t, {"input.value": f"question {r}?",
                                                                            "metadata": meta}),
                _span(trace, ids[1], ids[0], "BM25Retriever", "RETRIEVER", t + 1, {"input.value": f"question {r}?",
                                                                                  **retrieval}),
                _span(trace, ids[2], ids[0], "format_docs", "CHAIN", t + 2, {"output.value": "\n\n".join(shown)}),
                _span(trace, ids[3], ids[0], "ChatModel", "LLM", t + 3, {
                    "llm.input_messages.0.message.role": "system",
                    "llm.input_messages.0.message.content": "Answer from:\n" + "\n\n".join(shown),
                    "llm.output_messages.0.message.content": "an answer", "llm.model_name": "bench-model"}),
                _span(trace, ids[4], ids[0], "StrOutputParser", "CHAIN", t + 4, {"output.value": "an answer"}),
            ]
            gold_doc = int(docs[int(rng.integers(0, 10))])
            labels.write(orjson.dumps({"query_id": f"q{r}", "gold_spans": [
                {"id": f"doc{gold_doc // 4}", "start": (gold_doc % 4) * 400 + 10, "end": (gold_doc % 4) * 400 + 60}]})
                + b"\n")
            if len(batch) >= 500 or r == n_requests - 1:
                out.write(orjson.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
                    {"scope": {"name": "bench"}, "spans": batch}]}]}) + b"\n")
                batch = []
    return n_requests * 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, nargs="+", default=[100_000],
                        help="one or more sizes; several show whether the time grows linearly")
    parser.add_argument("--file", type=Path, default=Path("/tmp/ragstage-bench-spans.jsonl"))
    args = parser.parse_args()
    for size in args.spans:
        spans = args.file.with_suffix(f".{size}.jsonl")
        labels, out = spans.with_suffix(".labels.jsonl"), spans.with_suffix(".traces.jsonl")
        start = time.perf_counter()
        n = write_synthetic(spans, labels, size)
        print(f"wrote {n:,} spans ({spans.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - start:.1f} s")
        parse = [sys.executable, "-c", "import orjson, sys\nfor line in open(sys.argv[1], 'rb'): orjson.loads(line)",
                 str(spans)]
        start = time.perf_counter()
        subprocess.run(parse, check=True)
        bare = time.perf_counter() - start
        print(f"bare orjson parse of the same file: {bare:.1f} s")
        cmd = [sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(spans), "--labels", str(labels),
               "--out", str(out)]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child so far
        print(f"ingest: {wall:.1f} s wall for {n:,} spans ({n / wall:,.0f} spans/s, {wall / n * 1e4:.2f} s per "
              f"10,000), {wall / bare:.1f}x the bare parse, peak {peak:.0f} MB resident")


if __name__ == "__main__":
    main()
