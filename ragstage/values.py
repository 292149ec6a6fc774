"""How each kind of trace value is checked: ids, ranked lists, flags, text, ``meta``, ``error``.

Each check takes a decoded value and the field's name, and returns the value in its normalised
form or raises :class:`~ragstage.errors.TraceError` naming the field. :mod:`ragstage.fields`
declares which check each field runs.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, NamedTuple, Sequence

from .errors import TraceError

__all__ = ["META_DEPTH", "RankedColumns", "as_bool", "as_bools", "as_error", "as_id", "as_ids", "as_meta",
           "as_prompt_source", "as_ranked", "as_str", "field_error", "meta_fault", "wide_float_in"]


def field_error(msg: str, name: str) -> TraceError:
    """The error for a bad value of the field ``name`` (the reader adds the file and the line)."""
    return TraceError(msg, field=name)


def as_id(value: Any, name: str) -> str:
    # Ids are strings; integer ids (common in logs and in BEIR corpora) are read as their
    # decimal text. Booleans are ints in Python, so they are excluded explicitly.
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise field_error(f"ids must be strings or integers, got {type(value).__name__} {value!r}", name)


def as_ids(value: Any, name: str) -> list[str]:
    if type(value) is list or type(value) is tuple:
        return [as_id(v, name) for v in value]
    raise field_error(f"expected a list of ids, got {type(value).__name__} {value!r:.60}", name)


_RANKED_KEYS = frozenset({"id", "score", "section"})
_PROMPT_SOURCES = ("logged", "recovered")


def _ranked_entry(item_id: Any, score: Any, section: Any, name: str) -> tuple[str, float | None, str | None]:
    """One ranked entry's checks: a number (or nothing) for a score, a string (or nothing) for a
    section, an id. An entry may name its section without a score: both are kept as logged."""
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise field_error(f"score must be a number, got {score!r}", name)
        if not _finite(score):  # JSON has no NaN or infinity: such a score could not be read back
            raise field_error(f"score must be a finite number, got {score!r}", name)
        score = float(score)
    if section is not None and type(section) is not str:
        raise field_error(f"section must be a string, got {section!r:.40}", name)
    return as_id(item_id, name), score, section


def _finite(score: int | float) -> bool:
    try:
        return math.isfinite(score)
    except OverflowError:  # an integer beyond any float
        return False


def _ranked(entries: Iterable[tuple[str, float | None, str | None]]
            ) -> tuple[list[str], list[float | None] | None, list[str | None] | None]:
    """Columns of checked entries; scores (sections) None when no entry has one."""
    ids, scores, sections = zip(*entries) if entries else ((), (), ())
    return (list(ids), (list(scores) if any(s is not None for s in scores) else None),
            (list(sections) if any(s is not None for s in sections) else None))


def _ranked_entries_of(value: Any, name: str
               ) -> tuple[list[str], list[float] | None, list[str | None] | None]:
    """A ranked list of ids, or of ``{"id", "score"[, "section"]}`` objects (not a mix).

    Returns ``(ids, scores, sections)``; scores are None for a plain id list, sections None
    unless some entry names one (the minimum log per request of *Diagnosing RAG Failure
    Modes*: id, score and section of every retrieved passage).
    """
    if not isinstance(value, (list, tuple)):
        raise field_error(f"expected a ranked list of ids, got {type(value).__name__} {value!r:.60}", name)
    if value and isinstance(value[0], dict):
        entries = []
        for item in value:
            if not isinstance(item, dict) or "id" not in item:
                raise field_error(f"each entry must be an {{\"id\", \"score\"}} object, got {item!r:.60}", name)
            extra = set(item) - _RANKED_KEYS
            if extra:
                raise field_error(f"unknown key(s) {sorted(extra)} in a ranked entry (known: id, score, section)", name)
            entries.append(_ranked_entry(item["id"], item.get("score"), item.get("section"), name))
        return _ranked(entries)
    return as_ids(value, name), None, None


class RankedColumns(NamedTuple):
    """A ranked list given as columns (ids, scores, sections), as a Parquet row or a Trace holds it."""

    ids: Sequence[Any]
    scores: Sequence[Any]
    sections: Sequence[Any] | None

    def check(self, name: str) -> tuple[list[str], list[float] | None, list[str | None] | None]:
        if not self.ids:  # as an empty list of entries reads: no scores
            return [], None, None
        plain = _plain_columns(self.ids, self.scores, self.sections)
        if plain is not None:
            return plain
        missing = (None,) * len(self.ids)
        scores = self.scores if self.scores is not None else missing
        sections = self.sections if self.sections is not None else missing
        return _ranked([_ranked_entry(*entry, name) for entry in zip(self.ids, scores, sections)])


def _plain_columns(ids: Sequence[Any], scores: Sequence[Any] | None, sections: Sequence[Any] | None
                   ) -> tuple[list[str], list[float | None] | None, list[str | None] | None] | None:
    """What checking each entry gives, when no entry needs converting or could fail: string ids,
    float scores (finite: their sum is) or none, string sections or none; None otherwise (then each
    entry is checked, and converted or named in the error). The columns of a million traces."""
    if any(type(i) is not str for i in ids):
        return None
    given = None
    if scores is not None:
        given = [s for s in scores if s is not None]
        if any(type(s) is not float for s in given) or not math.isfinite(sum(given)):
            return None
    if sections is not None and any(s is not None and type(s) is not str for s in sections):
        return None
    return (list(ids), list(scores) if given else None,
            list(sections) if sections is not None and any(s is not None for s in sections) else None)


def as_ranked(value: Any, name: str) -> Any:
    return value.check(name) if type(value) is RankedColumns else _ranked_entries_of(value, name)


def as_prompt_source(value: Any, name: str) -> str:
    if value not in _PROMPT_SOURCES:
        raise field_error(f"expected one of {', '.join(_PROMPT_SOURCES)}, got {value!r:.40}", name)
    return value


def as_str(value: Any, name: str) -> str:
    if type(value) is not str:
        raise field_error(f"expected a string, got {type(value).__name__}", name)
    return value


def as_bool(value: Any, name: str) -> bool:
    if type(value) is not bool:
        raise field_error(f"expected true or false, got {value!r:.40}", name)
    return value


def as_bools(value: Any, name: str) -> list[bool]:
    if not isinstance(value, (list, tuple)) or not all(type(v) is bool for v in value):
        raise field_error(f"expected a list of true/false claim labels, got {value!r:.60}", name)
    return list(value)


#: How deeply ``meta`` may nest (objects and lists): far beyond any real metadata, and below the
#: depth at which JSON writers give up (orjson: 254), so whatever is read can be written back.
META_DEPTH = 64
#: The integers JSON readers keep as integers, ``[-2**63, 2**64)``: orjson reads any other integer
#: as a float (digits lost), and orjson cannot write one back.
INT_LOW, INT_END = -(1 << 63), 1 << 64


def meta_fault(meta: dict[str, Any], name: str = "meta", limit: int = META_DEPTH) -> TraceError | None:
    """What is wrong with a decoded ``meta``, or None, found in one walk (no recursion: any depth is
    safe): objects and lists nested more than ``limit`` levels deep, or an integer that no 64-bit
    reader keeps (named by its top-level key). Read by orjson as a float and by msgspec exactly,
    such an integer would group and convert differently on different paths, and silently."""
    for key, top in meta.items():
        stack = [(top, 2)]
        while stack:
            node, depth = stack.pop()
            kind = type(node)
            if kind is int:
                if not INT_LOW <= node < INT_END:
                    return field_error("an integer outside the 64-bit range (-2**63 to 2**64 - 1): JSON readers "
                                       "turn it into a float; write it as a string", f"{name}.{key}")
            elif kind is dict or kind is list:
                children = node.values() if kind is dict else node
                if children and depth > limit:
                    return field_error(f"nested more than {limit} levels deep", name)
                stack.extend((child, depth + 1) for child in children)
    return None


def wide_float_in(meta: dict[str, Any]) -> bool:
    """Whether ``meta`` holds a whole float outside the 64-bit integers: what orjson makes of a wider
    integer (or of a float written so), so the line is worth decoding again exactly."""
    stack = list(meta.values())
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is float:
            # INT_LOW itself too: an integer just below it rounds to it as a float
            if not INT_LOW < node < INT_END and node.is_integer():
                return True
        elif kind is dict:
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
    return False


def as_meta(value: Any, name: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise field_error(f"expected an object, got {type(value).__name__}", name)
    fault = meta_fault(value, name)
    if fault is not None:
        raise fault
    return value


def as_error(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) - {"stage", "message"} or "stage" not in value:
        raise field_error('expected {"stage": ..., "message": ...}', name)
    if not isinstance(value["stage"], str) or not isinstance(value.get("message", ""), str):
        raise field_error("stage and message must be strings", name)
    return {"stage": value["stage"], "message": value.get("message", "")}

