"""Silver traces: run traces whose gold is replaced by a labels file's, marked with who labelled them.

The same function turns a run's traces into silver traces (a judge's labels) and into gold traces
(people's labels, such as a filled labelling sheet read back): each trace's ``gold`` becomes its
label's targets, ``answerable`` and ``correct`` the label's, and ``meta["labels"]`` records the
judge (``{"by": "judge", ...}``) or ``{"by": "people"}``. ``correct`` is reset because a run judged
its answers against the old gold: left as it was, the old gold would leak into the new buckets.
With ``correct`` unset, the exact rule decides an answer that names ids (right when a named id is
in the new gold); a free-text answer stays unjudged unless the label says ``correct``.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..errors import TraceError
from ..ingest.gold import Label, LabelIndex
from ..trace import Trace

__all__ = ["apply_labels", "labels_meta"]


def labels_meta(label: Label) -> dict[str, str]:
    """The value of ``meta["labels"]`` for a trace labelled by ``label``."""
    return label.judge.meta() if label.judge is not None else {"by": "people"}


def _relabelled(trace: Trace, label: Label) -> Trace:
    if label.gold_spans or label.gold_text:
        raise TraceError("gold given as spans or quoted text is resolved against the chunks by "
                         "`ragstage ingest --labels`; here labels must name candidate ids in 'gold'",
                         path=label.path, line=label.line, field="gold_spans" if label.gold_spans else "gold_text")
    if label.query and trace.query and " ".join(label.query.split()) != " ".join(trace.query.split()):
        raise TraceError(f"the label's query differs from the trace's for query_id {trace.query_id!r} "
                         f"({label.query[:40]!r} vs {trace.query[:40]!r})", path=label.path, line=label.line,
                         field="query")
    changes: dict[str, Any] = {"gold": list(label.targets), "correct": label.correct,
                               "answerable": True if label.answerable is None else label.answerable,
                               "meta": {**trace.meta, "labels": labels_meta(label)}}
    if label.refused is not None:
        changes["refused"] = label.refused
    return trace.replace(**changes)


def apply_labels(traces: Iterable[Trace], labels: Sequence[Label], *, only_labelled: bool = False,
                 source: str = "traces") -> list[Trace]:
    """``traces`` with the labels' gold (see the module docstring), matched by query id (else by query text).

    Every trace needs a label (an error names the first without one and the count; with
    ``only_labelled`` such traces are left out instead, for gold labels of a sample) and every
    label must match a trace (an error names its file and line): nothing is silently dropped.
    """
    index = LabelIndex(labels)
    out, unlabelled = [], []
    for trace in traces:
        label = index.match(trace.query_id, trace.query)
        if label is None:
            unlabelled.append(trace.query_id)
            continue
        out.append(_relabelled(trace, label))
    if unlabelled and not only_labelled:
        raise TraceError(f"{len(unlabelled)} trace(s) have no label (first: query_id {unlabelled[0]!r}); "
                         "label every request, or keep only the labelled ones (--only-labelled)",
                         path=source, field="query_id")
    unmatched = index.unmatched()
    if unmatched:
        raise TraceError(f"{len(unmatched)} label(s) match no trace (first: query_id "
                         f"{unmatched[0].query_id!r})", path=unmatched[0].path, line=unmatched[0].line,
                         field="query_id")
    return out
