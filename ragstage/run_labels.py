"""Who labelled a run's traces: people, or a judge (which one, on how many traces).

Silver traces carry ``meta["labels"] = {"by": "judge", "judge": ..., "model": ..., "prompt": ...,
"prompt_sha256": ...}``; gold traces carry no ``labels`` or ``{"by": "people"}``. ``compare``
says on stderr when a run's rates are a judge's (:func:`judge_note`), and the gate refuses to
decide on a judge's labels without a gold sample (:func:`require_gold`; with one, the verdict is
:mod:`ragstage.gate_ppi`'s).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator

from .judge.notice import judge_of
from .rows import printable
from .trace import Trace

__all__ = ["RunLabels", "LabelCounter", "run_labels", "judge_note", "require_gold"]


@dataclass(frozen=True)
class RunLabels:
    """Who labelled one run's traces: per judge (its name, model and prompt) how many traces, of ``traces``."""

    name: str
    traces: int
    judges: dict[str, int]

    @property
    def judged(self) -> int:
        return sum(self.judges.values())

    def describe(self) -> str:
        """One line, data escaped: ``FILE: labelled by a judge (name, model m, prompt p) on 1000 of 1000 traces``."""
        who = "; ".join(printable(j) if len(self.judges) == 1 else f"{printable(j)}: {k}"
                        for j, k in self.judges.items())
        return f"{printable(self.name)}: labelled by a judge ({who}) on {self.judged} of {self.traces} traces"


class LabelCounter:
    """Counts who labelled each trace passed to :meth:`add` (or streamed through :meth:`watch`, so
    that a command reading a large file need not hold its traces to say whose labels they carry).

    A ``labels`` entry that is neither a judge's nor people's is an error naming the file, the
    question and the field.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.traces = 0
        self.judges: Counter[str] = Counter()

    def add(self, trace: Trace) -> None:
        self.traces += 1
        labels = trace.meta.get("labels") if trace.meta else None
        if labels is None:
            return
        by = labels.get("by") if isinstance(labels, dict) else None
        if by not in ("judge", "people"):
            raise ValueError(f"{self.name}: query_id {printable(trace.query_id)!r}: field meta['labels']['by']: "
                             f"'judge' or 'people', got {printable(repr(by if isinstance(labels, dict) else labels))}")
        judge = judge_of(trace.meta)
        if judge is not None:
            self.judges[judge] += 1

    def watch(self, traces: Iterable[Trace]) -> Iterator[Trace]:
        """The traces, unchanged, each counted as it passes."""
        for trace in traces:
            self.add(trace)
            yield trace

    def result(self) -> RunLabels:
        return RunLabels(self.name, self.traces, dict(self.judges))


def run_labels(traces: Iterable[Trace], name: str) -> RunLabels:
    """Count the traces each judge labelled (``meta["labels"]``, the silver-labels contract)."""
    counter = LabelCounter(name)
    for trace in traces:
        counter.add(trace)
    return counter.result()


def judge_note(labels: RunLabels) -> str | None:
    """What ``compare`` says on stderr when a run's buckets are a judge's (None for people's labels)."""
    if not labels.judged:
        return None
    return (f"note: {labels.describe()}: its fixed, broken and p are the judge's, biased by its errors until "
            "corrected with a gold sample (compare --gate with --gold-sample-before/--sample-before and "
            "--gold-sample-after/--sample-after)")


def require_gold(labels: RunLabels, gold: object, sample: object, side: str) -> bool:
    """Whether this run needs its gold sample (a judge labelled it), after refusing what does not fit.

    A judge-labelled run without its gold traces and sample file is refused: a gate on a judge's
    labels would pass or fail on the judge's errors. A run labelled by people with a gold sample is
    refused too (its labels are already gold), and so is a run mixing the two.
    """
    if labels.judged and labels.judged < labels.traces:
        raise ValueError(f"{labels.describe()}; the other {labels.traces - labels.judged} by people: a run is "
                         "labelled one way (split it, or label all of it with the judge)")
    given = gold is not None or sample is not None
    if labels.judged and not (gold is not None and sample is not None):
        raise ValueError(f"{labels.describe()}: a gate on a judge's labels would pass or fail on the judge's "
                         f"errors; give this run its gold sample: --gold-sample-{side} GOLD_TRACES "
                         f"--sample-{side} SAMPLE (ragstage sample, then people's labels of the drawn questions)")
    if given and not labels.judged:
        raise ValueError(f"{printable(labels.name)} is labelled by people, not by a judge: --gold-sample-{side} "
                         f"and --sample-{side} are for judge-labelled traces")
    return bool(labels.judged)
