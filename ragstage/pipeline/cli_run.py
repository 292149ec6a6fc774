"""``ragstage run``: one pipeline over a BEIR dataset, from the command line.

:func:`add_run_arguments` fills an argparse (sub)parser and :func:`run_from_args` runs it;
``ragstage/cli.py`` wires them as the ``run`` subcommand. User errors (a bad data folder, a
wrong checksum, an unknown prompt version, a model that cannot be loaded) raise ValueError
subclasses with a one-line message.

Which model each option selects (``--embedder standin`` and ``--generator standin``: the
offline stand-ins) is decided in :mod:`ragstage.pipeline.components`, the same place chapter 5
asks; every trace and the receipt then say which models made the run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .components import (
    RERANKERS,
    RETRIEVERS,
    STANDIN,
    make_embedder,
    make_generator,
    make_reranker,
    make_retriever,
)
from .data import BeirData, load_beir
from .download import default_cache_dir, scifact
from .embedding import DEFAULT_EMBEDDER
from .generation import DEFAULT_GENERATOR, DTYPES, TEMPLATES
from .oracle import gold_context_oracle
from .rerank import DEFAULT_CROSS_ENCODER
from .run import Pipeline, RunResult

__all__ = ["add_run_arguments", "run_from_args"]


def add_run_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``run`` options to ``parser`` (returned for chaining)."""
    parser.add_argument("--data", required=True, help="'scifact' (downloaded once, md5-checked) or a BEIR folder")
    parser.add_argument("--split", default="test", help="qrels split (default: test)")
    parser.add_argument("--retriever", choices=RETRIEVERS, default="bm25")
    parser.add_argument("--reranker", choices=RERANKERS, default="none",
                        help="rank-fusion fuses BM25 and embedder ranks: needs no cross-encoder, and is NOT one")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER,
                        help=f"model id or path for dense retrieval / rank-fusion; '{STANDIN}' = offline MiniLM copy")
    parser.add_argument("--cross-encoder", default=DEFAULT_CROSS_ENCODER, help="model id or path")
    parser.add_argument("--generator", default=DEFAULT_GENERATOR,
                        help=f"model id or path; '{STANDIN}' = offline Qwen2.5-Coder GGUF stand-in")
    parser.add_argument("--gguf-file", default=None, help="GGUF file name inside the --generator folder")
    parser.add_argument("--dtype", choices=DTYPES, default=None,
                        help="load the generator in this precision (default: the checkpoint's own); "
                             "the traces name it, as answers can differ")
    parser.add_argument("--prompt-version", choices=sorted(TEMPLATES), default="original")
    parser.add_argument("--budget", type=int, default=1024, help="prompt token budget (generator tokenizer)")
    parser.add_argument("--top-k", type=int, default=100, help="retrieval depth")
    parser.add_argument("--rerank-n", type=int, default=10, help="candidates kept after reranking")
    parser.add_argument("--prompt-top", type=int, default=5, help="reranked passages offered to the prompt")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="generation batch size (default: 1 on a CPU, 8 on a GPU)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    parser.add_argument("--name", default=None, help="pipeline name (default: e.g. bm25+ce)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="root of the data, model and stage caches (default: $RAGSTAGE_CACHE or ~/.cache/ragstage)")
    parser.add_argument("--out", type=Path, required=True, help="run folder for traces.jsonl and receipt.json")
    parser.add_argument("--oracle", choices=("gold-context",), default=None,
                        help="also run the gold-context oracle on this run (written to a folder beside --out)")
    return parser


def _data(args: argparse.Namespace, cache: Path) -> BeirData:
    data = scifact(cache, args.split) if args.data == "scifact" else load_beir(args.data, args.split)
    return data.limit(args.limit)


def run_from_args(args: argparse.Namespace) -> int:
    """Run the pipeline the arguments describe; print where the results are; return 0."""
    for name in ("budget", "top_k", "rerank_n", "prompt_top", "batch_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    cache = args.cache_dir or default_cache_dir()
    data = _data(args, cache)
    embedder = make_embedder(args.embedder, device=args.device, cache_dir=cache)  # shared by retriever and reranker
    reranker = make_reranker(args.reranker, embedder, cross_encoder=args.cross_encoder, device=args.device)
    generator = make_generator(args.generator, gguf_file=args.gguf_file, device=args.device,
                               batch_size=args.batch_size, cache_dir=cache, dtype=args.dtype)
    pipeline = Pipeline(make_retriever(args.retriever, data.corpus, embedder), reranker, generator,
                        budget=args.budget, top_k=args.top_k, rerank_n=args.rerank_n, prompt_top=args.prompt_top,
                        prompt_version=args.prompt_version, name=args.name, cache_dir=cache / "stages")
    result = pipeline.run(data.queries, data.qrels, args.out, data_info={"source": data.source, **data.meta})
    _report(result)
    if args.oracle == "gold-context":
        _report(gold_context_oracle(args.out, generator, data=data, cache_dir=cache / "stages"))
    return 0


def _report(result: RunResult) -> None:
    counts = result.receipt["counts"]
    print(f"{result.receipt['pipeline']}: {counts['traces']} traces -> {result.traces} "
          f"({counts['generated']} generated, {counts['generation_cache_hits']} from cache, "
          f"{counts['errors']} service errors, {result.receipt['wall_seconds']:.1f} s)")
    for label in result.receipt["stand_ins"]:
        print(f"  uses {label}")
    sys.stdout.flush()
