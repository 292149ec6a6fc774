"""What the report and comparison pages show, as one JSON-ready dict: numbers first, then every question.

The numbers come from the functions the command line prints: the attribution and flag
rows are what ``ragstage attribute --format json`` (and ``--flags``) prints, counted by the same call
(:func:`ragstage.trace_files.count_files`) and laid out by :mod:`ragstage.rows`; the comparison
page's (:mod:`ragstage.html.paired`) is :meth:`ragstage.report.Comparison.to_dict`, what ``compare
--format json`` prints. Bad input fails with the readers' own errors.

Questions are stored compactly (a page may hold 50,000 of them): each row refers to
small string tables (groups, buckets, reasons) by index, and each trace keeps only the
fields it sets.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from .. import __version__
from ..attribution import BUCKETS, FLAGS, SEVERITY, Diagnosis, diagnose
from ..fields import FIELDS
from ..rows import FLAG_COLUMNS, TABLE_COLUMNS, bucket_rows, flag_rows
from ..tally import Tally, group_of, tally_records
from ..trace import Trace
from ..trace_files import count_files, read_any

__all__ = ["attribute_output", "report_data", "MAX_QUESTIONS", "missing_fields", "expand_trace",
           "TABLED_LISTS", "TABLED_TEXTS"]


def attribute_output(tally: Tally) -> dict[str, list[dict[str, Any]]]:
    """``{"buckets": [...], "flags": [...]}``: the rows ``attribute --format json`` prints (and with ``--flags``)."""
    return {"buckets": [dict(zip(TABLE_COLUMNS, row)) for row in bucket_rows(tally.buckets)],
            "flags": [dict(zip(FLAG_COLUMNS, row)) for row in flag_rows(tally.flags, tally.totals())]}


@cache
def _doctor_checks() -> tuple:
    from ..ingest.doctor import FIELD_CHECKS

    return FIELD_CHECKS


def missing_fields(trace: Trace) -> list[int]:
    """Indices (into the doctor's field checks) of the minimum log fields this trace lacks."""
    return [i for i, check in enumerate(_doctor_checks()) if check.missing(trace)]


#: Fields whose strings recur from trace to trace (passage ids, sections, provenance): the page
#: stores each such string once, in ``strings``, and these fields as indices into it.
TABLED_LISTS = ("gold", "retrieved", "reranked", "prompt", "answer_ids", "truncated", "retrieved_sections",
                "reranked_sections")
TABLED_TEXTS = ("pipeline", "model", "prompt_version", "timestamp", "prompt_source")


def _compact(trace: Trace) -> dict[str, Any]:
    """The trace's fields without those left at their default, ranked lists as parallel arrays.

    A page may hold 100,000 traces, so a ranked list is stored as ``retrieved`` (ids),
    ``retrieved_scores`` and ``retrieved_sections`` rather than as one object per entry.
    Only a default is dropped: an empty prompt list (logged, nothing in it) stays, because
    it is not the missing prompt (``null``, not logged).
    """
    out = {}
    for name, spec in FIELDS.items():
        value = getattr(trace, name)
        if value == spec.default or (name == "meta" and not value):
            continue
        out[name] = value  # tuples are written as JSON arrays
    for stage in ("retrieved", "reranked"):
        if stage in out:
            for part in ("scores", "sections"):
                values = getattr(trace, f"{stage}_{part}")
                if values is not None:
                    out[f"{stage}_{part}"] = values
    return out


def _tabled(fields: dict[str, Any], strings: "_Strings") -> dict[str, Any]:
    """``fields`` (of :func:`_compact`) with their recurring strings as indices into ``strings``
    (see :func:`expand_trace`), changed in place."""
    index = strings.__getitem__  # a text already in the table costs one lookup in C
    for name in TABLED_LISTS:
        values = fields.get(name)
        if values is not None:
            fields[name] = list(map(index, values))
    for name in TABLED_TEXTS:
        if name in fields:
            fields[name] = index(fields[name])
    return fields


def expand_trace(t: dict[str, Any], strings: Sequence[str]) -> dict[str, Any]:
    """A question's stored fields with the indices of :func:`_tabled` back as their strings
    (what the page's script does before it shows a trace)."""
    out = dict(t)
    for name in TABLED_LISTS:
        if out.get(name) is not None:
            out[name] = [None if i is None else strings[i] for i in out[name]]
    for name in TABLED_TEXTS:
        if out.get(name) is not None:
            out[name] = strings[out[name]]
    return out


def _difference(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """``after`` as the fields that differ from ``before`` (``d``) and those it lacks (``gone``):
    two runs of one question share most of their fields, and a comparison page holds both."""
    return {"d": {k: v for k, v in after.items() if before.get(k) != v}, "gone": [k for k in before if k not in after]}


class _Strings(dict):
    """A string table: each distinct text stored once, rows refer to it by index.

    ``table(text)`` or ``table[text]`` is the text's index (a new text is appended); ``table[None]``
    is None. A dict, so that a text already in the table costs one lookup in C (a page holds
    millions of recurring ids).
    """

    def __init__(self, initial: Iterable[str] = ()) -> None:
        super().__init__({None: None})
        self.items: list[str] = []
        for text in initial:
            self[text]

    def __missing__(self, text: str) -> int:
        index = self[text] = len(self.items)
        self.items.append(text)
        return index

    __call__ = dict.__getitem__


_FLAG_BIT = {flag: 1 << i for i, flag in enumerate(FLAGS)}
_BUCKET = {b: i for i, b in enumerate(BUCKETS)}


def _flag_mask(flags: Iterable[str]) -> int:
    mask = 0
    for flag in flags:
        mask |= _FLAG_BIT[flag]
    return mask


def _side(trace: Trace, d: Diagnosis, reasons: _Strings, fields: dict[str, Any] | None) -> dict[str, Any]:
    """One trace on the page: its stored ``fields`` (none for the after side of a comparison, stored as
    its difference), its diagnosis and the doctor's missing fields."""
    side = {"b": _BUCKET[d.stage.value], "r": reasons(d.reason), "f": _flag_mask(d.flags), "s": d.severity,
            "m": missing_fields(trace), "recall": d.recall, "retention": d.retention}
    if fields is not None:
        side["t"] = fields
    return side


def _common(kind: str) -> dict[str, Any]:
    return {
        "kind": kind,
        "version": __version__,
        "buckets": list(BUCKETS),
        "flag_names": list(FLAGS),
        "severity": dict(SEVERITY),
        "checks": [{"name": c.name, "impact": c.impact, "blocking": c.blocking} for c in _doctor_checks()],
    }


#: The most questions a report page lists by default. Every trace is counted in the tables and
#: figures; a page that also listed a million questions would weigh about a gigabyte and take a
#: browser minutes to open, so beyond this the page lists the first ones (in file order) and says
#: how many it left out, bucket by bucket.
MAX_QUESTIONS = 50_000


def report_data(paths: Sequence[str | Path], by: str | None = "pipeline", require: str = "any", *,
                max_questions: int | None = MAX_QUESTIONS, workers: int | None = None,
                gold_sample: str | Path | None = None, sample: str | Path | None = None) -> dict[str, Any]:
    """The report page's data: ``attribute``'s rows, the funnel, and the first ``max_questions``
    questions (all of them when None) with their traces, and how many of each bucket were left out.

    The numbers are ``attribute``'s one count (:func:`ragstage.trace_files.count_files`, every trace
    checked, on ``workers`` processes); the questions listed are read again, and only those (input
    from a pipe, which can be read once, is counted in this process as its first questions are
    listed), and say how many carry a judge's labels (:func:`ragstage.html.gold.judge_labels`). With
    ``gold_sample`` and ``sample`` (one file of silver traces), the page also holds the rates of
    ``attribute --gold-sample`` (:func:`ragstage.html.gold.gold_sample_data`).
    """
    from ..report import funnel_from_tally
    from .gold import gold_sample_data, judge_labels

    if max_questions is not None and max_questions < 0:
        raise ValueError(f"max_questions must not be negative, got {max_questions}")
    if (gold_sample is None) != (sample is None):
        raise ValueError("--gold-sample and --sample go together: the gold traces and the sample file they label")
    if gold_sample is not None and len(paths) != 1:
        raise ValueError(f"with --gold-sample, give one SILVER_TRACES file; got {len(paths)}")
    paths = [str(p) for p in paths]
    estimate = None if gold_sample is None else gold_sample_data(paths[0], gold_sample, sample, require)
    questions: list[dict[str, Any]] = []
    metas: list[Any] = []
    groups, reasons, strings = _Strings(), _Strings(), _Strings()
    limit = math.inf if max_questions is None else max_questions

    def listing(traces: Iterable[Trace]) -> Iterator[Trace]:
        """Every trace of ``traces``, the first of them (up to ``limit`` on the page) listed as they pass."""
        for trace in traces:
            if len(questions) < limit:
                side = _side(trace, diagnose(trace, require), reasons, _tabled(_compact(trace), strings))
                side["g"] = groups(group_of(trace, by))
                questions.append(side)
                metas.append(trace.meta)
            yield trace

    if all(Path(p).is_file() or Path(p).is_dir() for p in paths):
        tally = count_files(paths, by=by, require=require, workers=workers)
        for group in tally.buckets:
            groups[group]
        for path in paths:
            traces = read_any(path)
            try:  # the questions listed are read again, and only those
                for _ in listing(islice(traces, max(0, min(limit, _traces_in(tally)) - len(questions)))):
                    pass
            finally:
                getattr(traces, "close", lambda: None)()
    else:  # a pipe can be read once: each trace is counted as it goes by, the first ones listed
        tally = Tally()
        for path in paths:
            tally.update(tally_records(listing(read_any(path)), by, require))
    for group in tally.buckets:  # every group is named on the page, listed or not
        groups[group]
    n = _traces_in(tally)
    counted = attribute_output(tally)
    data = _common("report")
    data.update({
        "files": paths, "by": by, "require": require, "n": n, "listed": len(questions),
        "left_out": _left_out(tally, questions), "judge_labels": judge_labels(metas), "gold_sample": estimate,
        "attribution": counted["buckets"], "flags": counted["flags"],
        "funnel": funnel_from_tally(tally).to_dict(orient="records"),
        "groups": groups.items, "reasons": reasons.items, "strings": strings.items, "questions": questions,
    })
    return data


def _traces_in(tally: Tally) -> int:
    """The number of traces a tally counted."""
    return sum(tally.totals().values())


def _left_out(tally: Tally, questions: list[dict[str, Any]]) -> dict[str, int]:
    """``{bucket: questions counted but not listed}``, buckets in their order, zeros left out."""
    listed = Counter(BUCKETS[q["b"]] for q in questions)
    total: Counter[str] = Counter()
    for buckets in tally.buckets.values():
        total.update(buckets)
    return {b: total[b] - listed[b] for b in BUCKETS if total[b] > listed[b]}
