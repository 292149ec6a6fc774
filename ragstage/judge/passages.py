"""Where a judge (or a person filling a labelling sheet) reads the candidates' text.

Traces keep candidate ids, not their text: a ragstage run keeps the corpus apart and writes the
passages of each prompt to ``prompts.jsonl``; an ingested trace keeps the chunk ids its spans
named. So the text comes from one of two places a practitioner has:

* a **corpus file**: JSON Lines with ``_id`` (or ``id``), ``text`` and an optional ``title`` (a
  BEIR ``corpus.jsonl``, or the chunk store of an application exported with the ids its traces
  carry);
* the **prompts files** of ragstage runs (``prompts.jsonl``: ``query_id``, ``query`` and the
  assembled ``context`` of ``[ID x] title. text`` blocks): they hold only the passages that
  reached a prompt, so alone they leave most candidates without text.

Both give the same text for the same passage (``title. text``: :func:`.relevance.passage_text`), so
judgements cached from one source serve the other.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from ..errors import TraceError
from ..trace import read_json_lines
from .relevance import passage_text

__all__ = ["read_corpus", "read_prompt_passages", "read_passages"]

_BLOCK = re.compile(r"^\[ID ([^\]\s]+)\] ", re.MULTILINE)


def _corpus_record(record: object) -> tuple[str, str]:
    if not isinstance(record, dict):
        raise TraceError("expected a JSON object with '_id' (or 'id') and 'text'")
    doc_id = record.get("_id", record.get("id"))
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise TraceError("expected a string id", field="_id")
    text, title = record.get("text"), record.get("title", "")
    if not isinstance(text, str) or not text.strip():
        raise TraceError("expected a non-blank string", field="text")
    if not isinstance(title, str):
        raise TraceError("expected a string", field="title")
    return str(doc_id), passage_text(title, text)


def read_corpus(path: str | Path) -> dict[str, str]:
    """``doc_id -> text`` of a corpus JSON Lines file; a bad line names the file, the line and the field;
    an id given twice is an error (two texts for one candidate would make the judge's answer depend on order)."""
    out: dict[str, str] = {}
    for lineno, (doc_id, text) in read_json_lines(path, _corpus_record, TraceError):
        if doc_id in out:
            raise TraceError(f"{doc_id!r} appears twice", path=str(path), line=lineno, field="_id")
        out[doc_id] = text
    return out


def _prompt_record(record: object) -> list[tuple[str, str]]:
    if not isinstance(record, dict) or not isinstance(record.get("context"), str):
        raise TraceError("expected the assembled passages as a string", field="context")
    context = record["context"]
    marks = list(_BLOCK.finditer(context))
    return [(m.group(1), context[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(context)].strip())
            for i, m in enumerate(marks)]


def read_prompt_passages(path: str | Path) -> dict[str, str]:
    """``doc_id -> text`` of every passage in a run's ``prompts.jsonl`` (the passages that reached a prompt)."""
    out: dict[str, str] = {}
    for lineno, blocks in read_json_lines(path, _prompt_record, TraceError):
        for doc_id, text in blocks:
            if out.setdefault(doc_id, text) != text:
                raise TraceError(f"passage {doc_id!r} has another text than on an earlier line", path=str(path),
                                 line=lineno, field="context")
    return out


def read_passages(corpus: Iterable[str | Path] = (), prompts: Iterable[str | Path] = ()) -> dict[str, str]:
    """Every passage text the given files hold; a passage with two different texts is an error naming both files."""
    out: dict[str, str] = {}
    origin: dict[str, str] = {}
    sources = [(p, read_corpus) for p in corpus] + [(p, read_prompt_passages) for p in prompts]
    if not sources:
        raise ValueError("no passage texts: give a corpus file (--corpus) or a run's prompts file (--prompts)")
    for path, reader in sources:
        for doc_id, text in reader(path).items():
            if doc_id in out and out[doc_id] != text:
                raise ValueError(f"{path}: passage {doc_id!r} has another text than in {origin[doc_id]}")
            out.setdefault(doc_id, text)
            origin.setdefault(doc_id, str(path))
    return out
