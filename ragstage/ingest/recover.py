"""Prompt ids recovered from the prompt text: which candidates reached the model, intact.

Most systems log the prompt *text*, not the ids of the passages in it (*Diagnosing RAG
Failure Modes*: missing prompt ids is the most common gap). The ids can be recovered: a
candidate reached the prompt when its whole content appears in it, whitespace normalised. A
candidate whose beginning or end appears but not the whole was cut (a budget that stops
mid-passage): it did **not** reach the prompt intact (the context-assembly question of *Which
RAG component broke?*), so it is not a prompt id, and it is reported as truncated instead of
silently counted either way.
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

__all__ = ["normalise", "Recovery", "recover_prompt_ids", "MIN_FRAGMENT"]

_MASK = "\x00"
#: The shortest beginning or end of a passage taken as a sign that it was cut (characters,
#: after normalising; half the passage for passages shorter than twice this).
MIN_FRAGMENT = 40


def normalise(text: str) -> str:
    """Whitespace runs to one space, ends stripped: templates re-wrap and re-indent text."""
    return " ".join(text.split())


class Recovery(NamedTuple):
    """Ids found whole in the prompt (in candidate order) and ids found only in part."""

    prompt: tuple[str, ...]
    truncated: tuple[str, ...]


def _longest_present(text: str, haystack: str, from_end: bool) -> int:
    """Length of the longest prefix (or suffix) of ``text`` found in ``haystack``.

    Containment is monotone in the length (a shorter prefix of a present prefix is present),
    so a binary search needs O(log n) substring tests.
    """
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        piece = text[-mid:] if from_end else text[:mid]
        if piece in haystack:
            lo = mid
        else:
            hi = mid - 1
    return lo


def recover_prompt_ids(contents: Mapping[str, str], prompt: str | Iterable[str],
                       min_fragment: int = MIN_FRAGMENT) -> Recovery:
    """Which candidates (``id -> content``) appear whole in the prompt, and which only in part.

    ``prompt`` is the text sent to the model (or several texts, for a synthesis that spread the
    context over several calls). A candidate with empty content can be neither. Before the
    partial test, the places where whole candidates sit are masked out, so a chunk whose
    overlap with its neighbour shows up inside that neighbour is not taken for a cut chunk.
    """
    text = normalise(prompt if isinstance(prompt, str) else "\n".join(prompt))
    norm = {cid: normalise(c) for cid, c in contents.items()}
    whole = [cid for cid, c in norm.items() if c and c in text]
    masked = text
    for cid in sorted(whole, key=lambda i: -len(norm[i])):  # longest first: no mask splits another
        masked = masked.replace(norm[cid], _MASK)
    truncated = []
    for cid, c in norm.items():
        if not c or cid in whole:
            continue
        need = min(min_fragment, max(1, len(c) // 2))
        if (_longest_present(c, masked, from_end=False) >= need
                or _longest_present(c, masked, from_end=True) >= need):
            truncated.append(cid)
    return Recovery(tuple(whole), tuple(truncated))
