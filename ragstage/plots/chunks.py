"""Chapter 7: one document cut two ways, and where a gold span falls among the chunks.

A span label (document, start, end) survives a re-chunking, a chunk id does not: after the
cut moves, a span that straddled a boundary may sit inside one chunk, or the other way round.
:func:`chunking_plot` draws a document's chunks under each chunking as a row of boxes along
its characters, with the gold span as a band across every row; the chunks that overlap it
(the chunks that count as gold) are filled in.
"""

from __future__ import annotations

import textwrap
from typing import Any, Mapping, Sequence

from ._figure import new_axes
from ._style import plain

__all__ = ["document_chunks", "chunking_plot"]

_GOLD = "#ffbf00"


def document_chunks(locations: Mapping[str, tuple[str, int, int]], document: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each chunk of ``document``, in order, from ``chunk id -> (doc, start, end)``

    (what :func:`ragstage.ingest.demo.chunk_locations` returns).
    """
    spans = sorted((start, end) for doc, start, end in locations.values() if doc == document)
    if not spans:
        raise ValueError(f"no chunk of document {document!r}")
    return spans


def _overlaps(span: tuple[int, int], gold: tuple[int, int]) -> bool:
    return span[0] < gold[1] and gold[0] < span[1]


def chunking_plot(chunkings: Mapping[str, Sequence[tuple[int, int]]], gold: tuple[int, int], *,
                  length: int | None = None, title: str | None = None, ax: Any = None) -> Any:
    """A document's chunks under each chunking (one row each) and the gold span across them.

    ``chunkings`` maps a row label (e.g. ``"200 characters"``) to that chunking's ``(start,
    end)`` spans of the document; ``gold`` is the labelled span; ``length`` the document's
    length (default: the end of its last chunk). A chunk that overlaps the gold span is filled
    and framed; each row's label says how many chunks hold part of the span. Each chunk box
    is a patch with ``gid`` ``"<row label>:<i>"``, and ``"<row label>:<i>:gold"`` when it is gold.
    """
    from matplotlib.patches import Rectangle

    if not chunkings:
        raise ValueError("pass at least one chunking")
    start, end = gold
    if not 0 <= start < end:
        raise ValueError(f"gold span must have 0 <= start < end, got {gold}")
    total = length if length is not None else max(e for spans in chunkings.values() for _, e in spans)
    fig, ax = new_axes(ax, (9.0, 1.2 + 0.75 * len(chunkings)))
    names = []
    for row, (name, spans) in enumerate(chunkings.items()):
        hits = 0
        for i, (s, e) in enumerate(sorted(spans)):
            gold_chunk = _overlaps((s, e), gold)
            hits += gold_chunk
            shades = ("#1f77b4", "#6baed6") if gold_chunk else ("#c6d3e6", "#e3e9f3")
            ax.add_patch(Rectangle((s, row - 0.32), e - s, 0.64, gid=f"{name}:{i}" + (":gold" if gold_chunk else ""),
                                   facecolor=shades[i % 2], edgecolor="black" if gold_chunk else "white",
                                   linewidth=1.2 if gold_chunk else 0.8, zorder=2))
            ax.text((s + e) / 2, row, f"chunk {i + 1}", ha="center", va="center", fontsize="x-small", zorder=5,
                    color="white" if gold_chunk and i % 2 == 0 else "black", clip_on=True)
        names.append(f"{plain(name)}\n{hits} gold chunk{'s' if hits != 1 else ''}")
    ax.axvspan(start, end, color=_GOLD, alpha=0.5, zorder=1, label=f"gold span, characters {start}-{end}")
    for edge in (start, end):
        ax.axvline(edge, color="#b35900", linewidth=1.5, linestyle="--", zorder=4)
    ax.set_xlim(0, total)
    ax.set_ylim(len(chunkings) - 0.5, -0.5)
    ax.set_yticks(range(len(chunkings)), names)
    ax.set_xlabel("character offset in the document")
    ax.legend(frameon=False, fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.0), borderaxespad=0.2)
    if title:
        ax.set_title(textwrap.fill(title, 90), pad=20, fontsize="medium")
    return fig


