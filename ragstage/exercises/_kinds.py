"""The kind of thing an exercise asks the reader to pass, and the type mistakes each one names.

A reader who passes ``"prompt assembly"`` (with a space), ``"897"`` (a string) or a table
turned into a dict of lists has made a typing slip, not a reasoning error: a hint about the
reasoning would send them looking in the wrong place. So before any hint, the self-check
compares the result with the kind the exercise asks for and, when they differ, names the
slip alone (with the bucket names, since listing them gives no answer away).
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["KINDS", "type_problem"]

#: What each kind is, in the words a hint uses.
KINDS: dict[str, str] = {
    "bucket": "a bucket name",
    "number": "a number",
    "table": "a table (a pandas DataFrame)",
    "traces": "a list of traces",
    "ids": "a list of query ids",
}


def _buckets() -> tuple[str, ...]:
    from ..attribution import BUCKETS

    return BUCKETS


def _a(result: Any) -> str:
    """The result's type in a few words: 'a Counter', 'a dict of lists', 'a str'."""
    if isinstance(result, Counter):
        return "a Counter"
    if isinstance(result, Mapping) and result and all(isinstance(v, list) for v in result.values()):
        return "a dict of lists"
    name = type(result).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Real):
        return True
    return hasattr(value, "item") and getattr(value, "shape", None) == () and _is_number(value.item())


def type_problem(kind: str, result: Any) -> str | None:
    """The slip in ``result`` for an exercise that asks for ``kind``, or None when it has that kind."""
    if not kind:
        return None
    if kind not in KINDS:
        raise ValueError(f"unknown result kind {kind!r}: one of {sorted(KINDS)}")
    if kind == "bucket":
        if not isinstance(result, str):
            return f"your result is {_a(result)}, not a bucket name: pass the name as a string"
        if result not in _buckets():
            return f"{result!r} is not a bucket name: the buckets are {', '.join(_buckets())}"
        return None
    if kind == "number":
        if isinstance(result, str):
            return f"{result!r} is a string, not a number: pass the number itself, without quotes"
        return None if _is_number(result) else f"your result is {_a(result)}, not a number"
    if kind == "table":
        if hasattr(result, "columns") and hasattr(result, "iloc"):
            return None
        hint = "pass the DataFrame itself, not .to_dict(...)" if isinstance(result, Mapping) else "pass the table"
        return f"your result is {_a(result)}, not a table: {hint}"
    if kind == "traces":
        if isinstance(result, Mapping):
            return f"your result is {_a(result)}, not the traces: pass the list of traces itself, not counts"
        items = list(result) if isinstance(result, (list, tuple)) else None
        if items is None or not all(hasattr(t, "query_id") for t in items):
            return f"your result is {_a(result)}, not a list of traces"
        return None
    if isinstance(result, (str, bytes)) or isinstance(result, Mapping) or not hasattr(result, "__iter__"):
        return f"your result is {_a(result)}, not a list of query ids: pass them in a list, e.g. ['7', '8']"
    return None
