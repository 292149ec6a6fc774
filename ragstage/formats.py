"""One entry point per direction for trace files, whatever their format: JSON Lines or Parquet.

The command line reads a ``.jsonl``/``.jsonl.gz`` file or a Parquet file or folder through
:func:`read_any`, and ``ragstage convert`` writes either through :func:`convert`. pyarrow is
imported only when a Parquet path is met, so JSON Lines users never load it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from .atomic import check_output
from .streaming import is_parquet
from .trace import Trace, TraceError, read_traces, write_traces

__all__ = ["read_any", "convert"]


def read_any(path: str | Path) -> Iterator[Trace]:
    """Stream :class:`~ragstage.trace.Trace` objects from JSON Lines or Parquet, checked the same way."""
    if is_parquet(path):
        from .parquet import read_parquet

        return read_parquet(path)
    return read_traces(path)


def convert(source: str | Path, target: str | Path) -> int:
    """Write the traces of ``source`` to ``target``, the format chosen by ``target``'s name; returns the count.

    ``.parquet``: the Arrow schema :data:`ragstage.parquet.SCHEMA`; ``.jsonl`` or ``.jsonl.gz``:
    JSON Lines. Every trace is validated on the way (the same errors as ``attribute``), and
    what is written is its normalised form, so a round trip gives the same traces back. The
    target is written whole or not at all: on an error it keeps what it held before.
    """
    target = Path(target)
    inputs = _input_files(source)
    check_output(target, inputs)  # a folder, or the input under any name, is refused before reading
    if target.suffix == ".parquet":
        from .parquet import write_parquet

        return write_parquet(target, read_any(source), inputs=inputs)
    if target.name.endswith((".jsonl", ".jsonl.gz")):
        return write_traces(target, read_any(source), inputs=inputs)
    raise TraceError("the output name must end in .parquet, .jsonl or .jsonl.gz", path=str(target))


def _input_files(source: str | Path) -> list[Path]:
    """Every file ``source`` reads: itself, or the Parquet files of a folder."""
    if is_parquet(source) and Path(source).is_dir():
        from .parquet import parquet_files

        return [Path(source), *parquet_files(source)]
    return [Path(source)]
