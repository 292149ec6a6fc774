"""Counting a trace file in parts, one worker process per part, and putting the parts' counts together.

Both counting readers (:func:`ragstage.streaming.count_jsonl`, line-aligned byte ranges of a
JSON Lines file; :func:`ragstage.parquet.count_parquet`, row groups of a Parquet file or folder)
hand :func:`count_parts` a function that counts one part into a :class:`PartCount`. The driver
runs the parts (in this process when there is one), raises the first part's error with its
position in the whole file, checks the keys' digests for a duplicate (:mod:`ragstage.tally`) and
adds the counts up. The process pool is created here and nowhere else.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from .errors import TraceError
from .tally import Tally, find_duplicate, pair_digests, repeated_digests, tally_of_rows
from .workers import die_with_parent

__all__ = ["PartCount", "count_parts"]


@dataclass
class PartCount:
    """What one part's worker learned: its counts per group (rows of count codes, see
    :mod:`ragstage.count_key`), its keys' digests, and the error that stopped it.

    ``pairs`` holds digests as CRC-32 and Adler-32 side by side (``array("I")`` bytes, as the Python
    counting loops keep them), ``digests`` as int64 (``array("q")`` bytes, as the Arrow one gives
    them). ``positions`` is how many lines the part read: its error's line is counted from the
    part's start, and the driver adds the lines of the parts before it (a Parquet part numbers its
    rows within their file, and reads none here).
    """

    rows: dict[str, list[int]] = field(default_factory=dict)
    pairs: bytes = b""
    digests: bytes = b""
    error: TraceError | None = None
    positions: int = 0


def count_parts(count_part: Callable[..., PartCount], parts: Sequence[tuple], path: str, unit: str,
                keys: Callable[[], Iterable[tuple[str, int, str, str]]]) -> Tally:
    """Run ``count_part(*part)`` for every part (on a worker process each, when there are several)
    and return the sum of their counts.

    Raises the first part's error, located in the file (``path``, ``unit``: "line" or "row"), or a
    duplicate key's, found among ``keys()`` (``(path, position, query_id, pipeline)``) when some
    digest repeats.
    """
    if len(parts) == 1:
        counts = [count_part(*parts[0])]
    else:
        with ProcessPoolExecutor(max_workers=len(parts), initializer=die_with_parent) as pool:
            futures = [pool.submit(count_part, *part) for part in parts]
            # Every worker has started by now (submit starts one per part); numpy, which the duplicate
            # check needs once they are done, loads while they count instead of after.
            import numpy  # noqa: F401
            counts = [f.result() for f in futures]
    offset = 0
    for part in counts:
        if part.error is not None:
            error = part.error
            line = None if error.line is None else offset + error.line
            raise TraceError(error.detail, path=error.path or path, line=line, field=error.field, unit=unit)
        offset += part.positions
    suspects = repeated_digests([*(pair_digests(c.pairs) for c in counts), *(c.digests for c in counts)])
    if suspects:
        duplicate = find_duplicate(keys(), suspects, unit)
        if duplicate is not None:
            message, where, position = duplicate
            raise TraceError(message, path=where, line=position, field="query_id", unit=unit)
    return tally_of_rows(_added(c.rows for c in counts))


def _added(parts: Iterable[dict[str, list[int]]]) -> dict[str, list[int]]:
    """The rows of counts of several parts added up, the groups in the order first met."""
    total: dict[str, list[int]] = {}
    for rows in parts:
        for group, row in rows.items():
            mine = total.get(group)
            total[group] = list(row) if mine is None else [a + b for a, b in zip(mine, row)]
    return total
