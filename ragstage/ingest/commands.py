"""``ragstage ingest spans|openinference|ragas`` and ``ragstage doctor``: argument parsing and output.

Kept out of ``ragstage/cli.py`` so the ingest's options live beside the ingest; the main CLI
only registers these parsers. Errors are raised as ``TraceError`` (file, line, field) and
printed by the main CLI as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import sys

import orjson

__all__ = ["add_ingest_parser", "add_doctor_parser"]


def _options(args: argparse.Namespace) -> dict:
    from .build import judge_contains
    from .gold import ChunkKeys

    defaults = ChunkKeys()
    keys = ChunkKeys(doc=args.doc_key or defaults.doc, start=args.start_key or defaults.start,
                     end=args.end_key or defaults.end)
    judge = judge_contains if args.judge == "contains" else None
    return {"chunk_keys": keys, "query_id_key": args.query_id_key, "judge": judge,
            "split_runs": args.split_runs}


def _add_span_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--labels", metavar="LABELS.jsonl", help="gold labels (query_id or query; gold, gold_spans)")
    parser.add_argument("--doc-key", action="append", metavar="KEY",
                        help="chunk metadata key naming the source document (repeatable; default: source, "
                             "ref_doc_id, doc_id, document_id, source_id)")
    parser.add_argument("--start-key", action="append", metavar="KEY",
                        help="chunk metadata key of the start offset (default: start_index, start_char_idx, "
                             "split_idx_start)")
    parser.add_argument("--end-key", action="append", metavar="KEY",
                        help="chunk metadata key of the end offset (default: end_index, end_char_idx; "
                             "else start + length)")
    parser.add_argument("--query-id-key", default="query_id", help="span metadata key holding the question id")
    parser.add_argument("--judge", choices=["none", "contains"], default="none",
                        help="contains: an answer is right when it contains the label's reference answer")
    parser.add_argument("--split-runs", action="store_true",
                        help="a question asked again starts the next run (pipeline '<name>#2', ...): one app run "
                             "twice into one project")


def _ingest_spans(args: argparse.Namespace) -> int:
    from .flow import ingest_spans_to

    result = ingest_spans_to(args.out, args.spans, labels=args.labels, pipeline=args.pipeline,
                             recover_prompt=not args.no_recover_prompt, workers=args.workers, **_options(args))
    n = result.written or 0
    print(f"wrote {n} trace(s) to {args.out}", file=sys.stderr)
    print(result.summary(), file=sys.stderr)
    if n == 0:
        return 1  # nothing to attribute: the summary says why
    return 1 if args.strict and result.loud else 0


def _ingest_ragas(args: argparse.Namespace) -> int:
    from ..trace import write_traces
    from .build import judge_contains
    from .ragas import ASSUMPTION, ragas_ingest

    judge = judge_contains if args.judge == "contains" else None
    traces, unmatched = ragas_ingest(args.file, pipeline=args.pipeline, labels=args.labels, judge=judge)
    n = write_traces(args.out, traces)
    print(f"wrote {n} trace(s) to {args.out}\nassumed: {ASSUMPTION}", file=sys.stderr)
    if unmatched:
        shown = ", ".join(f"{lb.query_id or lb.query!r} (line {lb.line})" for lb in unmatched[:5])
        print(f"{len(unmatched)} label(s) matched no sample: {shown}{' ...' if len(unmatched) > 5 else ''}",
              file=sys.stderr)
    return 1 if args.strict and unmatched else 0


def add_ingest_parser(sub: argparse._SubParsersAction) -> None:
    """``ragstage ingest spans SPANS... --out`` (``openinference`` is the same) and ``ingest ragas FILE --out``."""
    ingest = sub.add_parser("ingest", help="turn your own system's logs (spans, Ragas samples) into traces")
    kinds = ingest.add_subparsers(dest="source", required=True)
    for name, help_text in (("spans", "spans from any tracing export (format detected from each file)"),
                            ("openinference", "the same as 'spans' (OpenInference spans, OTLP or Phoenix)")):
        oi = kinds.add_parser(name, help=help_text)
        oi.add_argument("spans", nargs="+", metavar="SPANS",
                        help="OTLP JSON (either key style), Phoenix span JSON Lines or Parquet (a file or a "
                             "folder), MLflow Trace.to_json() lines or search_traces Parquet")
        oi.add_argument("--out", required=True, metavar="TRACES.jsonl")
        oi.add_argument("--pipeline", default="default", help="pipeline name for traces whose spans do not set one")
        oi.add_argument("--no-recover-prompt", action="store_true",
                        help="do not recover prompt ids from the prompt text (prompt stays 'not logged')")
        oi.add_argument("--strict", action="store_true",
                        help="exit 1 when anything could put a trace in a wrong bucket: a label that matched no "
                             "request or no chunk, an incomplete request, a request with no LLM span, a warning")
        oi.add_argument("--workers", type=int, default=None, metavar="N",
                        help="processes that read one large OTLP JSON Lines file in parts (default: one per "
                             "core; 1: this process alone); the output is the same")
        _add_span_options(oi)
        oi.set_defaults(func=_ingest_spans)
    ragas = kinds.add_parser("ragas", help="an evaluation dataset in the Ragas sample shape (to_jsonl, to_csv, "
                                           "or to_pandas().to_json())")
    ragas.add_argument("file", metavar="SAMPLES")
    ragas.add_argument("--out", required=True, metavar="TRACES.jsonl")
    ragas.add_argument("--pipeline", default="default")
    ragas.add_argument("--labels", metavar="LABELS.jsonl",
                       help="gold labels by query_id (the sample's query_id or id) or question: gold document ids "
                            "(the contexts' ids), gold_text sentences, correct, answerable, refused, reference")
    ragas.add_argument("--judge", choices=["none", "contains"], default="none",
                       help="contains: an answer is right when it contains the label's reference answer")
    ragas.add_argument("--strict", action="store_true", help="exit 1 when a label matched no sample")
    ragas.set_defaults(func=_ingest_ragas)


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor_files

    report = doctor_files(args.files, labels=args.labels, recover_prompt=args.recover_prompt,
                          ingest_options=_options(args))
    if args.format == "json":
        sys.stdout.write(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(report.to_text())
    return 1 if report.blocked else 0


def add_doctor_parser(sub: argparse._SubParsersAction) -> None:
    """``ragstage doctor FILE... [--format table|json]``."""
    doctor = sub.add_parser("doctor", help="which minimum log fields your traces lack, and what that costs")
    doctor.add_argument("files", nargs="+", metavar="FILE",
                        help="trace files (.jsonl), or spans in any format 'ragstage ingest spans' reads")
    doctor.add_argument("--format", choices=["table", "json"], default="table")
    doctor.add_argument("--recover-prompt", action="store_true",
                        help="for spans: recover prompt ids from the prompt text before checking")
    _add_span_options(doctor)
    doctor.set_defaults(func=_doctor)
