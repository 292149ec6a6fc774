"""Label lines in the usual shape, decoded by msgspec straight into a label's values.

A label file is one small JSON object a line, as many lines as questions, and it is read
before any span can be turned into a trace. :func:`.gold.parse_label` checks a decoded
object key by key; for a line in the usual shape (the known keys with values of the right
types) decoding it into a typed struct does the same checks in msgspec, and the label is
built without the frozen dataclass's per-field ``__setattr__``: 200,000 labels are read in
about half the CPU time. Anything else (an unknown key, a value of another type, a label
with neither query id nor query, a span whose start is not before its end, a line that is not
JSON) makes :func:`label_values` return None, and :func:`.gold.parse_label` reads the line:
its labels and its error messages are the reference; this decoder gives the same values or
leaves the line alone (``tests/conformance/test_labels_typed.py`` checks that on generated lines).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union

import msgspec

__all__ = ["label_values"]


#: An integer orjson (the reference decoder) reads as one: it reads a longer one as a float, an
#: error here; from 2**63 to 2**64 - 1 (an int there) the general path reads it.
_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _GoldSpan(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    id: Union[str, _Int]
    start: _Int
    end: _Int


class _Label(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    query_id: Union[str, _Int, None] = None
    query: Optional[str] = None
    gold: Optional[list[Union[str, _Int]]] = None
    gold_spans: Optional[list[_GoldSpan]] = None
    answerable: Optional[bool] = None
    correct: Optional[bool] = None
    refused: Optional[bool] = None
    reference: Optional[str] = None


_decode = msgspec.json.Decoder(_Label).decode


def label_values(line: bytes) -> tuple[Any, ...] | None:
    """The values of the label on one line in the usual shape, in the order of
    :class:`.gold.Label`'s fields up to ``reference``; None when :func:`.gold.parse_label` must
    read the line."""
    try:
        row = _decode(line)
    except msgspec.DecodeError:  # another shape (ValidationError is one), or not JSON
        return None
    qid = row.query_id
    if qid is None and not row.query:
        return None
    spans = ()
    if row.gold_spans:
        for span in row.gold_spans:
            if not 0 <= span.start < span.end:
                return None
        spans = tuple((str(s.id), s.start, s.end) for s in row.gold_spans)
    return (None if qid is None else str(qid), row.query, tuple(str(g) for g in row.gold) if row.gold else (),
            spans, row.answerable, row.correct, row.refused, row.reference)
