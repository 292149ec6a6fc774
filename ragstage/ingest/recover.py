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

import re
from typing import Iterable, Mapping, NamedTuple

__all__ = ["normalise", "unescaped", "Recovery", "recover_prompt_ids", "MIN_FRAGMENT"]

_MASK = "\x00"
#: The shortest beginning or end of a passage taken as a sign that it was cut (characters,
#: after normalising; half the passage for passages shorter than twice this).
MIN_FRAGMENT = 40
_OPENING = 32  # characters of a candidate looked for before the whole of it


def normalise(text: str) -> str:
    """Whitespace runs to one space, ends stripped: templates re-wrap and re-indent text."""
    return " ".join(text.split())


_ESCAPE = re.compile(r"\\([nrt'\"\\])")
_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", "'": "'", '"': '"', "\\": "\\"}


def unescaped(text: str) -> str | None:
    """``text`` with Python's string escapes undone (``\\n`` to a line break), when it has an escaped
    line break; else None. A template given a list of chunks renders the list's Python form
    (LlamaIndex's ``simple_summarize``): a chunk of several lines is there with its breaks
    escaped, and found whole only in the text unescaped."""
    if "\\n" not in text:
        return None
    return _ESCAPE.sub(lambda m: _ESCAPED[m.group(1)], text)


class Recovery(NamedTuple):
    """Ids found whole in the prompt (in candidate order) and ids found only in part."""

    prompt: tuple[str, ...]
    truncated: tuple[str, ...]


def recover_prompt_ids(contents: Mapping[str, str], prompt: str | Iterable[str],
                       min_fragment: int = MIN_FRAGMENT, *, normalised: bool = False) -> Recovery:
    """Which candidates (``id -> content``) appear whole in the prompt, and which only in part.

    ``prompt`` is the text sent to the model (or several texts, for a synthesis that spread the
    context over several calls). A candidate with empty content can be neither. Before the
    partial test, the places where whole candidates sit are masked out, so a chunk whose
    overlap with its neighbour shows up inside that neighbour is not taken for a cut chunk.
    ``normalised=True`` says the contents are already :func:`normalise`'d (the ingest has them so).
    """
    text = normalise(prompt if isinstance(prompt, str) else "\n".join(prompt))
    norm = contents if normalised else {cid: normalise(c) for cid, c in contents.items()}
    whole, suspects = [], []  # suspects: candidates not whole whose beginning or end is in the text
    for cid, c in norm.items():
        if not c:
            continue
        # c is in the text only if its opening is: that short search runs first, since a search for a
        # long needle prepares the needle each time (a candidate is a whole passage); where the
        # opening is, c usually is too, which a comparison tells
        at = text.find(c[:_OPENING])
        opening = at >= 0
        if opening and (text.startswith(c, at) or c in text):
            whole.append(cid)
            continue
        need = min(min_fragment, max(1, len(c) // 2))
        # a prefix (suffix) at least ``need`` long is present iff the one ``need`` long is; a
        # beginning that holds the opening is not in the text when the opening is not
        head, tail = c[:need], c[-need:]
        if ((opening or need < _OPENING) and head in text) or tail in text or _MASK in c:
            suspects.append((cid, head, tail))
    if not suspects:  # masking only takes text away: a fragment (with no mask character) not in the
        # text is not in the masked text either
        return Recovery(tuple(whole), ())
    masked = text
    for cid in sorted(whole, key=lambda i: -len(norm[i])):  # longest first: no mask splits another
        masked = masked.replace(norm[cid], _MASK)
    truncated = [cid for cid, head, tail in suspects if head in masked or tail in masked]
    return Recovery(tuple(whole), tuple(truncated))
