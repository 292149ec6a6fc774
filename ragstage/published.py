"""The published SciFact run, read and checked in one place.

``fixtures/published/scifact_run.json`` holds only what the article states: the number of
claims, each pipeline's correct answers (stated, or the ``none`` bucket where the buckets are
stated), the bucket counts of MiniLM + cross-encoder under both prompts, and the discordant
pairs of five paired comparisons. Some totals are derived in the article from others through
the pairs (MiniLM alone: 107 - 32 + 9), so every pair must link its two totals; a transcription
error in any count breaks that chain, and :func:`load_published` says which pair and which
numbers. The chapters read the counts from here instead of re-deriving them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from .attribution import BUCKETS, RIGHT
from .fixtures import fixture_path
from .stats import holm, mcnemar, wilson

__all__ = ["PublishedRun", "load_published", "PAIR_COLUMNS", "CORRECT_COLUMNS"]

#: The columns of :attr:`PublishedRun.pairs`: those of :func:`ragstage.report.comparison_table`
#: with ``adjust="holm"``, plus the p-value as the article printed it.
PAIR_COLUMNS = ["before", "after", "n", "right_before", "right_after", "fixed", "broken", "p_value", "p_holm",
                "published_p"]
CORRECT_COLUMNS = ["pipeline", "correct", "n", "low", "high"]


@dataclass(frozen=True)
class PublishedRun:
    """The published counts, checked against each other.

    ``correct``: correct answers per pipeline, in the file's order. ``buckets``: the bucket
    counts of the pipelines whose buckets are stated. ``pairs``: one row per published paired
    comparison with the exact McNemar p and its Holm adjustment over all the pairs
    (``published_p`` is empty where the article gave none). ``facts``: the other stated
    numbers, as published.
    """

    n: int
    correct: dict[str, int]
    buckets: dict[str, dict[str, int]]
    pairs: pd.DataFrame = field(repr=False)
    facts: dict[str, Any] = field(default_factory=dict, repr=False)

    def correct_table(self, order: Sequence[str] | None = None) -> pd.DataFrame:
        """Each pipeline's correct answers out of ``n`` with a Wilson interval, in ``order``."""
        names = list(order) if order is not None else list(self.correct)
        unknown = [name for name in names if name not in self.correct]
        if unknown:
            raise ValueError(f"no published pipeline {unknown[0]!r}; pipelines: {', '.join(self.correct)}")
        return pd.DataFrame([(name, self.correct[name], self.n, *wilson(self.correct[name], self.n))
                             for name in names], columns=CORRECT_COLUMNS)


def _count(where: str, value: Any, upper: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= upper:
        raise ValueError(f"{where}: expected a whole number from 0 to {upper}, got {value!r}")
    return value


def _pipelines(where: str, spec: Any, n: int) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    if not isinstance(spec, Mapping) or not spec:
        raise ValueError(f"{where}: 'pipelines' must be a non-empty object")
    correct: dict[str, int] = {}
    buckets: dict[str, dict[str, int]] = {}
    for name, entry in spec.items():
        here = f"{where}: pipelines.{name}"
        if not isinstance(entry, Mapping) or not ({"correct", "buckets"} & set(entry)):
            raise ValueError(f"{here}: needs 'correct', 'buckets' or both")
        if "buckets" in entry:
            counts = entry["buckets"]
            if not isinstance(counts, Mapping):
                raise ValueError(f"{here}.buckets: expected an object of bucket counts")
            unknown = sorted(set(counts) - set(BUCKETS))
            if unknown:
                raise ValueError(f"{here}.buckets: unknown bucket(s) {unknown}; known: {', '.join(BUCKETS)}")
            buckets[name] = {b: _count(f"{here}.buckets.{b}", k, n) for b, k in counts.items()}
            if sum(buckets[name].values()) != n:
                raise ValueError(f"{here}.buckets: the counts add up to {sum(buckets[name].values())}, not n = {n}")
            correct[name] = sum(k for b, k in buckets[name].items() if b in RIGHT)
        if "correct" in entry:
            stated = _count(f"{here}.correct", entry["correct"], n)
            if name in correct and correct[name] != stated:
                raise ValueError(f"{here}: 'correct' is {stated} but the right buckets add up to {correct[name]}")
            correct[name] = stated
    return correct, buckets


def _pairs(where: str, spec: Any, n: int, correct: Mapping[str, int]) -> pd.DataFrame:
    if not isinstance(spec, list):
        raise ValueError(f"{where}: 'pairs' must be a list")
    rows = []
    for i, pair in enumerate(spec):
        here = f"{where}: pairs[{i}]"
        if not isinstance(pair, Mapping):
            raise ValueError(f"{here}: expected an object")
        for key in ("before", "after"):
            if pair.get(key) not in correct:
                raise ValueError(f"{here}.{key}: {pair.get(key)!r} is not a published pipeline")
        before, after = correct[pair["before"]], correct[pair["after"]]
        fixed = _count(f"{here}.fixed", pair.get("fixed"), n - before)  # fixed: wrong before
        broken = _count(f"{here}.broken", pair.get("broken"), before)  # broken: right before
        if before + fixed - broken != after:
            raise ValueError(f"{here}: {pair['before']} {before} + fixed {fixed} - broken {broken} = "
                             f"{before + fixed - broken}, but {pair['after']} has {after}")
        published_p = pair.get("published_p")
        if published_p is not None and not isinstance(published_p, str):
            raise ValueError(f"{here}.published_p: expected the printed text or null, got {published_p!r}")
        rows.append([pair["before"], pair["after"], n, before, after, fixed, broken,
                     mcnemar(fixed, broken), published_p or ""])
    table = pd.DataFrame(rows, columns=[c for c in PAIR_COLUMNS if c != "p_holm"])
    table.insert(PAIR_COLUMNS.index("p_holm"), "p_holm", holm(table["p_value"]))
    return table


def load_published(path: str | Path | None = None) -> PublishedRun:
    """Read the published run (by default ``fixtures/published/scifact_run.json``) and check it.

    Raises ValueError naming the file and the field when a count is missing or out of range,
    the buckets of a pipeline do not add up to ``n``, or a pair does not link its totals.
    """
    file = Path(path) if path is not None else fixture_path("published", "scifact_run.json")
    where = file.name
    with open(file, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a JSON object")
    n = data.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{where}: n: expected a positive whole number, got {n!r}")
    correct, buckets = _pipelines(where, data.get("pipelines"), n)
    pairs = _pairs(where, data.get("pairs", []), n, correct)
    return PublishedRun(n=n, correct=correct, buckets=buckets, pairs=pairs, facts=dict(data.get("other_facts", {})))

