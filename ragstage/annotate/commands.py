"""``ragstage annotate phoenix|mlflow TRACES``: the diagnoses written back to the tracing server.

Prints what was (or, with ``--dry-run``, would be) written, one line per request, then the
count. Exit 0 when every trace was written, 1 when any was not (refused for want of a source
trace id, unknown to the server, or failed after retries), 2 for a bad traces file.
"""

from __future__ import annotations

import argparse
import sys

from ..trace_files import read_any
from .outcome import Outcome

__all__ = ["add_annotate_parser"]


def _finish(outcome: Outcome) -> int:
    for line in outcome.lines:
        print(("would write: " if outcome.dry_run else "wrote: ") + line)
    print(outcome.summary(), file=sys.stderr)
    return 0 if outcome.complete else 1


def _needs(module: str, distribution: str) -> None:
    """A missing client library is the user's to install: one line and exit 2, not a traceback."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"this command needs {distribution} ({exc}): pip install 'ragstage[exports]'") from None


def _phoenix(args: argparse.Namespace) -> int:
    _needs("phoenix.client", "arize-phoenix-client")
    from phoenix.client import Client

    from .phoenix import annotate_phoenix

    traces = list(read_any(args.traces))
    client = Client(base_url=args.url)
    return _finish(annotate_phoenix(client, traces, args.project, dry_run=args.dry_run, require=args.require,
                                    attempts=args.attempts))


def _mlflow(args: argparse.Namespace) -> int:
    _needs("mlflow", "mlflow")
    from .mlflow import annotate_mlflow

    traces = list(read_any(args.traces))
    return _finish(annotate_mlflow(traces, tracking_uri=args.tracking_uri, dry_run=args.dry_run,
                                   require=args.require, attempts=args.attempts))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", metavar="TRACES",
                        help="traces `ragstage ingest` read from this server (.jsonl, .parquet)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
    parser.add_argument("--require", choices=["any", "all"], default="any")
    parser.add_argument("--attempts", type=int, default=3, help="tries per call on a network error (default 3)")


def add_annotate_parser(sub: argparse._SubParsersAction) -> None:
    """``annotate phoenix`` and ``annotate mlflow`` under the ``ragstage`` command."""
    annotate = sub.add_parser("annotate", help="write each request's bucket back into Phoenix or MLflow")
    where = annotate.add_subparsers(dest="server", required=True)
    phoenix = where.add_parser("phoenix", help="span and document annotations named 'ragstage'")
    _common(phoenix)
    phoenix.add_argument("--url", required=True, help="the Phoenix server, e.g. http://localhost:6006")
    phoenix.add_argument("--project", required=True, help="the Phoenix project the traces were read from")
    phoenix.set_defaults(func=_phoenix)
    mlflow = where.add_parser("mlflow", help="'ragstage' feedback and 'ragstage_gold' expectations")
    _common(mlflow)
    mlflow.add_argument("--tracking-uri", required=True, help="the MLflow tracking URI, e.g. sqlite:///mlflow.db")
    mlflow.set_defaults(func=_mlflow)
