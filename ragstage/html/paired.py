"""The comparison page's data: ``compare``'s numbers over every pair, the changed pairs listed first.

The numbers are counted as ``ragstage compare`` counts them (:func:`ragstage.report.diagnosed_by_query`
over each run, then :func:`ragstage.report.comparison_from_moves`): each question holds one small
integer per run (its bucket and flags), never its trace, so a million pairs fit in memory. The
page lists at most ``max_questions`` pairs, in the order a reader of a change needs them:

1. **newly critical**: a critical bucket or flag the question did not have before (the gate's third rule);
2. **broken**: right before, wrong after;
3. **fixed**: wrong before, right after;
4. **moved**: to another bucket without changing right or wrong (a failure moved to another stage);
5. **unchanged**: the same bucket in both runs;

each group in the after run's order. The traces of the pairs listed are kept as the after run
is read (only as many per group as could still be listed) and those of the before run read
again, only those. The page says, per transition (bucket before → bucket after), how many
pairs it counted but did not list.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..attribution import BUCKETS, FLAGS, Diagnosis, Outcome, diagnose
from ..fields import check_record
from ..trace import Trace, load_trace_line, read_json_lines
from ..trace_files import is_parquet, read_any
from .data import MAX_QUESTIONS, _common, _compact, _difference, _flag_mask, _side, _Strings, _tabled

__all__ = ["GROUPS", "comparison_data"]

#: The groups of pairs in the order the page lists them.
GROUPS: tuple[str, ...] = ("newly critical", "broken", "fixed", "moved", "unchanged")
_STRIDE = len(BUCKETS)


def _code(trace: Trace, d: Diagnosis) -> int:
    """A question's bucket and flags in one integer (what a run holds per question)."""
    return BUCKETS.index(d.stage.value) + _STRIDE * _flag_mask(d.flags)


@cache
def _decoded(code: int) -> Diagnosis:
    """The bucket and flags of :func:`_code` as a :class:`Diagnosis` (the rest left at its defaults)."""
    mask = code // _STRIDE
    return Diagnosis(Outcome(BUCKETS[code % _STRIDE]), flags=tuple(f for i, f in enumerate(FLAGS) if mask >> i & 1))


@cache
def pair_kind(before: int, after: int) -> tuple[str, tuple[str, ...], int]:
    """``(status, newly critical names, group index into GROUPS)`` of a pair of :func:`_code` values,
    as :class:`ragstage.gate.Pair` says them (the gate and the page cannot disagree)."""
    from ..gate import Pair

    a, z = _decoded(before), _decoded(after)
    pair = Pair("", None, None, a, z)  # type: ignore[arg-type] - status and criticality read the diagnoses only
    status, critical = pair.status, pair.newly_critical
    if critical:
        group = 0
    elif status in ("broken", "fixed"):
        group = GROUPS.index(status)
    else:
        group = 3 if a.stage != z.stage else 4
    return status, critical, group


class _Listing:
    """The pairs that may still be listed, per group (their ids and codes): a group keeps at most as many as
    the cap leaves after the groups before it (their counts only grow, so a trace dropped is never needed)."""

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.counts = [0] * len(GROUPS)
        self.kept: list[list[tuple[str, int, int]]] = [[] for _ in GROUPS]
        self.held = 0

    def room(self, group: int) -> float:
        return self.cap - sum(self.counts[:group])

    def offer(self, group: int, query_id: str, before: int, after: int) -> None:
        self.counts[group] += 1
        if len(self.kept[group]) < self.room(group):
            self.kept[group].append((query_id, before, after))
            self.held += 1
            if self.held > 2 * self.cap:
                self._trim()

    def _trim(self) -> None:
        for group, kept in enumerate(self.kept):
            room = max(0, self.room(group))
            if len(kept) > room:
                del kept[int(room):]
        self.held = sum(map(len, self.kept))

    def listed(self) -> Iterator[tuple[str, int, int]]:
        """The pairs the page lists, group by group, each in the after run's order."""
        self._trim()
        for kept in self.kept:
            yield from kept


def comparison_data(before: str | Path, after: str | Path, require: str = "any", intersect: bool = False, *,
                    max_questions: int | None = MAX_QUESTIONS) -> dict[str, Any]:
    """The comparison page's data: ``compare``'s dict, and the first ``max_questions`` pairs (all when
    None) in the order of :data:`GROUPS`, with how many of each transition were left out."""
    from ..gate import STATUSES
    from ..ingest.export_kinds import regular_file
    from ..report import comparison_from_moves, diagnosed_by_query

    if max_questions is not None and max_questions < 0:
        raise ValueError(f"max_questions must not be negative, got {max_questions}")
    listing = _Listing(math.inf if max_questions is None else max_questions)
    with regular_file(before) as first, regular_file(after) as second:  # a pipe is copied: each run is read twice
        a = diagnosed_by_query(read_any(first), require, "before", _code)

        def offered(trace: Trace, d: Diagnosis) -> int:
            code = _code(trace, d)
            was = a.get(trace.query_id)
            if was is not None:
                listing.offer(pair_kind(was, code)[2], trace.query_id, was, code)
            return code

        z = diagnosed_by_query(read_any(second), require, "after", offered)
        moves = Counter((a[q], z[q]) for q in a if q in z)
        c = comparison_from_moves(_buckets(moves), set(a) - set(z), set(z) - set(a), intersect=intersect)
        a.clear(), z.clear()  # a million questions' codes are not needed to build the page
        chosen = {query_id: i for i, (query_id, _, _) in enumerate(listing.listed())}
        reasons, strings = _Strings(), _Strings()
        status = {s: i for i, s in enumerate(STATUSES)}
        olds = {}
        for old in _selected(first, chosen):  # each before trace as its side of the page, and its fields
            d = diagnose(old, require)
            olds[old.query_id] = (_side(old, d, reasons, None), _compact(old), _code(old, d))
        questions: list[Any] = [None] * len(chosen)
        listed: Counter[tuple[int, int]] = Counter()
        for new in _selected(second, chosen):
            side_a, fields, was = olds.pop(new.query_id)
            d = diagnose(new, require)
            kind, critical, _ = pair_kind(was, _code(new, d))
            change = _difference(fields, _compact(new))  # before tabling: only what changed is tabled twice
            side_a["t"] = _tabled(fields, strings)
            side_z = _side(new, d, reasons, None)
            side_z.update(d=_tabled(change["d"], strings), gone=change["gone"])
            questions[chosen[new.query_id]] = {"id": new.query_id, "st": status[kind], "crit": list(critical),
                                               "a": side_a, "z": side_z}
            listed[was, _code(new, d)] += 1
    data = _common("compare")
    data.update({
        "files": [str(before), str(after)], "require": require, "intersect": intersect,
        "comparison": c.to_dict(),
        "right_before": c.both_right + c.broken, "right_after": c.both_right + c.fixed,
        "both_right": c.both_right, "both_wrong": c.both_wrong,
        "only_before": len(c.only_before), "only_after": len(c.only_after),
        "statuses": list(STATUSES), "groups": list(GROUPS), "listed": len(questions),
        "left_out": _left_out(moves, listed),
        "reasons": reasons.items, "strings": strings.items, "questions": questions,
    })
    data["_comparison"] = c
    return data


def _buckets(moves: Counter[tuple[int, int]]) -> Counter[tuple[str, str]]:
    """Pair counts by (bucket before, bucket after), flags set aside: ``compare``'s migration."""
    out: Counter[tuple[str, str]] = Counter()
    for (x, y), k in moves.items():
        out[BUCKETS[x % _STRIDE], BUCKETS[y % _STRIDE]] += k
    return out


def _left_out(moves: Counter[tuple[int, int]], listed: Counter[tuple[int, int]]) -> list[dict[str, Any]]:
    """Per transition, the pairs counted but not listed: ``{"group", "before", "after", "count"}``,
    in the page's group order, then the larger counts first."""
    out: Counter[tuple[int, str, str]] = Counter()
    for pair, k in moves.items():
        if k > listed[pair]:
            x, y = pair
            out[pair_kind(x, y)[2], BUCKETS[x % _STRIDE], BUCKETS[y % _STRIDE]] += k - listed[pair]
    return [{"group": GROUPS[g], "before": b, "after": z, "count": k}
            for (g, b, z), k in sorted(out.items(), key=lambda item: (item[0][0], -item[1], item[0][1:]))]


def _selected(path: Path, wanted: Mapping[str, Any]) -> Iterator[Trace]:
    """The traces of the ``wanted`` questions in ``path`` (read and checked before), in file order,
    read until the last of them is found. In JSON Lines only the lines of those questions are
    checked and made traces; the other lines are only parsed, to read their ``query_id``."""
    if not wanted:
        return
    left = len(wanted)
    if is_parquet(path):
        traces: Iterator[Any] = (t for t in read_any(path) if t.query_id in wanted)
    else:
        def parse(raw: Any) -> Trace | None:
            key = raw.get("query_id")
            if (key if type(key) is str else str(key)) not in wanted:
                return None
            return Trace.from_checked(check_record(raw))

        traces = (t for _, t in read_json_lines(path, parse, decode=load_trace_line) if t is not None)
    try:
        for trace in traces:
            yield trace
            left -= 1
            if not left:
                break
    finally:
        traces.close()
