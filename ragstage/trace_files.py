"""The one place that picks a trace file's format: JSON Lines or Parquet, for reading, counting and writing.

A path is Parquet when it ends in ``.parquet`` or is a folder (a Parquet dataset: its
``.parquet`` files); anything else is JSON Lines (``.jsonl``, or ``.jsonl.gz``). The command
line reads traces through :func:`read_any`, counts them through :func:`count_files` and
writes them through :func:`convert`. pyarrow is imported only when a Parquet path is met, so
JSON Lines users never load it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from .atomic import check_output
from .errors import TraceError
from .streaming import count_jsonl
from .tally import Tally
from .trace import Trace, read_traces, write_traces

__all__ = ["is_parquet", "read_any", "count_file", "count_files", "convert", "input_files"]


def is_parquet(path: str | Path) -> bool:
    """A ``.parquet`` file, or a folder (a Parquet dataset: its ``.parquet`` files)."""
    path = Path(path)
    return path.suffix == ".parquet" or path.is_dir()


def read_any(path: str | Path) -> Iterator[Trace]:
    """Stream :class:`~ragstage.trace.Trace` objects from JSON Lines or Parquet, checked the same way."""
    if is_parquet(path):
        from .parquet import read_parquet

        return read_parquet(path)
    return read_traces(path)


def count_file(path: str | Path, by: str | None = "pipeline", require: str = "any",
               workers: int | None = None) -> Tally:
    """Bucket and flag counts per group of one trace file (or Parquet folder), on ``workers`` processes."""
    if is_parquet(path):
        from .parquet import count_parquet

        return count_parquet(path, by, require, workers)
    return count_jsonl(path, by, require, workers)


def count_files(paths: Iterable[str | Path], by: str | None = "pipeline", require: str = "any",
                workers: int | None = None) -> Tally:
    """Bucket and flag counts per group over several files (duplicates are checked within each file)."""
    total = Tally()
    for path in paths:
        total.update(count_file(path, by, require, workers))
    return total


def convert(source: str | Path, target: str | Path) -> int:
    """Write the traces of ``source`` to ``target``, the format chosen by ``target``'s name; returns the count.

    ``.parquet``: the Arrow schema :data:`ragstage.parquet.SCHEMA`; ``.jsonl`` or ``.jsonl.gz``:
    JSON Lines. Every trace is validated on the way (the same errors as ``attribute``), and
    what is written is its normalised form, so a round trip gives the same traces back. The
    target is written whole or not at all: on an error it keeps what it held before.
    """
    target = Path(target)
    inputs = input_files(source)
    check_output(target, inputs)  # a folder, or the input under any name, is refused before reading
    if target.suffix == ".parquet":
        from .parquet import write_parquet

        return write_parquet(target, read_any(source), inputs=inputs)
    if target.name.endswith((".jsonl", ".jsonl.gz")):
        return write_traces(target, read_any(source), inputs=inputs)
    raise TraceError("the output name must end in .parquet, .jsonl or .jsonl.gz", path=str(target))


def input_files(source: str | Path) -> list[Path]:
    """Every file ``source`` reads: itself, or the folder and its Parquet files (what an output
    must not be)."""
    if is_parquet(source) and Path(source).is_dir():
        from .parquet import parquet_files

        return [Path(source), *parquet_files(source)]
    return [Path(source)]
