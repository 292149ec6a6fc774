"""Read a run folder back: every pipeline's traces, its receipt, and whether a stand-in made it.

A run folder holds one sub-folder per pipeline, as ``ragstage run`` and chapter 5 write them
(:mod:`ragstage.runs.layout`); each run is labelled as :mod:`ragstage.runs.labels` says
(``minilm+ce``, ``minilm+ce/revised``). A folder of trace files logged by some other system
(no receipts) is read too: each file's traces are grouped by their own ``pipeline`` field.
(Stage caches live outside the run folder, so every other ``.jsonl`` here is a trace file.)

Reading a run needs no model and imports no torch: chapter 6 opens a run in a second.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..attribution import diagnose
from ..errors import TraceError
from ..trace import Trace, read_traces
from .labels import parse_label
from .layout import RunFiles, find_runs, trace_files

__all__ = ["RunSet", "load_run", "check_run", "diff_runs"]


@dataclass
class RunSet:
    """The traces of every pipeline (and prompt version) found in a run folder.

    ``traces`` maps a label (the pipeline name, plus ``/<prompt version>`` for a
    generation-only re-run) to its traces, each relabelled so that ``trace.pipeline`` is that
    label: the report functions can then group by pipeline across prompt versions. ``files``
    says where each run with a receipt lives (a re-run or an oracle starts from there).
    """

    root: Path
    traces: dict[str, list[Trace]] = field(default_factory=dict)
    receipts: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, RunFiles] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return list(self.traces)

    def all_traces(self) -> list[Trace]:
        return [t for ts in self.traces.values() for t in ts]

    def stand_ins(self) -> dict[str, list[str]]:
        """For each label, the stand-ins its receipt names (empty: hub models or no receipt)."""
        return {label: list(self.receipts.get(label, {}).get("stand_ins", [])) for label in self.traces}

    @property
    def uses_stand_ins(self) -> bool:
        return any(self.stand_ins().values())


def _label(receipt: dict[str, Any], files: RunFiles) -> str:
    label = parse_label(str(receipt.get("pipeline", "default")))
    return str(label.with_version(files.suffix) if files.suffix else label)


def load_run(root: str | Path) -> RunSet:
    """Load every pipeline of a run folder (the layout is :mod:`ragstage.runs.layout`)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no run folder at {root}")
    found = RunSet(root)
    with_receipt: set[Path] = set()
    for files in find_runs(root):
        if not files.traces.exists():
            raise TraceError(f"receipt without its traces file {files.traces.name}", path=str(files.receipt))
        receipt = files.read_receipt()
        label = _label(receipt, files)
        if label in found.traces:
            raise TraceError(f"a second run labelled {label!r}", path=str(files.receipt))
        found.receipts[label] = receipt
        found.files[label] = files
        found.traces[label] = [t.replace(pipeline=label) for t in read_traces(files.traces)]
        with_receipt.add(files.traces.resolve())
    # Trace files logged elsewhere, with no receipt: group by their own pipeline field.
    loose: dict[str, list[Trace]] = defaultdict(list)
    for path in trace_files(root):
        if path.resolve() in with_receipt:
            continue
        for trace in read_traces(path):
            loose[trace.pipeline].append(trace)
    for label, traces in loose.items():
        if label in found.traces:
            raise TraceError(f"pipeline {label!r} appears both in a run with a receipt and in a loose file",
                             path=str(root))
        found.traces[label] = traces
    if not found.traces:
        raise FileNotFoundError(f"no traces under {root} (expected */traces.jsonl with receipt.json, or *.jsonl)")
    return found


def check_run(run: RunSet, query_ids: Iterable[str] | None = None) -> list[str]:
    """The invariants every run must keep, as a list of violations (empty: all hold).

    One trace per question per pipeline (exactly the questions asked, when ``query_ids`` is
    given); every id in ``prompt`` was reranked, and every reranked id was retrieved: a stage
    can only pass on what it received. A violation means the logging, not the model, is
    broken, and no attribution built on that run can be trusted.
    """
    expected = None if query_ids is None else set(query_ids)
    problems = []
    for label, traces in run.traces.items():
        ids = [t.query_id for t in traces]
        if len(ids) != len(set(ids)):
            problems.append(f"{label}: {len(ids) - len(set(ids))} questions have more than one trace")
        if expected is not None and set(ids) != expected:
            problems.append(f"{label}: {len(expected - set(ids))} questions missing, "
                            f"{len(set(ids) - expected)} not asked")
        for t in traces:
            upstream = set(t.retrieved) if t.reranked is None else set(t.reranked)
            if t.reranked is not None and not set(t.reranked) <= set(t.retrieved):
                problems.append(f"{label} {t.query_id}: reranked ids that were never retrieved")
            if t.prompt is not None and not set(t.prompt) <= upstream:
                problems.append(f"{label} {t.query_id}: prompt ids that did not come out of ranking")
    return problems


def diff_runs(a: RunSet, b: RunSet) -> list[str]:
    """Where two runs of the same configuration disagree: labels, questions, answers, buckets.

    Timestamps, wall times and cache paths are expected to differ and are ignored; what a
    reader acts on (the ranked ids, the prompt, the answer and its bucket) must not.
    """
    differences = []
    if set(a.traces) != set(b.traces):
        differences.append(f"pipelines differ: {sorted(set(a.traces) ^ set(b.traces))}")
    for label in sorted(set(a.traces) & set(b.traces)):
        left = {t.query_id: t for t in a.traces[label]}
        right = {t.query_id: t for t in b.traces[label]}
        if set(left) != set(right):
            differences.append(f"{label}: questions differ: {sorted(set(left) ^ set(right))[:5]}")
        for qid in sorted(set(left) & set(right)):
            x, y = left[qid], right[qid]
            for name in ("retrieved", "reranked", "prompt", "answer", "error"):
                if getattr(x, name) != getattr(y, name):
                    differences.append(f"{label} {qid}: {name} differs")
            if diagnose(x).stage != diagnose(y).stage:
                differences.append(f"{label} {qid}: bucket {diagnose(x).stage} against {diagnose(y).stage}")
    return differences
