"""``ragstage judge``: silver labels from a model judge, from another tool's verdicts, or from a filled
labelling sheet, and traces relabelled with them.

* ``judge label TRACES... --corpus FILE --out LABELS``: the model judge on every candidate;
* ``judge convert ROWS --name N --model M --prompt P --prompt-sha256 S --out LABELS``: (query_id,
  doc_id, relevant) rows of another judge as silver labels;
* ``judge sheet SHEET --sample SAMPLE --out LABELS``: a filled labelling sheet as gold labels;
* ``judge apply TRACES --labels LABELS --out OUT``: traces whose gold is the labels' (silver
  traces for a judge's labels, gold traces for people's).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_judge_parser"]


def _passages(args: argparse.Namespace) -> dict[str, str]:
    from .passages import read_passages

    return read_passages(args.corpus or (), args.prompts or ())


def _label(args: argparse.Namespace) -> int:
    from ..pipeline.download import default_cache_dir
    from ..trace_files import read_any
    from .run import judge_generator, judge_traces
    from .silver import write_judgements, write_labels

    traces = [t for path in args.traces for t in read_any(path)]
    passages = _passages(args)
    generator = judge_generator(args.model, gguf_file=args.gguf_file, device=args.device, cache_dir=args.model_cache,
                                dtype=args.dtype)
    cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir() / "judge"
    run = judge_traces(traces, passages, generator, cache, depth=args.depth, name=args.name)
    write_labels(run.rows, args.out)
    if args.pairs:
        write_judgements(run.verdicts, args.pairs)
    empty = sum(not row["gold"] for row in run.rows)
    print(f"judged {len(run.verdicts)} (question, passage) pairs with {run.judge.model} ({run.generated} generated, "
          f"{len(run.verdicts) - run.generated} from the cache; {run.unreadable} unreadable replies counted as not "
          f"relevant); {len(run.rows)} silver labels to {args.out}, {empty} with no relevant candidate "
          "(silver retrieval losses)", file=sys.stderr)
    return 0


def _judge_from(args: argparse.Namespace) -> Any:
    import hashlib

    from ..ingest.gold import JudgeInfo

    if (args.prompt_sha256 is None) == (args.prompt_file is None):
        raise ValueError("give the judge's prompt as --prompt-file FILE or its hash as --prompt-sha256 HEX")
    sha = args.prompt_sha256 or hashlib.sha256(Path(args.prompt_file).read_bytes()).hexdigest()
    return JudgeInfo(args.name, args.model, args.prompt, sha)


def _convert(args: argparse.Namespace) -> int:
    from ..trace_files import read_any
    from .silver import rows_from_relevance, write_labels

    queries = {t.query_id: t.query for t in read_any(args.traces)} if args.traces else None
    rows = rows_from_relevance(args.rows, _judge_from(args), queries)
    write_labels(rows, args.out)
    empty = sum(not row["gold"] for row in rows)
    print(f"{len(rows)} silver labels of {args.name} ({args.model}) to {args.out}, {empty} with no relevant "
          "candidate (silver retrieval losses)", file=sys.stderr)
    return 0


def _sheet(args: argparse.Namespace) -> int:
    from ..ppi.sample import read_sample
    from .sheet import read_sheet
    from .silver import write_labels

    sample = read_sample(args.sample)
    rows = read_sheet(args.sheet, sample)
    write_labels(rows, args.out)
    print(f"{len(rows)} gold labels (people's) of the sample drawn with seed {sample.seed} to {args.out}",
          file=sys.stderr)
    return 0


def _apply(args: argparse.Namespace) -> int:
    from ..ingest.gold import read_labels
    from ..trace import write_traces
    from ..trace_files import read_any
    from .apply import apply_labels

    labels = read_labels(args.labels)
    traces = list(read_any(args.traces))
    out = apply_labels(traces, labels, only_labelled=args.only_labelled, source=args.traces)
    write_traces(args.out, out, inputs=[args.traces, args.labels])
    judge = labels[0].judge if labels else None
    who = f"the judge {judge.name} ({judge.model})" if judge is not None else "people"
    left = f"; {len(traces) - len(out)} unlabelled trace(s) left out" if len(out) < len(traces) else ""
    print(f"{len(out)} traces labelled by {who} to {args.out}{left}", file=sys.stderr)
    return 0


def add_judge_parser(sub: Any) -> None:
    """The ``judge`` command and its four actions (registered by :mod:`ragstage.cli`)."""
    from ..pipeline.components import STANDIN
    from ..pipeline.generation import DEFAULT_GENERATOR, DTYPES

    judge = sub.add_parser("judge", help="silver labels from a judge; traces relabelled with labels")
    actions = judge.add_subparsers(dest="action", required=True)

    label = actions.add_parser("label", help="ask a model which candidates hold the evidence (one pair at a time)")
    label.add_argument("traces", nargs="+", metavar="TRACES", help="trace files (every pipeline of a run at once)")
    label.add_argument("--corpus", action="append", metavar="FILE",
                       help="JSON Lines of passages: _id (or id), text, optional title (a BEIR corpus.jsonl)")
    label.add_argument("--prompts", action="append", metavar="FILE",
                       help="a ragstage run's prompts.jsonl (only the passages that reached a prompt)")
    label.add_argument("--model", default=DEFAULT_GENERATOR,
                       help=f"Hugging Face model id or path; '{STANDIN}' = the offline Qwen2.5-Coder STAND-IN")
    label.add_argument("--gguf-file", default=None, help="GGUF file name inside the --model folder")
    label.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    label.add_argument("--dtype", choices=DTYPES, default=None,
                       help="load the judge in this precision (default: the checkpoint's own); the labels name it")
    label.add_argument("--depth", type=int, default=None,
                       help="judge only the first K candidates of each ranked list (default: all)")
    label.add_argument("--name", default="ragstage-relevance", help="the judge's name in the labels")
    label.add_argument("--cache-dir", default=None, help="the replies' cache (default: <ragstage cache>/judge)")
    label.add_argument("--model-cache", default=None, metavar="DIR",
                       help="where the stand-in's joined weights are kept (default: the ragstage cache)")
    label.add_argument("--out", required=True, metavar="LABELS", help="the silver labels file to write")
    label.add_argument("--pairs", metavar="FILE", help="also write the per-pair verdicts (JSON Lines)")
    label.set_defaults(func=_label)

    conv = actions.add_parser("convert", help="another judge's (query_id, doc_id, relevant) rows as silver labels")
    conv.add_argument("rows", metavar="ROWS", help=".csv with a header, or JSON Lines")
    conv.add_argument("--name", required=True, help="the judge (e.g. phoenix-relevance)")
    conv.add_argument("--model", required=True, help="its model id")
    conv.add_argument("--prompt", required=True, help="its prompt template's id")
    conv.add_argument("--prompt-file", default=None, help="the template's text (hashed into prompt_sha256)")
    conv.add_argument("--prompt-sha256", default=None, help="or the template's sha256")
    conv.add_argument("--traces", default=None, help="traces to take the questions' text from")
    conv.add_argument("--out", required=True, metavar="LABELS")
    conv.set_defaults(func=_convert)

    sheet = actions.add_parser("sheet", help="a filled labelling sheet as gold labels (checked against the sample)")
    sheet.add_argument("sheet", metavar="SHEET", help="the sheet `ragstage sample --sheet` wrote, filled in")
    sheet.add_argument("--sample", required=True, help="the sample file the sheet was written for")
    sheet.add_argument("--out", required=True, metavar="LABELS")
    sheet.set_defaults(func=_sheet)

    apply = actions.add_parser("apply", help="write traces whose gold is a labels file's")
    apply.add_argument("traces", metavar="TRACES")
    apply.add_argument("--labels", required=True, help="a labels file (a judge's, or people's)")
    apply.add_argument("--only-labelled", action="store_true",
                       help="leave out traces without a label (gold labels of a sample) instead of refusing")
    apply.add_argument("--out", required=True, metavar="OUT", help="the traces to write (.jsonl)")
    apply.set_defaults(func=_apply)
