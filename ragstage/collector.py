"""Pausing Python's cycle collector over a loop that makes and frees millions of small objects.

Counting traces and ingesting spans both decode millions of small acyclic objects (records,
span dicts) and free each soon after by reference counting. The cycle collector finds nothing
among them, but it runs every few hundred allocations and walks whatever the loop holds (a
Parquet batch turned into Python lists, the open requests of an export): run again and again
over a growing heap, it costs more than the diagnosis itself, and makes reading 100,000 spans
several times slower than reading 10,000 ten times.

The collector belongs to the process, not to a call: while a block runs, no thread of the
process collects cycles. So a pause covers the counting or reading loop only, and every public
function that pauses it says so in its docstring.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector off for the block, in the whole process (and back on after it, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
