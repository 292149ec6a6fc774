"""Prompt assembly: whole passages, in rank order, until the token budget is spent.

The rule is deliberately simple and strict: take the top ``top`` reranked passages in order,
each formatted ``[ID x] title. text``, and stop at the FIRST one that would push the prompt
over the budget. Later (shorter) passages are not tried: skipping ahead would let a low-ranked
passage in while a better one stays out, and the trace could no longer say "everything above
rank r reached the prompt". Passages are never cut mid-text, because a truncated abstract can
lose exactly the sentence that carries the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .data import Corpus, Document

__all__ = ["AssembledPrompt", "assemble_prompt", "format_passage", "SEPARATOR"]

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class AssembledPrompt:
    """The passages block that goes into the prompt, and which ids made it in.

    ``stopped_at`` is the id of the first passage that did not fit (None when all fitted).
    """

    context: str
    ids: tuple[str, ...]
    tokens: int
    stopped_at: str | None = None


def format_passage(doc_id: str, doc: Document) -> str:
    """``[ID x] title. text``; no extra full stop when the title already ends a sentence."""
    title = doc.get("title", "").strip()
    if title and title[-1] not in ".?!":
        title += "."
    return f"[ID {doc_id}] {title} {doc['text']}" if title else f"[ID {doc_id}] {doc['text']}"


def assemble_prompt(ranked_ids: Sequence[str], corpus: Corpus,
                    count_tokens: Callable[[str], int], budget: int = 1024, top: int = 5) -> AssembledPrompt:
    """Fill the budget with whole passages from ``ranked_ids[:top]``, in order (see module doc).

    Tokens are counted on the joined block (passages separated by a blank line), so the count
    is the generator tokenizer's own count of what it will read, separators included.
    """
    if budget < 0 or top < 0:
        raise ValueError(f"budget and top must be >= 0, got {budget} and {top}")
    blocks: list[str] = []
    ids: list[str] = []
    used = 0
    for doc_id in ranked_ids[:top]:
        candidate = SEPARATOR.join([*blocks, format_passage(doc_id, corpus[doc_id])])
        tokens = count_tokens(candidate)
        if tokens > budget:
            return AssembledPrompt(SEPARATOR.join(blocks), tuple(ids), used, stopped_at=doc_id)
        blocks.append(format_passage(doc_id, corpus[doc_id]))
        ids.append(doc_id)
        used = tokens
    return AssembledPrompt(SEPARATOR.join(blocks), tuple(ids), used)
