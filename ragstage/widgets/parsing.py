"""The text a reader types into the case editor, and the values it stands for.

No widgets here: one :class:`InputField` per editable trace field knows how to show a value
as the widget's input (:meth:`InputField.show`) and how to read the input back
(:meth:`InputField.parse`). The editor, its tests and :meth:`CaseEditor.set_case` all go
through these, so "what does ``null`` mean in a list box" has one answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["InputField", "INPUT_FIELDS", "LIST_FIELDS", "css_name", "parse_claims", "parse_ids"]

_NULL_WORDS = {"null", "none"}
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}
#: The choices of a yes/no/unknown judgment, as the dropdown shows them.
TRISTATE: dict[str, bool | None] = {"not set": None, "true": True, "false": False}


def css_name(query_id: str) -> str:
    """The part of a CSS class that names a case: ``query_id`` with unsafe characters as ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(query_id))


def parse_ids(text: str, *, nullable: bool = True) -> list[str] | None:
    """Comma-separated ids -> a list. Empty text is an empty list; ``null`` is "not logged".

    Spaces around ids are dropped and empty entries skipped (so a trailing comma is fine).
    An entry with a space inside is an error: it is almost always a missing comma.
    """
    stripped = text.strip()
    if stripped.lower() in _NULL_WORDS:
        if not nullable:
            raise ValueError("cannot be null here: leave it empty for 'no ids'")
        return None
    out = []
    for part in stripped.split(","):
        part = part.strip()
        if not part:
            continue
        if re.search(r"\s", part):
            raise ValueError(f"'{part}' has a space in it: separate ids with commas")
        out.append(part)
    return out


def parse_claims(text: str) -> list[bool] | None:
    """Comma-separated claim labels (true/false, t/f, yes/no, 1/0) -> a list; empty -> None."""
    stripped = text.strip()
    if not stripped or stripped.lower() in _NULL_WORDS:
        return None
    out = []
    for part in stripped.split(","):
        word = part.strip().lower()
        if not word:
            continue
        if word in _TRUE:
            out.append(True)
        elif word in _FALSE:
            out.append(False)
        else:
            raise ValueError(f"claim label '{part.strip()}' is not true or false")
    return out or None


def _ids_text(ids: Sequence[str] | None) -> str:
    return "null" if ids is None else ", ".join(ids)


def _claims_text(claims: Sequence[bool] | None) -> str:
    return "" if not claims else ", ".join("true" if c else "false" for c in claims)


def _tristate_text(value: bool | None) -> str:
    return {None: "not set", True: "true", False: "false"}[value]


def _parse_tristate(choice: str) -> bool | None:
    if choice not in TRISTATE:
        raise ValueError(f"choose one of {', '.join(TRISTATE)}, got {choice!r}")
    return TRISTATE[choice]


@dataclass(frozen=True)
class InputField:
    """One editable trace field: its kind of widget, and its value <-> input conversions.

    ``kind`` is ``"ids"`` (a text box of comma-separated ids), ``"claims"`` (a text box of
    true/false labels), ``"tristate"`` (a dropdown: not set / true / false) or ``"flag"``
    (a checkbox). ``nullable`` says whether an id list may be ``null`` ("not logged").
    """

    name: str
    kind: str
    nullable: bool = True

    def show(self, value: Any) -> str | bool:
        """The widget input that stands for ``value`` (a trace field's value)."""
        return _SHOW[self.kind](value)

    def parse(self, raw: str | bool) -> Any:
        """The trace value an input stands for; ValueError (naming the field) if it is bad."""
        try:
            if self.kind == "ids":
                return parse_ids(str(raw), nullable=self.nullable)
            return _PARSE[self.kind](raw)
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from None

    def coerce(self, value: Any) -> str | bool:
        """An input from Python: text is taken as typed, any other value is shown first."""
        if isinstance(value, str) and self.kind != "flag":
            return value
        return self.show(value)


_SHOW: dict[str, Callable[[Any], str | bool]] = {
    "ids": _ids_text, "claims": _claims_text, "tristate": _tristate_text, "flag": bool,
}
_PARSE: dict[str, Callable[[Any], Any]] = {
    "claims": lambda raw: parse_claims(str(raw)), "tristate": _parse_tristate, "flag": bool,
}

#: The editable fields, in the order the evidence passes them, then the judgments.
INPUT_FIELDS: dict[str, InputField] = {f.name: f for f in (
    InputField("gold", "ids", nullable=False),
    InputField("retrieved", "ids", nullable=False),
    InputField("reranked", "ids"),
    InputField("prompt", "ids"),
    InputField("answer_ids", "ids"),
    InputField("claims", "claims"),
    InputField("correct", "tristate"),
    InputField("refused", "flag"),
    InputField("answerable", "flag"),
    InputField("query_ok", "tristate"),
    InputField("complete", "tristate"),
)}
#: The id-list fields (the text boxes of a case, in evidence order).
LIST_FIELDS: tuple[str, ...] = tuple(n for n, f in INPUT_FIELDS.items() if f.kind == "ids")
