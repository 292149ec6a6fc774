"""The attribution and flag tables as plain rows, computed from counts.

The command line prints these tables for files of a million traces; building them needs
only the counts and the Wilson interval, so it should not wait for pandas to import.
:mod:`ragstage.report` wraps the same rows in DataFrames for the notebooks, so the two
outputs cannot drift apart.
"""

from __future__ import annotations

import unicodedata
from typing import Mapping

from .attribution import BUCKETS, FLAGS, SEVERITY
from .stats import wilson

__all__ = ["TABLE_COLUMNS", "FLAG_COLUMNS", "bucket_rows", "check_buckets", "flag_rows", "printable", "table_cell"]

TABLE_COLUMNS = ["group", "stage", "count", "n", "share", "low", "high"]
FLAG_COLUMNS = ["group", "flag", "severity", "count", "n", "share", "low", "high"]


_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Bidirectional overrides and isolates: they reorder what a reader sees around them.
_BIDI = frozenset(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
_V1_COMMAND, _V1_SHOWN = "##[", "#\\x23["


def _escape(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short:
        return short
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _acts(char: str) -> bool:
    """A character a terminal, a log reader or an XML parser acts on, or that XML 1.0 forbids."""
    if char.isprintable() and char not in _BIDI:
        return False
    category = unicodedata.category(char)
    if category in ("Cc", "Cs", "Zl", "Zp") or char in _BIDI:
        return True
    code = ord(char)
    return category == "Cn" and (0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE)


def printable(text: str) -> str:
    """``text`` on one line, every control, separator, bidi control and non-character as an escape.

    Names and ids come from data: printed raw, a newline in one starts a line of its own
    (which a CI runner may take as a workflow command), an ESC drives the terminal, and
    ``\\u0000`` or ``\\ufffe`` make an XML file unreadable. Escaped (``\\n``, ``\\x1b``,
    ``\\ufffe``) they stay visible and inert; every other character is kept as it is, but for
    the second ``#`` of ``##[`` (shown ``#\\x23[``): GitHub Actions runs ``##[command]`` found
    anywhere in a line of output (the older form of its workflow commands).
    """
    if text.isprintable() and not _BIDI.intersection(text):
        return text.replace(_V1_COMMAND, _V1_SHOWN)
    return "".join(_escape(c) if _acts(c) else c for c in text).replace(_V1_COMMAND, _V1_SHOWN)


def table_cell(text: str) -> str:
    """A name or id as a cell of a printed table: :func:`printable`, and in double quotes unless it
    begins with a letter or a digit.

    A table's first column holds names from data, and a line of output that begins with ``::``
    (leading blanks skipped) is run by GitHub Actions as a workflow command: quoted, a name such
    as ``::error title=x::y`` begins its line with ``"`` and is only shown. The names people give
    their pipelines (``baseline``, ``hybrid-v2``) stay as they are.
    """
    shown = printable(text)
    if shown[:1].isalnum():
        return shown
    return f'"{shown}"'


def check_buckets(counts: Mapping[str, Mapping[str, int]]) -> None:
    for group, buckets in counts.items():
        unknown = set(buckets) - set(BUCKETS)
        if unknown:
            raise ValueError(f"group {group!r}: unknown bucket(s) {sorted(unknown)}; known: {', '.join(BUCKETS)}")


def bucket_rows(counts: Mapping[str, Mapping[str, int]], *, empty: bool = False) -> list[tuple]:
    """One row per (group, bucket) in bucket order: count, n, share and its Wilson interval.

    ``n`` is every question in the group, so the shares of a group add up to one.
    ``empty=True`` keeps buckets with a count of zero (their interval is still informative:
    0 of 300 is not the same claim as 0 of 5).
    """
    check_buckets(counts)
    rows = []
    for group, buckets in counts.items():
        n = sum(buckets.values())
        if n == 0:
            continue
        for stage in BUCKETS:
            k = int(buckets.get(stage, 0))
            if k == 0 and not empty:
                continue
            low, high = wilson(k, n)
            rows.append((group, stage, k, n, k / n, low, high))
    return rows


def flag_rows(flags: Mapping[str, Mapping[str, int]], totals: Mapping[str, int]) -> list[tuple]:
    """One row per (group, flag): severity, count, traces in the group, share, Wilson interval.

    Every flag gets a row, zero counts included: "no fabricated citation in 40 answers" is a
    finding with an interval of its own.
    """
    rows = []
    for group, n in totals.items():
        if n <= 0:
            continue
        for flag in FLAGS:
            k = int(flags.get(group, {}).get(flag, 0))
            low, high = wilson(k, n)
            rows.append((group, flag, SEVERITY[flag], k, int(n), k / n, low, high))
    return rows
