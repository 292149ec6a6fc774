"""What a reader says about silver traces: whose labels the rates rest on, with counts.

A rate computed on a judge's labels is the judge's rate, biased by its errors; printed like any
other rate it would pass for the truth. ``attribute`` and the doctor therefore count
the traces whose ``meta["labels"]`` names a judge and say so (on stderr, so a table or JSON on
stdout stays as it was). Light on purpose: ``attribute`` imports it without numpy.
"""

from __future__ import annotations

import gzip
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

    The scan must never change what the command reads, nor cost it much. Only regular files are
    scanned: a pipe or a device would be consumed, so it is passed over (the command reads it as
    it is, and no note is printed for it). A file is labelled one way (``ragstage judge apply``
    writes every trace of a run with the judge's labels), so its first trace decides: a file whose
    first trace carries people's labels costs one line; one whose first trace is a judge's is
    counted in full (a JSON Lines line decoded only when it holds ``"judge"``, no line held past the
    readers' length limit; of Parquet, only the ``meta`` column). ``compare --gate`` counts every
    trace and refuses a run labelled both ways. A file or line that cannot be read is passed over
    here: the command's own reader reports it, by file and line."""
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
            if total == 1 and not counts:
                break  # the first trace is people's: so is the file
    return counts, total


def _parquet_judges(path: Path) -> tuple[Counter[str], int]:
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    counts: Counter[str] = Counter()
    if "meta" not in file.schema_arrow.names or not file.metadata.num_row_groups:
        return counts, file.metadata.num_rows
    first = file.read_row_group(0, columns=["meta"]).column("meta")[0].as_py()
    if first and '"judge"' in first and judge_of(orjson.loads(first)) is not None:
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
