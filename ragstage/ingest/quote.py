"""Gold spans from quoted sentences: the label a person can write by copying text.

A span label (``{"id", "start", "end"}``, see :mod:`ragstage.ingest.gold`) survives
re-chunking, but nobody counts characters by hand. A labeller copies the sentence that answers
the question out of the document; :func:`quote_span` finds it and returns the offsets. The
copy is matched exactly except for whitespace (a copy from a rendered page re-wraps lines and
collapses runs of spaces), and offsets are in the document's own text, so the span's text
is the document's, not the copy's. A quote that is absent, or present more than once without
saying which, is an error: a label must point at one place.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from .spans import SpanError

__all__ = ["quote_span", "quote_label", "quoted_ids"]

_SPACE = re.compile(r"\s+")


def _squeezed(text: str) -> tuple[str, list[int]]:
    """``text`` with every whitespace run as one space, and each kept character's offset in ``text``."""
    out: list[str] = []
    where: list[int] = []
    pos = 0
    for match in _SPACE.finditer(text):
        out.extend(text[pos:match.start()])
        where.extend(range(pos, match.start()))
        out.append(" ")
        where.append(match.start())
        pos = match.end()
    out.extend(text[pos:])
    where.extend(range(pos, len(text)))
    return "".join(out), where


def quote_span(document: str, quote: str, doc_id: str, occurrence: int | None = None) -> dict[str, str | int]:
    """The span label ``{"id": doc_id, "start", "end"}`` of ``quote`` in ``document`` (end exclusive).

    ``occurrence`` (0-based) picks one when the quote appears more than once; without it a
    repeated quote is an error that says how many times it appears. Raises
    :class:`~ragstage.ingest.spans.SpanError` naming the document when the quote is empty or
    absent (and says so when it would match ignoring case).
    """
    wanted = " ".join(quote.split())
    if not wanted:
        raise SpanError(f"document {doc_id}: the quote is empty", field="quote")
    text, where = _squeezed(document)
    starts = [m.start() for m in re.finditer(re.escape(wanted), text)]
    if not starts:
        hint = " (it does ignoring case: copy it exactly)" if wanted.lower() in text.lower() else ""
        raise SpanError(f"document {doc_id}: quote {wanted[:60]!r} not found{hint}", field="quote")
    if occurrence is None and len(starts) > 1:
        raise SpanError(f"document {doc_id}: quote {wanted[:60]!r} appears {len(starts)} times; "
                        "pass occurrence= to say which, or quote more of the sentence", field="quote")
    index = occurrence or 0
    if not 0 <= index < len(starts):
        raise SpanError(f"document {doc_id}: occurrence {index} asked, the quote appears {len(starts)} time(s)",
                        field="quote")
    first = starts[index]
    return {"id": doc_id, "start": where[first], "end": where[first + len(wanted) - 1] + 1}


def quote_label(query_id: str, query: str, documents: Mapping[str, str], doc_id: str, quote: str,
                reference: str | None = None, occurrence: int | None = None) -> dict[str, object]:
    """One line of a labels file (``query_id``, ``query``, ``gold_spans``, and ``reference`` when
    given) whose gold is the quoted passage of ``documents[doc_id]``.

    A ``reference`` (the short answer a judge looks for) must lie inside the quote: a label
    whose answer is not in its own evidence is a labelling mistake caught here, not in a run.
    """
    if doc_id not in documents:
        raise SpanError(f"no document {doc_id!r} among {len(documents)} documents", field="id")
    span = quote_span(documents[doc_id], quote, doc_id, occurrence)
    label: dict[str, object] = {"query_id": query_id, "query": query, "gold_spans": [span]}
    if reference is not None:
        quoted = documents[doc_id][int(span["start"]):int(span["end"])]
        if " ".join(reference.split()) not in " ".join(quoted.split()):
            raise SpanError(f"{query_id}: reference {reference!r} is not inside the quoted span of document {doc_id}",
                            field="reference")
        label["reference"] = reference
    return label


def quoted_ids(quotes: Iterable[str], contents: Mapping[str, str]) -> list[str]:
    """The ids of the chunks (``id -> normalised content``) that hold one of the quoted sentences,
    whitespace aside, in the chunks' order: gold found in the text itself, for chunks that carry
    no document or offsets to locate them by."""
    from .recover import normalise

    wanted = [normalise(q) for q in quotes]
    return [cid for cid, text in contents.items() if any(q and q in text for q in wanted)]
