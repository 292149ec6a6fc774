"""What a reader says about silver traces: whose labels the rates rest on, with counts.

A rate computed on a judge's labels is the judge's rate, biased by its errors; printed like any
other rate it would pass for the truth. ``attribute`` and the doctor therefore count
the traces whose ``meta["labels"]`` names a judge and say so (on stderr, so a table or JSON on
stdout stays as it was). Light on purpose: ``attribute`` imports it without numpy.
"""

from __future__ import annotations

import gzip
import mmap
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

import orjson

from ..errors import TraceError
from ..trace import MAX_LINE_BYTES
from ..trace_files import is_parquet

__all__ = ["judge_of", "silver_summary", "silver_note", "silver_in_files"]


def judge_of(meta: Any) -> str | None:
    """The judge a trace's ``meta["labels"]`` names, as ``"name, model m, prompt p"``; None for people's labels.

    The one description of a judge every command prints (the prompt is part of it: the same
    model with another prompt is another judge)."""
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if isinstance(labels, Mapping) and labels.get("by") == "judge":
        return f"{labels.get('judge')}, model {labels.get('model')}, prompt {labels.get('prompt')}"
    return None


def silver_summary(traces: Iterable[Any]) -> Counter[str]:
    """How many traces each judge labelled (:func:`judge_of` -> count); empty when none is silver.
    Takes :class:`~ragstage.trace.Trace` objects or their dicts."""
    counts: Counter[str] = Counter()
    for trace in traces:
        judge = judge_of(trace.get("meta") if isinstance(trace, Mapping) else trace.meta)
        if judge is not None:
            counts[judge] += 1
    return counts


def silver_in_files(paths: Iterable[str | Path]) -> tuple[Counter[str], int]:
    """:func:`silver_summary` over trace files, and how many traces they hold.

    The scan must never change what the command reads, nor cost it much: only regular files are
    scanned (a pipe or a device would be consumed, so it is passed over: the command reads it as
    it is, and no note is printed for it); a file that holds no ``"judge"`` at all (every silver
    trace's meta does) is passed over after one byte search; otherwise a JSON Lines line is
    decoded only when it holds ``"judge"``, no line is held past the readers' own length limit,
    and of Parquet only the ``meta`` column is read. A file or line that cannot be read is passed
    over here: the command's own reader reports it, by file and line."""
    counts: Counter[str] = Counter()
    total = 0
    for path in paths:
        try:
            for file in _regular_files(Path(path)):
                found, lines = (_parquet_judges if is_parquet(file) else _json_lines_judges)(file)
                counts.update(found)
                total += lines
        except (OSError, EOFError, ValueError, TraceError, AttributeError, ImportError):
            continue
    return counts, total


def _regular_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(f for f in path.rglob("*.parquet") if f.is_file())
    return [path] if path.is_file() else []


def _json_lines_judges(path: Path) -> tuple[Counter[str], int]:
    counts: Counter[str] = Counter()
    if not str(path).endswith(".gz") and path.stat().st_size:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as whole:
            if whole.find(b'"judge"') < 0:
                return counts, 0  # no silver trace: the total is not needed
    total = 0
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as handle:
        while line := handle.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                break  # the command's reader refuses this line, naming it
            if not line.strip():
                continue
            total += 1
            if b'"judge"' in line:
                judge = judge_of(orjson.loads(line).get("meta"))
                if judge is not None:
                    counts[judge] += 1
    return counts, total


def _parquet_judges(path: Path) -> tuple[Counter[str], int]:
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    counts: Counter[str] = Counter()
    if "meta" in file.schema_arrow.names:
        for text in file.read(columns=["meta"]).column("meta").to_pylist():
            if text and '"judge"' in text:
                judge = judge_of(orjson.loads(text))
                if judge is not None:
                    counts[judge] += 1
    return counts, file.metadata.num_rows


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
