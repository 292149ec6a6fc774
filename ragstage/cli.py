"""The ``ragstage`` command: ``attribute``, ``compare``, ``convert``, ``run``, ``ingest`` and ``doctor``.

A user's mistake (a bad file, a missing question, a wrong option) ends with exit code 2
and one line naming the file, the line and the field: never a traceback.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from typing import Sequence

import orjson

from .formats import convert, count_files, read_any
from .rows import FLAG_COLUMNS, TABLE_COLUMNS, bucket_rows, flag_rows
from .trace import TraceError

__all__ = ["main", "build_parser"]


def _fmt_table(rows: list[dict], columns: list[str]) -> str:
    """A plain fixed-width table: readable in a terminal, stable in a README."""
    cells = [[_fmt(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    for row in cells:
        lines.append("  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _attribute(args: argparse.Namespace) -> int:
    by = None if args.by in ("", "none") else args.by
    tally = count_files(args.files, by=by, require=args.require, workers=args.workers)
    if args.flags:
        columns, table = FLAG_COLUMNS, flag_rows(tally.flags, tally.totals())
    else:
        columns, table = TABLE_COLUMNS, bucket_rows(tally.buckets)
    _print_rows([dict(zip(columns, row)) for row in table], columns, args.format)
    return 0


def _print_rows(rows: list[dict], columns: list[str], fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.write(buffer.getvalue())
    else:
        print(_fmt_table(rows, columns))


def _compare(args: argparse.Namespace) -> int:
    from .report import compare  # pandas loads for compare only: attribute prints its rows without it

    result = compare(read_any(args.before), read_any(args.after),
                     intersect=args.intersect, require=args.require)
    if args.format == "json":
        sys.stdout.write(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"questions paired: {result.n}")
    if result.only_before or result.only_after:
        print(f"left out (--intersect): {len(result.only_before)} only before, {len(result.only_after)} only after")
    print(f"right before: {result.both_right + result.broken}   right after: {result.both_right + result.fixed}")
    print(f"fixed: {result.fixed}   broken: {result.broken}   exact McNemar p = {result.p_value:.4g}")
    if result.undecided:
        print(f"undecided (unjudged or not logged in either run, not tested): {result.undecided}")
    print("\nbucket migration (rows: before, columns: after)")
    print(result.migration.to_string())
    return 0


def _convert(args: argparse.Namespace) -> int:
    n = convert(args.source, args.target)
    print(f"wrote {n} traces to {args.target}", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    from .pipeline.cli_run import run_from_args  # torch and friends load only for `run`

    return run_from_args(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragstage", description="Find which stage of a RAG system lost the answer.")
    sub = parser.add_subparsers(dest="command", required=True)

    attribute = sub.add_parser("attribute", help="bucket counts with Wilson intervals, per group")
    attribute.add_argument("files", nargs="+", metavar="FILE",
                           help="trace files (.jsonl, .jsonl.gz, .parquet, or a folder of .parquet files)")
    attribute.add_argument("--by", default="pipeline", help="trace field or meta key to group by ('none': one group)")
    attribute.add_argument("--require", choices=["any", "all"], default="any",
                           help="a stage loses the question when no gold id (any) or some gold id (all) is missing")
    attribute.add_argument("--format", choices=["table", "json", "csv"], default="table")
    attribute.add_argument("--workers", type=int, default=None, help="processes to use (default: all cores)")
    attribute.add_argument("--flags", action="store_true",
                           help="count the answers' flags (fabricated_citation, numeric_unmarked) instead of buckets")
    attribute.set_defaults(func=_attribute)

    comp = sub.add_parser("compare", help="paired comparison of two runs on the same questions")
    comp.add_argument("before", metavar="BEFORE")
    comp.add_argument("after", metavar="AFTER")
    comp.add_argument("--intersect", action="store_true", help="compare only the questions both runs have")
    comp.add_argument("--require", choices=["any", "all"], default="any")
    comp.add_argument("--format", choices=["table", "json"], default="table")
    comp.set_defaults(func=_compare)

    conv = sub.add_parser("convert", help="write traces from JSON Lines to Parquet or back (validated on the way)")
    conv.add_argument("source", metavar="IN", help=".jsonl, .jsonl.gz, .parquet, or a folder of .parquet files")
    conv.add_argument("target", metavar="OUT", help=".parquet, .jsonl or .jsonl.gz")
    conv.set_defaults(func=_convert)

    run = sub.add_parser("run", help="run a retrieval → reranking → assembly → generation pipeline")
    try:
        from .pipeline.cli_run import add_run_arguments
    except ImportError:  # pragma: no cover - the pipeline module is part of the package
        pass
    else:
        add_run_arguments(run)
    run.set_defaults(func=_run)

    from .ingest.cli import add_doctor_parser, add_ingest_parser

    add_ingest_parser(sub)
    add_doctor_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (TraceError, ValueError, FileNotFoundError) as exc:
        message = " ".join(str(exc).splitlines())  # one line, whatever a library put in its message (Arrow)
        print(f"ragstage {args.command}: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ragstage attribute big.jsonl | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
