"""The counting path's trace record, and a JSON line decoded straight into it.

``ragstage attribute`` diagnoses a million traces. Building a checked dict per trace
(:func:`~ragstage.fields.check_record`) cost as much as parsing the JSON; so this path
decodes each line with msgspec straight into :class:`Record`, a typed struct whose field
types do the checking in C while the line is parsed.

The struct is built from the rows of :data:`~ragstage.fields.FIELDS`: each field is typed
with its kind's plain type (a string, a boolean, a list of string ids, a list of booleans,
an object; null where null is allowed), and a field whose check does more than a type test
(an integer id to convert, ranked ``{"id", "score"}`` entries, an ``error`` object, a
``prompt_source``) is typed to accept only null. A line that does not fit the plain types is
therefore not rejected here: it goes to ``check_record``, which converts it or raises the
error that names the field. So every line gets exactly the checks, errors and normalised
form it would get from ``check_record``, and ``tests/conformance/test_typed_record.py`` checks the two agree
on random records, bad ones included.
"""

from __future__ import annotations

from typing import Any, Optional

import msgspec

from .fields import FIELDS, check_record, missing
from .trace import load_trace_line
from .values import meta_fault

__all__ = ["Record", "CountedRecord", "decode_record", "as_record", "decode_plain_record", "decode_plain_counted",
           "record_of_line", "checked_meta"]


def _struct_fields(fresh_meta: bool = True) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for name, f in FIELDS.items():
        plain = f.kind.plain
        if name == "meta":  # absent or null is no metadata: a fresh {} (a null goes to check_record)
            out.append((name, plain, msgspec.field(default_factory=dict) if fresh_meta else None))
            continue
        kind = None if plain is None else (Optional[plain] if f.nullable or f.default is None else plain)
        out.append((name, kind, f.default))
    return out


#: A normalised trace with attribute access: what :func:`~ragstage.attribution.diagnose_record`
#: reads, like a :class:`~ragstage.trace.Trace`. The scores and sections of ranked entries are
#: not kept: no rule reads them. ``gc=False``: a decoded trace holds no reference cycles.
Record = msgspec.defstruct("Record", _struct_fields(), forbid_unknown_fields=True, gc=False,
                           module=__name__)
#: What counting decodes a line into: a :class:`Record` but for an absent ``meta``, which is None
#: instead of a fresh ``{}`` (both mean no metadata, and a count keeps no trace to change it).
CountedRecord = msgspec.defstruct("CountedRecord", _struct_fields(fresh_meta=False), forbid_unknown_fields=True,
                                  gc=False, module=__name__)

#: A line decoded by the plain types alone (no conversion, no message that names a field): raises
#: ``msgspec.DecodeError`` for a line they do not fit (``RecursionError`` for values nested too deep
#: for it), which then goes to :func:`record_of_line`;
#: a ``query_id`` of null, and ``meta``, are the caller's to check (:func:`decode_record` shows how).
decode_plain_record = msgspec.json.Decoder(Record).decode
#: :data:`decode_plain_record` into a :class:`CountedRecord`.
decode_plain_counted = msgspec.json.Decoder(CountedRecord).decode


def record_of_line(line: bytes) -> Record:
    """A line's :class:`Record` by the full check (:func:`~ragstage.fields.check_record`)."""
    return as_record(check_record(load_trace_line(line)))


def checked_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """A decoded ``meta`` checked as every reader checks it (:func:`~ragstage.values.meta_fault`):
    msgspec reads an integer beyond 64 bits exactly, and it is refused here as on the other paths."""
    fault = meta_fault(meta)
    if fault is not None:
        raise fault
    return meta


def decode_record(line: bytes) -> Record:
    """One JSON line as a checked :class:`Record`.

    Raises :class:`~ragstage.errors.TraceError` naming the field, or ``orjson.JSONDecodeError``
    for a line that is not JSON, exactly as ``check_record(load_trace_line(line))`` would. The
    counting loops of :mod:`ragstage.python_rules` decode each line by these same steps, written
    into the loop."""
    try:
        rec = decode_plain_record(line)
    except (msgspec.DecodeError, RecursionError):  # not the plain types, not JSON, or too deep: the full check decides
        return record_of_line(line)
    if rec.query_id is None:  # typed as nullable only so that the error is check_record's 'missing'
        raise missing("query_id")
    if rec.meta:
        rec.meta = checked_meta(rec.meta)
    return rec


def as_record(clean: dict[str, Any]) -> Record:
    """A :class:`Record` of a normalised dict from :func:`~ragstage.fields.check_record`."""
    return Record(*[clean[name] for name in FIELDS])
