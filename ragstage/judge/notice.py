"""What a reader says about silver traces: whose labels the rates rest on, with counts.

A rate computed on a judge's labels is the judge's rate, biased by its errors; printed like any
other rate it would pass for the truth. ``attribute``, ``compare`` and the doctor therefore count
the traces whose ``meta["labels"]`` names a judge and say so (on stderr, so a table or JSON on
stdout stays as it was). Light on purpose: ``attribute`` imports it without numpy.
"""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

import orjson

__all__ = ["silver_summary", "silver_note", "silver_in_files"]


def _judge_of(meta: Any) -> str | None:
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if isinstance(labels, Mapping) and labels.get("by") == "judge":
        return f"{labels.get('judge')} ({labels.get('model')})"
    return None


def silver_summary(traces: Iterable[Any]) -> Counter[str]:
    """How many traces each judge labelled (``"name (model)"`` -> count); empty when none is silver.
    Takes :class:`~ragstage.trace.Trace` objects or their dicts."""
    counts: Counter[str] = Counter()
    for trace in traces:
        judge = _judge_of(trace.get("meta") if isinstance(trace, Mapping) else trace.meta)
        if judge is not None:
            counts[judge] += 1
    return counts


def silver_in_files(paths: Iterable[str | Path]) -> tuple[Counter[str], int]:
    """:func:`silver_summary` over trace files, and how many traces they hold. A JSON Lines line is
    decoded only when it holds ``"judge"`` (every silver trace's meta does), so the scan costs a
    fraction of reading the traces; Parquet is read through the trace reader. A file or line that
    cannot be read is passed over here: the command's own reader reports it, by file and line."""
    from ..errors import TraceError
    from ..formats import is_parquet, read_any

    counts: Counter[str] = Counter()
    total = 0
    for path in paths:
        try:
            if is_parquet(path):
                traces = list(read_any(path))
                counts.update(silver_summary(traces))
                total += len(traces)
                continue
            opener = gzip.open if str(path).endswith(".gz") else open
            with opener(path, "rb") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    total += 1
                    if b'"judge"' in line:
                        judge = _judge_of(orjson.loads(line).get("meta"))
                        if judge is not None:
                            counts[judge] += 1
        except (OSError, EOFError, ValueError, TraceError, AttributeError):
            continue
    return counts, total


def silver_note(counts: Mapping[str, int], total: int, corrected: bool = False) -> str | None:
    """One sentence naming the judges and how many of ``total`` traces they labelled; None when none.
    ``corrected``: a gold sample is given, so the judge's rates are shown only beside the estimate."""
    if not counts:
        return None
    judges = "; ".join(f"{name}: {n}" for name, n in sorted(counts.items()))
    tail = ("the judge-only rates are the judge's, biased by its errors; the estimate corrects them with the gold "
            "sample" if corrected else "their rates are the judge's, biased by its errors: correct them with a gold "
            "sample (ragstage sample, then attribute --gold-sample)")
    return f"SILVER labels: {sum(counts.values())} of {total} traces were labelled by a judge ({judges}); {tail}"
