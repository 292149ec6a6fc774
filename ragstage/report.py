"""Tables a reader acts on: bucket shares with intervals, the stage funnel, paired comparisons.

Everything here starts from bucket counts, so the same code reads traces a reader made
(:func:`attribution_table`, :func:`funnel`) and counts someone published
(:func:`table_from_counts`, :func:`funnel_from_counts`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import pandas as pd

from .attribution import BUCKETS, RIGHT, UNDECIDED, Diagnosis, Outcome, diagnose
from .rows import FLAG_COLUMNS, TABLE_COLUMNS, bucket_rows, check_buckets, flag_rows
from .stats import holm, mcnemar, wilson
from .tally import Tally, tally_records
from .trace import Trace

__all__ = [
    "count_buckets",
    "table_from_counts",
    "attribution_table",
    "funnel_from_counts",
    "funnel",
    "funnel_from_tally",
    "stage_entrants",
    "count_flags",
    "flag_table_from_counts",
    "flag_table",
    "Comparison",
    "compare",
    "diagnosed_by_query",
    "comparison_from_moves",
    "comparison_table",
]

FUNNEL_COLUMNS = ["group", "stage", "entered", "survived", "rate", "low", "high"]


def count_buckets(traces: Iterable[Trace], by: str | None = "pipeline",
                  require: str = "any") -> dict[str, Counter[str]]:
    """``{group: Counter(bucket -> count)}``; ``by`` is a trace field, a ``meta`` key, or None."""
    return tally_records(traces, by, require).buckets


def table_from_counts(counts: Mapping[str, Mapping[str, int]], *, empty: bool = False) -> pd.DataFrame:
    """The attribution table of bucket counts (see :func:`ragstage.rows.bucket_rows`)."""
    return pd.DataFrame(bucket_rows(counts, empty=empty), columns=TABLE_COLUMNS)


def attribution_table(traces: Iterable[Trace], by: str | None = "pipeline", require: str = "any",
                      *, empty: bool = False) -> pd.DataFrame:
    """Diagnose every trace and tabulate the buckets per group with Wilson intervals."""
    return table_from_counts(count_buckets(traces, by, require), empty=empty)


# The evidence passes these stages in order. Each entry: the stage, the buckets that are a
# loss *at* it, and the buckets that leave the funnel just before it without being a loss
# (their outcome there is unknown: prompt ids not logged, an answer nobody judged).
_FUNNEL = (
    ("query_understanding", (Outcome.QUERY_UNDERSTANDING,), ()),
    ("retrieval", (Outcome.RETRIEVAL,), ()),
    ("reranking", (Outcome.RERANKING,), ()),
    ("prompt_assembly", (Outcome.PROMPT_ASSEMBLY,), (Outcome.NOT_LOGGED,)),
    ("generation", (Outcome.GENERATION, Outcome.SOURCE_OR_LABEL), (Outcome.UNJUDGED,)),
)
# Questions outside the funnel: no relevance judgement applies to them.
_OUTSIDE = frozenset({Outcome.ENDPOINT_UNAVAILABLE.value, Outcome.LABEL_MISSING.value,
                      Outcome.CORRECT_REFUSAL.value, Outcome.MISSING_REFUSAL.value})


def funnel_from_counts(counts: Mapping[str, Mapping[str, int]], *, stages: Iterable[str] | None = None,
                       qu_measured: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Conditional survival of each stage over its own denominator, with Wilson intervals.

    Reranking survival is over the questions whose gold was retrieved, assembly over those
    whose gold survived reranking and whose prompt ids were logged, generation (answered
    correctly) over those whose gold reached the prompt and whose answer was judged.
    Unanswerable, unlabelled and failed questions have no place in the funnel. Query
    understanding is scored only on the questions that measured it: ``qu_measured`` gives
    their number per group (default: all of them); the unmeasured ones pass straight on to
    retrieval, neither surviving nor failing a stage nobody judged.

    A stage with no question entering it, or one left out of ``stages`` (a pipeline with no
    reranker, a log that never judged query understanding), gets no row. By default query
    understanding is shown only for a group whose counts name that bucket: published
    counts that never mention it did not measure it.
    """
    check_buckets(counts)
    rows = []
    for group, buckets in counts.items():
        keep = set(stages) if stages is not None else (
            {s for s, _, _ in _FUNNEL} - (set() if Outcome.QUERY_UNDERSTANDING.value in buckets
                                          else {Outcome.QUERY_UNDERSTANDING.value}))
        entered = sum(v for k, v in buckets.items() if k not in _OUTSIDE)
        for stage, losses, leave in _FUNNEL:
            entered -= sum(int(buckets.get(s.value, 0)) for s in leave)
            lost = sum(int(buckets.get(s.value, 0)) for s in losses)
            judged = entered
            if stage == Outcome.QUERY_UNDERSTANDING.value and qu_measured is not None:
                judged = int(qu_measured.get(group, 0))
                if judged < lost or judged > entered:
                    raise ValueError(f"group {group!r}: {judged} questions measured query understanding, "
                                     f"but {lost} failed it and {entered} entered the funnel")
            if stage in keep and judged > 0:
                low, high = wilson(judged - lost, judged)
                rows.append((group, stage, judged, judged - lost, (judged - lost) / judged, low, high))
            entered -= lost
    return pd.DataFrame(rows, columns=FUNNEL_COLUMNS)


def funnel(traces: Iterable[Trace], by: str | None = "pipeline", require: str = "any") -> pd.DataFrame:
    """The conditional stage funnel of a set of traces (see :func:`funnel_from_counts`).

    Query understanding gets a row only when some trace judged it (``query_ok`` set), over
    those traces only; reranking only when some trace in the group had a reranking stage:
    an unmeasured stage is not a healthy one, so it is not shown as 100% survival.
    """
    return funnel_from_tally(tally_records(traces, by, require))


def funnel_from_tally(tally: Tally) -> pd.DataFrame:
    """The funnel of :func:`funnel` from counts already made (by any reader: see :mod:`ragstage.tally`)."""
    frames = []
    for group, buckets in tally.buckets.items():
        judged = tally.query_judged.get(group, {})
        stages = {"retrieval", "prompt_assembly", "generation"}
        stages |= {"query_understanding"} if judged else set()
        stages |= {"reranking"} if tally.reranked[group] else set()
        qu_measured = {group: sum(k for bucket, k in judged.items() if bucket not in _OUTSIDE)}
        frames.append(funnel_from_counts({group: buckets}, stages=stages, qu_measured=qu_measured))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FUNNEL_COLUMNS)


# For each bucket inside the funnel: the index of the last stage whose outcome it knows.
_LAST_KNOWN = {Outcome.NONE.value: len(_FUNNEL) - 1}
for _i, (_, _losses, _leave) in enumerate(_FUNNEL):
    _LAST_KNOWN.update({s.value: _i for s in _losses})
    _LAST_KNOWN.update({s.value: _i - 1 for s in _leave})
_STAGE_INDEX = {name: i for i, (name, _, _) in enumerate(_FUNNEL)}


def stage_entrants(traces: Iterable[Trace], stage: str, require: str = "any") -> list[Trace]:
    """The traces in one funnel stage's denominator: they reached ``stage`` with a known outcome.

    The same sets :func:`funnel` counts, for computing a stage's graded metric (MRR on the
    questions that entered retrieval, nDCG on those that entered reranking, context precision
    on those whose gold reached the prompt) on exactly the questions its survival rate uses.
    For ``query_understanding`` only the traces that measured it (``query_ok`` set) enter.
    """
    if stage not in _STAGE_INDEX:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(_STAGE_INDEX)}")
    index = _STAGE_INDEX[stage]
    out = []
    for trace in traces:
        bucket = diagnose(trace, require).stage.value
        if bucket in _OUTSIDE or _LAST_KNOWN[bucket] < index:
            continue
        if index == 0 and trace.query_ok is None:
            continue
        out.append(trace)
    return out


def count_flags(traces: Iterable[Trace], by: str | None = "pipeline") -> tuple[dict[str, Counter[str]], Counter[str]]:
    """``({group: Counter(flag -> count)}, Counter(group -> traces))``: flags are per answer."""
    tally = tally_records(traces, by)
    return tally.flags, Counter(tally.totals())


def flag_table_from_counts(flags: Mapping[str, Mapping[str, int]], totals: Mapping[str, int]) -> pd.DataFrame:
    """The flag table of flag counts and group sizes (see :func:`ragstage.rows.flag_rows`)."""
    return pd.DataFrame(flag_rows(flags, totals), columns=FLAG_COLUMNS)


def flag_table(traces: Iterable[Trace], by: str | None = "pipeline") -> pd.DataFrame:
    """Flags recorded on the answers (right or wrong), per group, with Wilson intervals."""
    return flag_table_from_counts(*count_flags(traces, by))


@dataclass(frozen=True)
class Comparison:
    """Two runs on the same questions: who was fixed, who was broken, and where they went."""

    n: int
    fixed: int
    broken: int
    both_right: int
    both_wrong: int
    p_value: float
    migration: pd.DataFrame = field(repr=False)
    only_before: tuple[str, ...] = ()
    only_after: tuple[str, ...] = ()
    undecided: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by ``ragstage compare --format json``."""
        migration: dict[str, dict[str, int]] = {}
        for src, row in self.migration.iterrows():
            cells = {dst: int(v) for dst, v in row.items() if v}
            if cells:
                migration[str(src)] = cells
        return {"n": self.n, "fixed": self.fixed, "broken": self.broken, "undecided": self.undecided,
                "p_value": self.p_value, "migration": migration}


def diagnosed_by_query(traces: Iterable[Trace], require: str, side: str,
                       keep: Callable[[Trace, Diagnosis], Any] = lambda trace, d: d.stage.value) -> dict[str, Any]:
    """``{query_id: keep(trace, diagnosis)}`` over one run, read once (by default each question's bucket).

    A question twice in a run is an error naming ``side``: a paired comparison of a run
    with repeats would count one question twice. ``keep`` decides what is held per question,
    so a million questions cost a dict of small values, never their traces.
    """
    out: dict[str, Any] = {}
    for trace in traces:
        if trace.query_id in out:
            raise ValueError(f"{side}: query_id {trace.query_id!r} appears twice; "
                             "compare one pipeline's run against another's")
        out[trace.query_id] = keep(trace, diagnose(trace, require))
    return out


def compare(before: Iterable[Trace], after: Iterable[Trace], *, intersect: bool = False,
            require: str = "any") -> Comparison:
    """Pair two runs by ``query_id``: fixed, broken, exact McNemar p, bucket migrations.

    "Right" means bucket ``none`` or ``correct_refusal``. A question whose outcome is
    unknown in either run (``unjudged``, ``not_logged``) is ``undecided``: it is neither
    fixed nor broken, so a run that stopped logging prompt ids does not "break" what it
    answered, and it stays out of the McNemar test. The migration matrix (rows: the bucket
    before, columns: after) still shows where every question went: did the change reduce
    failures, or move them to another stage? Questions present in only one run are an
    error unless ``intersect=True``, because silently dropping them would compare two
    different question sets.
    """
    a = diagnosed_by_query(before, require, "before")
    b = diagnosed_by_query(after, require, "after")
    return comparison_from_moves(Counter((a[q], b[q]) for q in a if q in b), set(a) - set(b), set(b) - set(a),
                                 intersect=intersect)


def comparison_from_moves(moves: Mapping[tuple[str, str], int], only_before: Iterable[str] = (),
                          only_after: Iterable[str] = (), *, intersect: bool = False) -> Comparison:
    """A :class:`Comparison` from the paired bucket counts ``{(before, after): questions}``.

    :func:`compare` pairs traces in memory; :func:`ragstage.spark.compare` pairs them with a
    join on a cluster and hands the counts here, so both give the same numbers, table and errors.
    """
    only_a, only_b = tuple(sorted(only_before)), tuple(sorted(only_after))
    if (only_a or only_b) and not intersect:
        sample = (only_a + only_b)[:3]
        raise ValueError(f"the runs cover different questions ({len(only_a)} only before, {len(only_b)} "
                         f"only after, e.g. {', '.join(sample)}); compare the shared ones with --intersect "
                         "(Python: intersect=True)")
    moves = {pair: int(k) for pair, k in moves.items() if k}
    if not moves:
        raise ValueError("the two runs share no query_id")
    n = sum(moves.values())
    decided = {pair: k for pair, k in moves.items() if pair[0] not in UNDECIDED and pair[1] not in UNDECIDED}
    fixed = sum(k for (src, dst), k in decided.items() if src not in RIGHT and dst in RIGHT)
    broken = sum(k for (src, dst), k in decided.items() if src in RIGHT and dst not in RIGHT)
    both_right = sum(k for (src, dst), k in decided.items() if src in RIGHT and dst in RIGHT)
    undecided = n - sum(decided.values())
    used = [s for s in BUCKETS if any(s in pair for pair in moves)]
    migration = pd.DataFrame(0, index=pd.Index(used, name="before"), columns=pd.Index(used, name="after"))
    for (src, dst), k in moves.items():
        migration.loc[src, dst] = k
    return Comparison(n=n, fixed=fixed, broken=broken, both_right=both_right,
                      both_wrong=n - undecided - fixed - broken - both_right,
                      p_value=mcnemar(fixed, broken), migration=migration,
                      only_before=only_a, only_after=only_b, undecided=undecided)


def comparison_table(runs: Mapping[str, Sequence[Trace]], pairs: Iterable[tuple[str, str]], *,
                     require: str = "any", adjust: str | None = None) -> pd.DataFrame:
    """One row per (before, after) pair of runs: right before and after, fixed, broken, exact p.

    ``runs`` maps a label to its traces (e.g. :attr:`ragstage.runs.RunSet.traces`). Every pair
    must cover the same questions: this is the paired design, and a pair that does not is an
    error rather than a silently smaller comparison. ``adjust="holm"`` adds ``p_holm``, the
    p-values adjusted for testing every row of the table (:func:`ragstage.stats.holm`).
    """
    if adjust not in (None, "holm"):
        raise ValueError(f"adjust must be None or 'holm', got {adjust!r}")
    rows = []
    for before, after in pairs:
        missing = [label for label in (before, after) if label not in runs]
        if missing:
            raise ValueError(f"no run labelled {missing[0]!r}; runs: {', '.join(runs)}")
        result = compare(runs[before], runs[after], require=require)
        rows.append((before, after, result.n, result.both_right + result.broken, result.both_right + result.fixed,
                     result.fixed, result.broken, result.p_value))
    table = pd.DataFrame(rows, columns=["before", "after", "n", "right_before", "right_after", "fixed", "broken",
                                        "p_value"])
    if adjust == "holm":
        table["p_holm"] = holm(table["p_value"])
    return table
