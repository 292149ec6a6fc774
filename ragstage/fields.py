"""The trace's fields: what each one may hold, and the check every reader runs.

The field names are a public contract (see the README's table). Every reader in the
project (JSON Lines, Parquet, Spark, the widgets) goes through :func:`check_record`, so a
typo such as ``promt`` or a ``gold`` given as a string is rejected with the field named,
instead of being silently treated as "no prompt" or as a list of single characters.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

__all__ = ["FIELDS", "NULLABLE_FIELDS", "FirstSeen", "TraceError", "check_record", "fast_type_of", "ranked_entries"]


class TraceError(ValueError):
    """Bad trace input. The message names the file, the line and the field."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field, self.detail = path, line, field, message
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


def _fail(msg: str, name: str) -> TraceError:
    return TraceError(msg, field=name)


def _as_id(value: Any, name: str) -> str:
    # Ids are strings; integer ids (common in logs and in BEIR corpora) are read as their
    # decimal text. Booleans are ints in Python, so they are excluded explicitly.
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _fail(f"ids must be strings or integers, got {type(value).__name__} {value!r}", name)


def _as_ids(value: Any, name: str) -> tuple[str, ...]:
    if type(value) is list or type(value) is tuple:
        # Fast path: a list of strings (the common case, and the one a million-line replay
        # pays for) needs no per-element conversion.
        for v in value:
            if type(v) is not str:
                break
        else:
            return tuple(value)
        return tuple(_as_id(v, name) for v in value)
    raise _fail(f"expected a list of ids, got {type(value).__name__} {value!r:.60}", name)


def _as_ranked(value: Any, name: str
               ) -> tuple[tuple[str, ...], tuple[float, ...] | None, tuple[str | None, ...] | None]:
    """A ranked list of ids, or of ``{"id", "score"[, "section"]}`` objects (not a mix).

    Returns ``(ids, scores, sections)``; scores are None for a plain id list, sections None
    unless some entry names one (seed 004's minimum log: id, score and section).
    """
    if not isinstance(value, (list, tuple)):
        raise _fail(f"expected a ranked list of ids, got {type(value).__name__} {value!r:.60}", name)
    if value and isinstance(value[0], dict):
        ids, scores, sections = [], [], []
        for item in value:
            if not isinstance(item, dict) or "id" not in item:
                raise _fail(f"each entry must be an {{\"id\", \"score\"}} object, got {item!r:.60}", name)
            extra = set(item) - _RANKED_KEYS
            if extra:
                raise _fail(f"unknown key(s) {sorted(extra)} in a ranked entry (known: id, score, section)", name)
            score = item.get("score")
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise _fail(f"score must be a number, got {score!r}", name)
            if not _finite(score):  # JSON has no NaN or infinity: such a score could not be read back
                raise _fail(f"score must be a finite number, got {score!r}", name)
            section = item.get("section")
            if section is not None and type(section) is not str:
                raise _fail(f"section must be a string, got {section!r:.40}", name)
            ids.append(_as_id(item["id"], name))
            scores.append(float(score))
            sections.append(section)
        return tuple(ids), tuple(scores), (tuple(sections) if any(s is not None for s in sections) else None)
    return _as_ids(value, name), None, None


def _finite(score: int | float) -> bool:
    try:
        return math.isfinite(score)
    except OverflowError:  # an integer beyond any float
        return False


_RANKED_KEYS = frozenset({"id", "score", "section"})
_PROMPT_SOURCES = ("logged", "recovered")


def _as_prompt_source(value: Any, name: str) -> str:
    if value not in _PROMPT_SOURCES:
        raise _fail(f"expected one of {', '.join(_PROMPT_SOURCES)}, got {value!r:.40}", name)
    return value


def _as_str(value: Any, name: str) -> str:
    if type(value) is not str:
        raise _fail(f"expected a string, got {type(value).__name__}", name)
    return value


def _as_bool(value: Any, name: str) -> bool:
    if type(value) is not bool:
        raise _fail(f"expected true or false, got {value!r:.40}", name)
    return value


def _as_bools(value: Any, name: str) -> tuple[bool, ...]:
    if not isinstance(value, (list, tuple)) or not all(type(v) is bool for v in value):
        raise _fail(f"expected a list of true/false claim labels, got {value!r:.60}", name)
    return tuple(value)


def _as_dict(value: Any, name: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _fail(f"expected an object, got {type(value).__name__}", name)
    return value


def _as_error(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) - {"stage", "message"} or "stage" not in value:
        raise _fail('expected {"stage": ..., "message": ...}', name)
    if not isinstance(value["stage"], str) or not isinstance(value.get("message", ""), str):
        raise _fail("stage and message must be strings", name)
    return {"stage": value["stage"], "message": value.get("message", "")}


def _nullable(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    def checked(value: Any, name: str) -> Any:
        return None if value is None else check(value, name)
    return checked


def _not_null(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    def checked(value: Any, name: str) -> Any:
        if value is None:
            raise _fail("must not be null", name)
        return check(value, name)
    return checked


# name -> (checker, default). The order is the documented order of the fields.
FIELDS: dict[str, tuple[Callable[[Any, str], Any], Any]] = {
    "query_id": (_nullable(_as_id), None),  # null is reported as missing below
    "pipeline": (_not_null(_as_str), "default"),
    "query": (_not_null(_as_str), ""),
    "gold": (_not_null(_as_ids), ()),
    "answerable": (_not_null(_as_bool), True),
    "retrieved": (_not_null(_as_ids), ()),  # read by _as_ranked, see check_record
    "reranked": (_nullable(_as_ids), None),  # read by _as_ranked too
    "prompt": (_nullable(_as_ids), None),
    "prompt_source": (_nullable(_as_prompt_source), None),
    "truncated": (_nullable(_as_ids), None),
    "answer": (_not_null(_as_str), ""),
    "answer_ids": (_nullable(_as_ids), None),
    "correct": (_nullable(_as_bool), None),
    "refused": (_not_null(_as_bool), False),
    "claims": (_nullable(_as_bools), None),
    "complete": (_nullable(_as_bool), None),
    "query_ok": (_nullable(_as_bool), None),
    "error": (_nullable(_as_error), None),
    "model": (_nullable(_as_str), None),
    "prompt_version": (_nullable(_as_str), None),
    "timestamp": (_nullable(_as_str), None),
    "meta": (_nullable(_as_dict), None),
}
_DEFAULTS = {name: default for name, (_, default) in FIELDS.items()}
# Not JSON fields of their own: the scores and sections of ranked ``{"id", "score"}`` entries.
_RANKED_EXTRAS = {f"{stage}_{part}": None for stage in ("retrieved", "reranked") for part in ("scores", "sections")}
_START = {**_DEFAULTS, **_RANKED_EXTRAS}


def _passes(name: str, value: Any, expected: Any) -> bool:
    try:
        return FIELDS[name][0](value, name) == expected
    except TraceError:
        return False


# check_record's fast path, for a million-line replay: a value whose check is a plain type
# test (null where null is allowed, a string, a boolean, a list of string ids) is taken as
# is, with the result its checker gives it; any other value goes to its checker, which
# converts it or names the field. The sets are found by asking each checker, so they
# follow FIELDS.
NULLABLE_FIELDS = frozenset(name for name in FIELDS if _passes(name, None, None))
_STRINGS = frozenset(name for name in FIELDS if _passes(name, "x", "x"))
_BOOLEANS = frozenset(name for name in FIELDS if _passes(name, True, True) and _passes(name, False, False))
_ID_LISTS = frozenset(name for name in FIELDS if _passes(name, ["a", "b"], ("a", "b")))
_BOOL_LISTS = frozenset(name for name in FIELDS if _passes(name, [True, False], (True, False)))
_OBJECTS = frozenset(name for name in FIELDS if _passes(name, {"k": [1]}, {"k": [1]}))


def fast_type_of(name: str) -> tuple[type | None, bool]:
    """``(type, nullable)``: the plain type a field's checker takes as is, from the same probes.

    ``list[str]`` (ids), ``str``, ``bool``, ``list[bool]`` or ``dict[str, Any]``; None when
    the check does more than a type test. Typed decoders (:mod:`ragstage.record`) are built
    from this, so they follow :data:`FIELDS` instead of restating it.
    """
    nullable = name in NULLABLE_FIELDS
    for kinds, kind in ((_ID_LISTS, list[str]), (_STRINGS, str), (_BOOLEANS, bool), (_BOOL_LISTS, list[bool]),
                        (_OBJECTS, dict[str, Any])):
        if name in kinds:
            return kind, nullable
    return None, nullable


def check_record(record: Any) -> dict[str, Any]:
    """Validate one decoded JSON object and return it normalised.

    Normalised means: every field present with its default, ids as strings in tuples,
    ``retrieved`` and ``reranked`` split into ids, ``<stage>_scores`` and
    ``<stage>_sections`` (None unless given), ``meta`` a dict. Raises
    :class:`TraceError` naming the field (the caller adds file and line).
    """
    if type(record) is not dict:
        raise TraceError(f"a trace must be a JSON object, got {type(record).__name__}")
    out = dict(_START)
    for name, value in record.items():
        kind = type(value)
        if value is None:
            if name in NULLABLE_FIELDS:
                out[name] = None
                continue
        elif kind is str:
            if name in _STRINGS:
                out[name] = value
                continue
        elif kind is list or kind is tuple:
            if name in _ID_LISTS:
                try:
                    "".join(value)  # C-speed test that every element is a string
                except TypeError:
                    pass
                else:
                    out[name] = tuple(value)
                    continue
        elif kind is bool and name in _BOOLEANS:
            out[name] = value
            continue
        _check_field(out, name, value)
    if out["query_id"] is None:
        raise _fail("missing (every trace needs a query_id)", "query_id")
    if out["meta"] is None:
        out["meta"] = {}
    return out


def _check_field(out: dict[str, Any], name: str, value: Any) -> None:
    """The full check of one field: conversions (integer ids, ranked entries) and the errors."""
    spec = FIELDS.get(name)
    if spec is None:
        raise _fail(f"unknown field (known: {', '.join(FIELDS)})", name)
    if name == "retrieved":
        if value is None:
            raise _fail("must not be null", name)
        out["retrieved"], out["retrieved_scores"], out["retrieved_sections"] = _as_ranked(value, name)
    elif name == "reranked":
        if value is not None:
            out["reranked"], out["reranked_scores"], out["reranked_sections"] = _as_ranked(value, name)
    else:
        out[name] = spec[0](value, name)


def ranked_entries(ids: Sequence[str] | None, scores: Sequence[float] | None,
                    sections: Sequence[str | None] | None, name: str) -> list[dict[str, Any]] | None:
    """The ``{"id", "score"[, "section"]}`` form of a ranked list that carries scores."""
    if ids is None or scores is None:
        if sections is not None:
            raise _fail("sections need scores: give the entries as {\"id\", \"score\", \"section\"}", name)
        return None
    if len(scores) != len(ids) or (sections is not None and len(sections) != len(ids)):
        raise _fail(f"{len(ids)} ids but {len(scores)} scores"
                    + ("" if sections is None else f" and {len(sections)} sections"), name)
    entries: list[dict[str, Any]] = [{"id": i, "score": s} for i, s in zip(ids, scores)]
    if sections is not None:
        for entry, section in zip(entries, sections):
            if section is not None:
                entry["section"] = section
    return entries


class FirstSeen:
    """Where each (query_id, pipeline) key was first met: every reader's duplicate check.

    One trace per question and pipeline: a repeated key would count that question twice.
    ``unit`` names a position in the reader's errors ("line" or "row").
    """

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self._first: dict[tuple[str, str], tuple[str, int]] = {}

    def repeat(self, path: str, position: int, query_id: str, pipeline: str) -> str | None:
        """None the first time a key is met; after that, the error message naming its first place."""
        first = self._first.setdefault((query_id, pipeline), (path, position))
        if first == (path, position):
            return None
        where = f"{self.unit} {first[1]}" + ("" if first[0] == path else f" of {first[0]}")
        return f"duplicate query_id {query_id!r} for pipeline {pipeline!r} (first on {where})"
