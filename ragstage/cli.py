"""The ``ragstage`` command: ``attribute``, ``compare``, ``report``, ``convert``, ``sample``, ``run``, ``ingest``,
``doctor``, ``annotate`` and ``judge``.

Exit codes (docs/safe-outputs.md): 0 done; 1 the command's check failed (``compare --gate``:
the change is worse; ``ingest --strict``, ``doctor``: see their help); 2 a user's mistake (a bad
file, a missing question, a wrong option, a refused output), with one line naming the file,
the line and the field; 3 the system refused to read or write a file (permissions, a full
disk, a name too long), with one line naming the file; 4 an internal error (a bug), with its
traceback. A gate's verdict is never mistaken for a file that could not be written.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import traceback
from typing import Sequence

import orjson

from .errors import TraceError
from .rows import FLAG_COLUMNS, TABLE_COLUMNS, bucket_rows, flag_rows, table_cell
from .trace_files import convert, count_files, read_any

__all__ = ["main", "build_parser"]


def _fmt_table(rows: list[dict], columns: list[str]) -> str:
    """A plain fixed-width table: readable in a terminal, stable in a README, and inert in a CI log
    (every text cell through :func:`ragstage.rows.table_cell`, so no line begins with data)."""
    cells = [[_fmt(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    for row in cells:
        lines.append("  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return table_cell(value) if isinstance(value, str) else str(value)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _say_if_silver(paths: Sequence[str], corrected: bool = False) -> None:
    """On stderr: how many traces a judge labelled, and that their rates are the judge's."""
    from .judge.notice import silver_in_files, silver_note

    note = silver_note(*silver_in_files(paths), corrected=corrected)
    if note:
        print(note, file=sys.stderr)


def _attribute(args: argparse.Namespace) -> int:
    _say_if_silver(args.files, corrected=bool(args.gold_sample))
    if args.gold_sample or args.sample:
        from .ppi.estimate import gold_attribute

        return gold_attribute(args)
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
    if args.gate or args.summary or args.junit:
        return _gated(args)
    if any(_gold_options(args)):
        raise ValueError("--gold-sample-before/--sample-before and --gold-sample-after/--sample-after go with "
                         "--gate (or --summary, --junit)")
    from .report import compare  # pandas loads for compare only: attribute prints its rows without it
    from .run_labels import LabelCounter, judge_note

    before, after = LabelCounter(args.before), LabelCounter(args.after)
    result = compare(before.watch(read_any(args.before)), after.watch(read_any(args.after)),
                     intersect=args.intersect, require=args.require)
    for counted in (before, after):
        note = judge_note(counted.result())
        if note:
            print(f"ragstage compare: {note}", file=sys.stderr)
    _print_comparison(result, args.format)
    return 0


def _gold_options(args: argparse.Namespace) -> tuple[str | None, ...]:
    """Each run's gold traces and sample file: (gold before, gold after, sample before, sample after)."""
    return args.gold_sample_before, args.gold_sample_after, args.sample_before, args.sample_after


def _print_comparison(result, fmt: str, extra: dict | None = None) -> None:
    if fmt == "json":
        data = result.to_dict() if extra is None else {**result.to_dict(), "ppi": extra}
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    print(f"questions paired: {result.n}")
    if result.only_before or result.only_after:
        print(f"left out (--intersect): {len(result.only_before)} only before, {len(result.only_after)} only after")
    print(f"right before: {result.both_right + result.broken}   right after: {result.both_right + result.fixed}")
    print(f"fixed: {result.fixed}   broken: {result.broken}   exact McNemar p = {result.p_value:.4g}")
    if result.undecided:
        print(f"undecided (unjudged or not logged in either run, not tested): {result.undecided}")
    print("\nbucket migration (rows: before, columns: after)")
    print(result.migration.to_string())


def _gated(args: argparse.Namespace) -> int:
    """``compare`` with the gate: the comparison, then the verdict as the last line (stderr with JSON)."""
    from .atomic import atomic_write_bytes

    result = _gate_result(args)
    estimate = result.estimate
    _print_comparison(result.paired.comparison, args.format, None if estimate is None else estimate.to_dict())
    side = sys.stderr if args.format == "json" else sys.stdout
    if args.format != "json":
        print()
    if estimate is not None:
        print("\n".join(estimate.text()), file=side)
        if args.format != "json":
            print()
    print(result.verdict.line, file=side, flush=True)
    inputs = (args.before, args.after, *(p for p in _gold_options(args) if p))
    if args.summary:
        atomic_write_bytes(args.summary, result.to_markdown(), inputs=inputs)
    if args.junit:
        atomic_write_bytes(args.junit, result.to_junit(), inputs=inputs)
    return 0 if result.passed or not args.gate else 1


def _gate_result(args: argparse.Namespace):
    """The gate on people's labels, or, with gold samples (a run labelled by a judge), on the PPI++ estimate."""
    from .gate import gate
    from .gate_ppi import gate_on_judge

    before, after = list(read_any(args.before)), list(read_any(args.after))
    options = dict(alpha=args.alpha, max_broken=args.max_broken, critical=not args.no_critical, require=args.require,
                   names=(args.before, args.after))
    gold_before, gold_after, sample_before, sample_after = _gold_options(args)
    if not any(_gold_options(args)):
        return gate(before, after, intersect=args.intersect, **options)  # refuses a run labelled by a judge
    if args.intersect:
        raise ValueError("--intersect does not combine with gold samples: the paired estimate needs both runs over "
                         "the same questions, the ones the samples were drawn from")
    from .ppi.sample import read_sample

    return gate_on_judge(before, after, gold=tuple(None if p is None else list(read_any(p))
                                                   for p in (gold_before, gold_after)),
                         samples=tuple(None if p is None else read_sample(p) for p in (sample_before, sample_after)),
                         gold_names=(gold_before, gold_after), sample_names=(sample_before, sample_after), **options)


def _add_gold_sample_options(comp: argparse.ArgumentParser) -> None:
    """``compare``'s gold samples, one pair of options per run (as ``attribute --gold-sample --sample``)."""
    for side in ("before", "after"):
        upper = side.upper()
        comp.add_argument(f"--gold-sample-{side}", metavar="GOLD_TRACES",
                          help=f"people's labels of the questions drawn from {upper} (a judge labelled {upper}): "
                               "the gate decides on the PPI++ estimate")
        comp.add_argument(f"--sample-{side}", metavar="SAMPLE", help=f"the sample file drawn from {upper}")


def _report(args: argparse.Namespace) -> int:
    from .html import MAX_QUESTIONS, write_comparison, write_report

    by = None if args.by in ("", "none") else args.by
    max_questions = (MAX_QUESTIONS if args.max_questions is None
                     else None if args.max_questions < 0 else args.max_questions)
    if args.compare:
        if len(args.files) != 2:
            raise ValueError(f"--compare takes two trace files, BEFORE and AFTER; got {len(args.files)}")
        unused = [name for name, value in (("--gold-sample", args.gold_sample), ("--sample", args.sample),
                                           ("--workers", args.workers)) if value is not None]
        if unused:
            raise ValueError(f"{', '.join(unused)} make a report of one run; the comparison page does not "
                             "combine with them")
        n = write_comparison(*args.files, args.out, require=args.require, intersect=args.intersect,
                             max_questions=max_questions)
        print(f"wrote the comparison of {n} paired questions to {args.out}", file=sys.stderr)
    else:
        n = write_report(args.files, args.out, by=by, require=args.require, workers=args.workers,
                         max_questions=max_questions,
                         gold_sample=args.gold_sample, sample=args.sample)
        print(f"wrote the report of {n} traces to {args.out}", file=sys.stderr)
    return 0


def _convert(args: argparse.Namespace) -> int:
    n = convert(args.source, args.target)
    print(f"wrote {n} traces to {args.target}", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    from .pipeline.cli_run import run_from_args  # torch and friends load only for `run`

    return run_from_args(args)


def _probability(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


#: The commands whose arguments need none of the modules of ``run``, ``ingest`` and ``doctor``.
_LIGHT = ("attribute", "compare", "report", "convert", "sample")
_HEAVY = ("run", "ingest", "doctor", "annotate", "judge")


def build_parser(full: bool = True) -> argparse.ArgumentParser:
    """The parser of every command. ``full=False``: the same parser for the commands of ``_LIGHT``,
    with ``run``, ``ingest`` and ``doctor`` as names only (the same usage line and errors), so that
    ``attribute`` starts without importing the pipeline's modules (and numpy)."""
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
    attribute.add_argument("--gold-sample", metavar="GOLD_TRACES",
                           help="gold-labelled traces of the sampled requests: PPI++ rates (with --sample)")
    attribute.add_argument("--sample", metavar="SAMPLE", help="the sample file of `ragstage sample`")
    attribute.set_defaults(func=_attribute)

    from .ppi.sample import add_sample_parser

    add_sample_parser(sub)

    comp = sub.add_parser("compare", help="paired comparison of two runs on the same questions")
    comp.add_argument("before", metavar="BEFORE")
    comp.add_argument("after", metavar="AFTER")
    comp.add_argument("--intersect", action="store_true", help="compare only the questions both runs have")
    comp.add_argument("--require", choices=["any", "all"], default="any")
    comp.add_argument("--format", choices=["table", "json"], default="table")
    comp.add_argument("--gate", action="store_true",
                      help="exit 1 when AFTER is worse (McNemar, --max-broken, or a question newly critical; on runs "
                           "labelled by a judge, the PPI++ estimate from each run's gold sample)")
    comp.add_argument("--alpha", type=_probability, default=0.05,
                      help="fail when broken > fixed with exact McNemar p <= ALPHA (default 0.05); on runs labelled "
                           "by a judge, when the 1 - ALPHA PPI++ interval of (fixed - broken) / questions is below 0")
    comp.add_argument("--max-broken", type=_count, default=None, metavar="N",
                      help="fail when more than N questions broke (default: no limit)")
    comp.add_argument("--no-critical", action="store_true",
                      help="do not fail on questions newly in a critical bucket or flag")
    comp.add_argument("--summary", metavar="FILE", help="write the verdict and the comparison as Markdown")
    comp.add_argument("--junit", metavar="FILE", help="write JUnit XML: broken questions fail, fixed ones pass")
    _add_gold_sample_options(comp)
    comp.set_defaults(func=_compare)

    rep = sub.add_parser("report", help="one self-contained HTML page of a run (or, with --compare, of two)")
    rep.add_argument("files", nargs="+", metavar="TRACES",
                     help="trace files; with --compare exactly two: BEFORE AFTER")
    rep.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--by", default="pipeline", help="trace field or meta key to group by ('none': one group)")
    rep.add_argument("--require", choices=["any", "all"], default="any")
    rep.add_argument("--compare", action="store_true", help="a comparison page of BEFORE and AFTER")
    rep.add_argument("--intersect", action="store_true", help="with --compare: only the questions both runs have")
    rep.add_argument("--max-questions", type=int, default=None, metavar="N",
                     help="list at most N questions on the page (-1: all; default 50,000): a report the first N, "
                     "a comparison the changed pairs first; every trace is counted, and the page says "
                     "how many of each bucket (or transition) it does not list")
    rep.add_argument("--workers", type=int, default=None, help="processes that count (default: all cores)")
    rep.add_argument("--gold-sample", metavar="GOLD_TRACES",
                     help="gold-labelled traces of the sampled requests: the page adds the PPI++ rates (with --sample)")
    rep.add_argument("--sample", metavar="SAMPLE", help="the sample file of `ragstage sample`")
    rep.set_defaults(func=_report)

    conv = sub.add_parser("convert", help="write traces from JSON Lines to Parquet or back (validated on the way)")
    conv.add_argument("source", metavar="IN", help=".jsonl, .jsonl.gz, .parquet, or a folder of .parquet files")
    conv.add_argument("target", metavar="OUT", help=".parquet, .jsonl or .jsonl.gz")
    conv.set_defaults(func=_convert)

    if not full:
        for name in _HEAVY:
            sub.add_parser(name)
        return parser
    run = sub.add_parser("run", help="run a retrieval → reranking → assembly → generation pipeline")
    from .pipeline.cli_run import add_run_arguments

    add_run_arguments(run)
    run.set_defaults(func=_run)

    from .ingest.commands import add_doctor_parser, add_ingest_parser

    add_ingest_parser(sub)
    add_doctor_parser(sub)
    from .annotate.commands import add_annotate_parser

    add_annotate_parser(sub)
    from .judge.commands import add_judge_parser

    add_judge_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    light = bool(argv) and argv[0] in _LIGHT
    if light and "numpy" not in sys.modules:
        # These commands do no linear algebra: numpy's BLAS need not start a thread per core (each
        # spins for a while once started), on a machine whose cores count the traces.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser(full=not light).parse_args(argv)
    try:
        return int(args.func(args))
    except (TraceError, ValueError, FileNotFoundError) as exc:
        return _error(args.command, str(exc), 2)
    except BrokenPipeError:  # `ragstage attribute big.jsonl | head`
        return 0
    except OSError as exc:  # the system refused a read or a write: name the file, never a traceback
        return _error(args.command, str(exc) if exc.filename is None else f"{exc.filename}: {exc.strerror}", 3)
    except Exception:  # a bug: its traceback, and an exit code no verdict uses
        traceback.print_exc()
        return _error(args.command, "internal error (the traceback above is a bug in ragstage)", 4)


def _error(command: str, message: str, code: int) -> int:
    """Print one line (whatever a library put in its message, such as Arrow's several) and return ``code``."""
    one_line = " ".join(str(message).splitlines())
    print(f"ragstage {command}: error: {one_line}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
