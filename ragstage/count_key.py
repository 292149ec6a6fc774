"""The count key: what counting keeps of one trace, packed into one integer.

Counting keeps, per group, a row of :data:`CODES` counts; a trace adds one to the count of
its code, :func:`count_code` of (its bucket's index in :data:`~ragstage.rules.BUCKETS`, its flags
as a mask of :data:`~ragstage.rules.FLAG_BITS`, whether ``query_ok`` is set, whether a
``reranked`` list is logged). Every counter packs the key this way: the Python counting loops
(:mod:`ragstage.python_rules`, which add the parts of the code, since it is a sum of one term
per part), the Arrow one (:func:`ragstage.arrow_rules.count_batch`, on whole columns), and
:func:`ragstage.tally.tally_of_rows` unpacks it with :func:`split_code`.
"""

from __future__ import annotations

from typing import Any

from .rules import BUCKETS, FLAG_COMBINATIONS

__all__ = ["CODES", "count_code", "split_code"]

_MASKS = len(FLAG_COMBINATIONS)


def count_code(bucket: Any, mask: Any, judged: Any, reranked: Any) -> Any:
    """The code of a (bucket index, flag mask, query judged, reranked) key: integers (or booleans),
    or numpy arrays of them. A sum of one term per part: ``count_code(b, m, j, r) ==
    count_code(b, 0, 0, 0) + count_code(0, m, 0, 0) + count_code(0, 0, j, 0) + count_code(0, 0, 0, r)``."""
    return ((bucket * _MASKS + mask) * 2 + judged) * 2 + reranked


#: The number of codes: the length of a group's row of counts.
CODES: int = count_code(len(BUCKETS), 0, 0, 0)


def split_code(code: int) -> tuple[int, int, bool, bool]:
    """``(bucket index, flag mask, query judged, reranked)`` of a code: :func:`count_code` undone."""
    rest, reranked = divmod(code, 2)
    rest, judged = divmod(rest, 2)
    bucket, mask = divmod(rest, _MASKS)
    return bucket, mask, bool(judged), bool(reranked)
