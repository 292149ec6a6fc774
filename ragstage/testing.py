"""The regression gate inside a pytest suite: ``assert_no_regression(before, after)``.

The same rules as ``ragstage compare BEFORE AFTER --gate`` (:func:`ragstage.gate.gate`):
a test fails when the change is significantly worse by the paired exact McNemar test,
when more than ``max_broken`` questions broke, or when a question newly lands in a
critical bucket or flag. The assertion message names the rule and lists the broken
questions, so the test report says what to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from .gate import GateResult, gate
from .trace import Trace

__all__ = ["assert_no_regression"]


def _traces(run: str | Path | Iterable[Trace]) -> tuple[list[Trace], str]:
    if isinstance(run, (str, Path)):
        from .trace_files import read_any

        return list(read_any(run)), str(run)
    return list(run), ""


def assert_no_regression(before: str | Path | Iterable[Trace], after: str | Path | Iterable[Trace], *,
                         alpha: float = 0.05, max_broken: int | None = None, critical: bool = True,
                         require: str = "any", intersect: bool = False) -> GateResult:
    """Raise ``AssertionError`` when ``after`` is worse than ``before``; return the gate's result otherwise.

    ``before`` and ``after`` are trace files (JSON Lines or Parquet) or iterables of
    :class:`~ragstage.trace.Trace`. Bad input raises the same errors as ``ragstage compare``.
    """
    a, a_name = _traces(before)
    b, b_name = _traces(after)
    result = gate(a, b, alpha=alpha, max_broken=max_broken, critical=critical, require=require,
                  intersect=intersect, names=(a_name or "before", b_name or "after"))
    if not result.passed:
        raise AssertionError(result.failure_message())
    return result
