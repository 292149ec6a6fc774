"""The trace's fields, declared once: what each may hold, its default, and how it is stored.

The field names are a public contract (see the README's table). :data:`FIELDS` holds one
row per field: its :class:`Kind` (the full check, the plain type the check takes as is, the
Arrow type), its default and whether null is allowed. Everything else is derived from these
rows: :func:`check_record` (the check of a decoded JSON object), the typed record the
counting path decodes into (:mod:`ragstage.typed_record`), and the Arrow schema and the columns
the Parquet reader takes without a per-row check (:mod:`ragstage.parquet`).

A reader either calls :func:`check_record` (or :func:`check_row`, for columns), or decodes
into the plain types and sends whatever does not fit them to :func:`check_record`; so every
reader accepts, converts and rejects the same values, with the same errors, and gives the
same normalised form: ids as strings in lists, ``meta`` a dict. A typo such as ``promt``
or a ``gold`` given as a string is rejected with the field named, instead of being silently
treated as "no prompt" or as a list of single characters.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Sequence

from .errors import TraceError
from .values import (
    RankedColumns,
    as_bool,
    as_bools,
    as_error,
    as_id,
    as_ids,
    as_meta,
    as_prompt_source,
    as_ranked,
    as_str,
    field_error,
)

__all__ = ["FIELDS", "COLUMNS", "RANKED_FIELDS", "Kind", "Field", "FirstSeen", "check_columns",
           "check_record", "check_row", "missing", "ranked_entries", "unknown_field"]


def missing(name: str) -> TraceError:
    """The error for a required field that is absent or null."""
    return field_error(f"missing (every trace needs a {name})", name)


def unknown_field(name: str) -> TraceError:
    """The error for a name that is no trace field (a typo such as ``promt``)."""
    return field_error(f"unknown field (known: {', '.join(FIELDS)})", name)


class Kind(NamedTuple):
    """What a field holds.

    ``check(value, name)`` converts a decoded JSON value or raises :class:`TraceError`;
    ``plain`` is the type of the values it returns unchanged (None:
    it converts every value, so a typed decoder must leave such a field to it); ``arrow``
    gives the field's Arrow type from the pyarrow module (passed in, so that only a Parquet
    reader loads pyarrow), and ``arrow_plain`` says whether a column of that type holds
    exactly the values ``check`` takes as is (``meta`` is stored as JSON text: it does not).
    """

    check: Callable[[Any, str], Any]
    plain: Any
    arrow: Callable[[Any], Any]
    arrow_plain: bool = True


ID = Kind(as_id, str, lambda pa: pa.string())
TEXT = Kind(as_str, str, lambda pa: pa.string())
IDS = Kind(as_ids, list[str], lambda pa: pa.list_(pa.string()))
#: A ranked list: its ids here, its scores and sections in ``<name>_scores`` and ``<name>_sections``.
RANKED = Kind(as_ranked, list[str], lambda pa: pa.list_(pa.string()))
FLAG = Kind(as_bool, bool, lambda pa: pa.bool_())
FLAGS = Kind(as_bools, list[bool], lambda pa: pa.list_(pa.bool_()))
PROMPT_SOURCE = Kind(as_prompt_source, None, lambda pa: pa.string(), False)
ERROR = Kind(as_error, None, lambda pa: pa.struct([("stage", pa.string()), ("message", pa.string())]), False)
META = Kind(as_meta, dict[str, Any], lambda pa: pa.string(), False)  # stored as JSON text
#: The columns of a ranked list's scores and sections, by suffix, with their Arrow types.
RANKED_PARTS: dict[str, Callable[[Any], Any]] = {"scores": lambda pa: pa.list_(pa.float64()),
                                                 "sections": lambda pa: pa.list_(pa.string())}


class Field(NamedTuple):
    """One trace field: its kind, its default (when absent), and whether null is allowed.

    A field that allows no null and defaults to None is required: absent or null, it is
    reported as missing. ``meta`` absent or null is no metadata: ``{}`` in the normalised form.
    """

    kind: Kind
    default: Any
    nullable: bool


# The order is the documented order of the fields.
FIELDS: dict[str, Field] = {
    "query_id": Field(ID, None, False),
    "pipeline": Field(TEXT, "default", False),
    "query": Field(TEXT, "", False),
    "gold": Field(IDS, (), False),
    "answerable": Field(FLAG, True, False),
    "retrieved": Field(RANKED, (), False),
    "reranked": Field(RANKED, None, True),
    "prompt": Field(IDS, None, True),
    "prompt_source": Field(PROMPT_SOURCE, None, True),
    "truncated": Field(IDS, None, True),
    "answer": Field(TEXT, "", False),
    "answer_ids": Field(IDS, None, True),
    "correct": Field(FLAG, None, True),
    "refused": Field(FLAG, False, False),
    "claims": Field(FLAGS, None, True),
    "complete": Field(FLAG, None, True),
    "query_ok": Field(FLAG, None, True),
    "error": Field(ERROR, None, True),
    "model": Field(TEXT, None, True),
    "prompt_version": Field(TEXT, None, True),
    "timestamp": Field(TEXT, None, True),
    "meta": Field(META, None, True),
}
#: The ranked fields, whose scores and sections are kept in fields of the normalised form
#: (and columns of a Parquet file) of their own: ``retrieved_scores``, ``retrieved_sections``...
RANKED_FIELDS: tuple[str, ...] = tuple(name for name, f in FIELDS.items() if f.kind is RANKED)
_PARTS = {f"{name}_{part}": name for name in RANKED_FIELDS for part in RANKED_PARTS}
#: Every column a row of traces may hold, in the documented order: the fields and the ranked parts.
COLUMNS: tuple[str, ...] = tuple(c for name in FIELDS for c in
                                 (name, *(f"{name}_{part}" for part in RANKED_PARTS if name in RANKED_FIELDS)))
_REQUIRED = tuple(name for name, f in FIELDS.items() if f.default is None and not f.nullable)
_START = {**{name: f.default for name, f in FIELDS.items()}, **dict.fromkeys(_PARTS)}

# check_record's fast path, for a million-line replay: a value whose check is a plain type
# test (null where null is allowed, a string, a boolean, a list of string ids) is taken as is;
# any other value goes to its field's check, which converts it or names the field.
_NULL_OK = frozenset(name for name, f in FIELDS.items() if f.nullable or name in _REQUIRED)
_STRINGS = frozenset(name for name, f in FIELDS.items() if f.kind.plain is str)
_BOOLEANS = frozenset(name for name, f in FIELDS.items() if f.kind.plain is bool)
_ID_LISTS = frozenset(name for name, f in FIELDS.items() if f.kind.plain == list[str])


def check_record(record: Any) -> dict[str, Any]:
    """Validate one decoded JSON object and return it normalised.

    Normalised means: every field present with its default, ids as strings in lists,
    ``retrieved`` and ``reranked`` split into ids, ``<stage>_scores`` and
    ``<stage>_sections`` (None unless given), ``meta`` a dict; a list field left out holds its
    default, ``()``. Raises
    :class:`TraceError` naming the field (the caller adds file and line).
    """
    if type(record) is not dict:
        raise TraceError(f"a trace must be a JSON object, got {type(record).__name__}")
    out = dict(_START)
    for name, value in record.items():
        kind = type(value)
        if value is None:
            if name in _NULL_OK:
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
                    out[name] = value if kind is list else list(value)
                    continue
        elif kind is bool and name in _BOOLEANS:
            out[name] = value
            continue
        _check_field(out, name, value)
    for name in _REQUIRED:
        if out[name] is None:
            raise missing(name)
    if out["meta"] is None:
        out["meta"] = {}
    return out


def _check_field(out: dict[str, Any], name: str, value: Any) -> None:
    """The full check of one field: conversions (integer ids, ranked entries) and the errors."""
    spec = FIELDS.get(name)
    if spec is None:
        raise unknown_field(name)
    if value is None:
        if not spec.nullable:
            raise field_error("must not be null", name)
        out[name] = None
    elif spec.kind is RANKED:
        out[name], out[f"{name}_scores"], out[f"{name}_sections"] = spec.kind.check(value, name)
    else:
        out[name] = spec.kind.check(value, name)


def check_columns(names: Iterable[str]) -> None:
    """Reject a column that is no trace column (the fields and the ranked lists' parts), and a
    ranked list's scores or sections without the list itself (they would be dropped unread)."""
    names = list(names)
    for name in names:
        if name not in FIELDS and name not in _PARTS:
            raise unknown_field(name)
    for stage in RANKED_FIELDS:
        for part in RANKED_PARTS:
            if f"{stage}_{part}" in names and stage not in names:
                raise field_error(f"{part} without the ranked list: add the '{stage}' column", f"{stage}_{part}")


def check_row(row: dict[str, Any]) -> dict[str, Any]:
    """:func:`check_record` for a row of columns, where a ranked list's scores and sections sit
    in ``<stage>_scores`` and ``<stage>_sections`` (a Parquet row, a Trace's attributes).

    The parts are checked as ``{"id", "score", "section"}`` entries would be, with the same
    errors, without building the entries. ``row`` is consumed.
    """
    for stage in RANKED_FIELDS:
        scores, sections = row.pop(f"{stage}_scores", None), row.pop(f"{stage}_sections", None)
        if scores is None and sections is None:
            continue
        ids = row.get(stage)
        if _has_scores(ids, scores, sections, stage) and type(ids) in (list, tuple):
            row[stage] = RankedColumns(ids, scores, sections)
    return check_record(row)


def _has_scores(ids: Sequence[Any] | None, scores: Sequence[Any] | None, sections: Sequence[Any] | None,
                name: str) -> bool:
    """Whether a ranked list in columns carries scores or sections; raises when its parts do not fit its ids."""
    for part, values in (("scores", scores), ("sections", sections)):
        if ids is None and values is not None:
            raise field_error(f"{part} without the ranked list (null or missing)", f"{name}_{part}")
    if ids is None or (scores is None and sections is None):
        return False
    for part, values in (("scores", scores), ("sections", sections)):
        if values is not None and not isinstance(values, (list, tuple)):
            raise field_error(f"expected a list of {part}, got {type(values).__name__} {values!r:.60}", name)
    if any(values is not None and len(values) != len(ids) for values in (scores, sections)):
        raise field_error(f"{len(ids)} ids but " + " and ".join(
            f"{len(values)} {part}" for part, values in (("scores", scores), ("sections", sections))
            if values is not None), name)
    return True


def ranked_entries(ids: Sequence[str] | None, scores: Sequence[float] | None,
                   sections: Sequence[str | None] | None, name: str) -> list[dict[str, Any]] | None:
    """The ``{"id"[, "score"][, "section"]}`` form of a ranked list that carries scores or sections
    (for JSON): each entry keeps what was logged for it."""
    if ids is None or not _has_scores(ids, scores, sections, name):
        return None
    missing = (None,) * len(ids)
    entries: list[dict[str, Any]] = []
    for i, score, section in zip(ids, scores if scores is not None else missing,
                                 sections if sections is not None else missing):
        entry: dict[str, Any] = {"id": i}
        if score is not None:
            entry["score"] = score
        if section is not None:
            entry["section"] = section
        entries.append(entry)
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
