"""What the inputs of one case mean as a trace: the editor's validation, without widgets.

The editor shows only some fields of a trace (the stage lists and the judgments) and only
as text, so reading the inputs back must not lose what the text cannot show:

* an input whose text is still the text of the current value leaves that value as it is
  (a claims list ``[]``, an id ``"a b"`` or an id called ``null`` survive an edit of
  another field, although their text would read back differently);
* an input retyped to the same value (``d1,d2`` for ``d1, d2``) also keeps it exactly,
  entries with scores and sections included;
* a ranked list (``retrieved``, ``reranked``) edited to other ids keeps its scores and
  sections while every id in it still has one, from the case as loaded or as last edited;
  a new id without a score turns the list into plain ids;
* every field the editor does not show (``answer``, ``truncated``, ``prompt_source``,
  ``meta``, ...) is carried over unchanged.

So saving an edited case writes exactly the trace the reader sees, and saving an unedited
one writes the trace that was loaded.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import TraceError
from ..trace import Trace
from .parsing import INPUT_FIELDS

__all__ = ["case_inputs", "read_case"]

_RANKED = ("retrieved", "reranked")


def case_inputs(trace: Trace) -> dict[str, str | bool]:
    """The input of every editable field that shows ``trace`` as it is."""
    return {name: field.show(getattr(trace, name)) for name, field in INPUT_FIELDS.items()}


def _known_entries(traces: tuple[Trace, ...], stage: str) -> dict[str, dict[str, Any]]:
    """id -> its ``{"id", "score"[, "section"]}`` entry, from every version that had scores."""
    known: dict[str, dict[str, Any]] = {}
    for trace in traces:
        scores = getattr(trace, f"{stage}_scores")
        if scores is None:
            continue
        sections = getattr(trace, f"{stage}_sections") or (None,) * len(scores)
        for doc, score, section in zip(getattr(trace, stage), scores, sections):
            entry: dict[str, Any] = {"id": doc, "score": score}
            if section is not None:
                entry["section"] = section
            known[doc] = entry
    return known


def _ranked(ids: list[str] | None, known: Mapping[str, dict[str, Any]]) -> list[Any] | None:
    """The ranked list as entries with scores when every id has one, else as plain ids."""
    if ids and all(doc in known for doc in ids):
        return [known[doc] for doc in ids]
    return ids


def _same(parsed: Any, value: Any) -> bool:
    """Whether a parsed input is the value already held (lists compare as tuples)."""
    if isinstance(parsed, list) and isinstance(value, tuple):
        return tuple(parsed) == value
    return parsed == value and type(parsed) is type(value)


def read_case(inputs: Mapping[str, str | bool], current: Trace, original: Trace) -> Trace:
    """The trace the inputs of one case describe; raises ValueError naming the bad field.

    ``current`` is the case's last valid version, ``original`` the version it was loaded as
    (their scores are what an edited ranked list can get back).
    """
    shown = case_inputs(current)
    record = current.to_dict()
    for name, field in INPUT_FIELDS.items():
        if inputs[name] == shown[name]:
            continue  # untouched: keep the value exactly, even what its text cannot show
        value = field.parse(inputs[name])
        if _same(value, getattr(current, name)):
            continue  # retyped (other spacing, other spelling) but the same value: keep it exactly
        if name in _RANKED:
            value = _ranked(value, _known_entries((original, current), name))
        record[name] = value
    try:
        return Trace.from_dict(record)
    except TraceError as exc:
        raise ValueError(str(exc)) from None
