"""Benchmark: `ragstage ingest spans SPANS --labels LABELS --out TRACES` beside a bare orjson parse.

Writes a synthetic OTLP JSON Lines file once per size (seeded): each request is five spans
shaped like the LangChain instrumentor's (a root CHAIN span with the query id in its metadata,
a RETRIEVER span with 10 documents of about 300 characters carrying source and start offset
(drawn from 2,000 passages, so passages come back across requests as a corpus's chunks do),
a formatting CHAIN span, an LLM span whose input message holds 1-5 of those passages, one of
them cut mid-passage in a tenth of the requests, and an output parser span), written in
batches of 100 requests a line as the Collector's file exporter does. Labels give a
character span in one source document per request. Then, in ``--rounds`` rounds (3), each
in its own subprocess, it times a bare ``orjson`` parse of every line and right after it the
ingest command (prompt recovery and span-level gold included): wall and CPU time (user +
system, from the child's own rusage, so other load on a shared machine counts less), the
medians over the rounds, the ratio of each to the parse (for wall time, the median of the
rounds' own ratios and their range: a shared machine's slow spell hits both of a round), and
each child's peak resident memory.

    python benchmarks/bench_ingest.py [--spans 100000 300000 1000000] [--document 100000]
        [--retrievers 1000 10000] [--rounds 3] [--dir /tmp]

``--document N`` also writes the same N spans as one OTLP JSON document (Phoenix's UI
download: ``{"resource_spans": [...]}``), which a JSON parser must load whole.
``--retrievers`` times one request with that many retriever spans (the span tree is walked
in linear time). The files go to ``--dir`` and are deleted after each size.
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def _child(cmd: list[str]) -> tuple[float, float, float]:
    """Run ``cmd``; its wall seconds, CPU seconds (user + system) and peak resident MB."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed with exit code {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def write_document(jsonl: Path, document: Path) -> None:
    """The spans of an OTLP JSON Lines file as one pretty-printed ``{"resource_spans": ...}``
    document, as Phoenix's UI downloads it."""
    spans = [s for line in open(jsonl, "rb") for r in orjson.loads(line)["resourceSpans"]
             for sc in r["scopeSpans"] for s in sc["spans"]]
    document.write_bytes(orjson.dumps({"resource_spans": [{"scope_spans": [{"spans": spans}]}]},
                                      option=orjson.OPT_INDENT_2))


# JSON Lines line by line; a pretty-printed document (its first line is no JSON value) whole
_PARSE = ("import orjson, sys\ntry:\n    orjson.loads(open(sys.argv[1], 'rb').readline())\n"
          "    for line in open(sys.argv[1], 'rb'): orjson.loads(line)\n"
          "except orjson.JSONDecodeError:\n    orjson.loads(open(sys.argv[1], 'rb').read())")


def _row(label: str, n: int, spans: Path, labels: Path, out: Path, rounds: int) -> str:
    """One table row: in each round a bare parse, then the ingest command (the two side by side,
    so that a slow spell of a shared machine slows both); the medians over the rounds, and the
    median and range of the per-round ratios."""
    cmd = [sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(spans), "--labels", str(labels),
           "--out", str(out)]
    runs = [(_child([sys.executable, "-c", _PARSE, str(spans)]), _child(cmd)) for _ in range(rounds)]
    bare_wall, bare_cpu = (statistics.median(r[0][k] for r in runs) for k in (0, 1))
    wall, cpu = (statistics.median(r[1][k] for r in runs) for k in (0, 1))
    ratios = [ingest[0] / bare[0] for bare, ingest in runs]
    cpu_ratio = statistics.median(ingest[1] / bare[1] for bare, ingest in runs)
    spread = f" ({min(ratios):.1f}-{max(ratios):.1f})" if rounds > 1 else ""
    return (f"| {label} | {n:,} | {spans.stat().st_size / 1e6:,.0f} | {bare_wall:.1f} / {bare_cpu:.1f} | "
            f"{wall:.1f} / {cpu:.1f} | {statistics.median(ratios):.1f}{spread} | {cpu_ratio:.1f} "
            f"| {max(r[0][2] for r in runs):,.0f} | {max(r[1][2] for r in runs):,.0f} |")


def _write_in_child(spans: Path, labels: Path, size: int, document: Path | None) -> None:
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import bench_ingest as b\n"
            "b.write_synthetic(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))\n"
            "if sys.argv[5]: b.write_document(Path(sys.argv[2]), Path(sys.argv[5]))")
    subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(spans), str(labels), str(size),
                    str(document or "")], check=True)


def retriever_request(n: int) -> float:
    """CPU seconds to ingest one request of a root span and ``n`` retriever spans."""
    from ragstage.ingest import Span, ingest_spans

    kind = {"openinference.span.kind": "RETRIEVER"}
    spans = [Span("f" * 32, "f" * 16, None, "root", 0, 1, {"openinference.span.kind": "CHAIN"})]
    spans += [Span("f" * 32, f"{i + 1:016x}", "f" * 16, "r", i, i + 1,
                   {**kind, "retrieval.documents.0.document.id": f"d{i}"}) for i in range(n)]
    start = time.process_time()
    ingest_spans(spans)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, nargs="*", default=[100_000],
                        help="one or more sizes; several show whether the time grows linearly")
    parser.add_argument("--document", type=int, nargs="*", default=[],
                        help="sizes also written as one OTLP JSON document")
    parser.add_argument("--retrievers", type=int, nargs="*", default=[],
                        help="retriever spans in one request (e.g. 1000 10000)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of a bare parse and an ingest, side by side (medians are shown)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    print("| form | spans | MB | parse s wall / CPU | ingest s wall / CPU | ratio wall (each round) | ratio CPU "
          "| parse peak MB | ingest peak MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sorted(set(args.spans) | set(args.document)):
        spans = args.dir / f"ragstage-bench-spans.{size}.jsonl"
        labels, out = spans.with_suffix(".labels.jsonl"), spans.with_suffix(".traces.jsonl")
        document = spans.with_suffix(".document.json")
        try:
            # written by a child process: a forked child's peak memory counts the parent's pages,
            # so the parent must stay small
            _write_in_child(spans, labels, size, document if size in args.document else None)
            n = size // 5 * 5
            if size in args.spans:
                print(_row("OTLP JSON Lines", n, spans, labels, out, args.rounds), flush=True)
            if size in args.document:
                print(_row("one OTLP document", n, document, labels, out, args.rounds), flush=True)
        finally:
            for path in (spans, labels, out, document):
                path.unlink(missing_ok=True)
    for n in args.retrievers:
        print(f"one request with {n:,} retriever spans: {retriever_request(n):.2f} s CPU", flush=True)


if __name__ == "__main__":
    main()
