"""Bucket rates from a judge on every request and gold on a drawn sample: ``ragstage attribute --gold-sample``.

Silver traces (every request, labelled by a judge) and gold traces (the drawn requests,
labelled by people) are paired by ``query_id`` and ``pipeline``. Before any number is
computed, the pairing is checked: the sample must have been drawn from these silver traces
(same pipeline, same request ids: the digest in the sample file), and the gold rows must be
exactly the drawn requests, each with a gold label. Then, per bucket:

* the judge-only rate (every request, the judge's buckets): biased by the judge's errors;
* the gold-only Wilson interval on the sample (uniform samples only: a stratified sample
  over-represents rare buckets, so its raw share is not a rate of the requests);
* the PPI++ estimate and its 95% interval (:func:`ragstage.ppi.means.ppi_mean` on the bucket's
  indicator, the judge's labels outside the sample as the unlabelled part), or, for a sample
  stratified by silver bucket, the stratified estimate (:func:`ragstage.ppi.means.stratified_mean`:
  the strata are the judge's buckets, so PPI inside each is its gold mean, weighted by the
  stratum's share of the requests).

Printed intervals are clipped to [0, 1]. An interval in the region where the coverage
simulation fell below 93% (:func:`ragstage.ppi.coverage.too_few`) carries a warning.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import orjson

from ..attribution import BUCKETS
from ..stats import wilson
from .agreement import Confusion, confusion
from .coverage import SMALL_COUNT, SMALL_SAMPLE, too_few
from .means import PPIEstimate, joint_intervals, ppi_mean, stratified_mean
from .sample import Request, Sample, ids_digest, read_requests, read_sample

__all__ = ["BucketEstimate", "GoldEstimate", "pair", "estimate_buckets", "gold_attribute"]

_SHOWN = 5  # ids named in an error message


@dataclass(frozen=True)
class BucketEstimate:
    """One bucket's three rates. ``n``: every request; ``judge_k``: the judge's count among them;
    ``gold_k`` of ``gold_n``: the gold count in the sample; ``sample_*``: the bucket's 2×2 on the
    sample (gold and judge both, judge only, gold only). ``low``/``high`` clipped to [0, 1]."""

    stage: str
    n: int
    judge_k: int
    judge_rate: float
    gold_k: int
    gold_n: int
    gold_low: float | None
    gold_high: float | None
    estimate: float
    low: float
    high: float
    se: float
    lam: float | None
    method: str
    sample_both: int
    sample_judge_only: int
    sample_gold_only: int
    warning: str | None


@dataclass(frozen=True)
class GoldEstimate:
    """Every bucket's row, the raw (unclipped) estimates, and the judge's agreement on the sample."""

    rows: list[BucketEstimate]
    raw: dict[str, PPIEstimate]
    agreement: Confusion


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(q) for q in sorted(ids)[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def pair(silver: Sequence[Request], gold: Sequence[Request], sample: Sample, *, silver_name: str = "SILVER",
         gold_name: str = "GOLD", sample_name: str = "SAMPLE") -> dict[str, str]:
    """The gold bucket of every drawn request, after checking that the three inputs belong together.

    Raises ``ValueError`` naming what differs: another pipeline, other requests than the sample
    was drawn from, gold rows that were not drawn, drawn requests without a gold row, a gold row
    without a gold label, strata that no longer match the silver buckets.
    """
    pipelines = sorted({r.pipeline for r in silver})
    if pipelines != [sample.pipeline]:
        raise ValueError(f"{sample_name} was drawn from pipeline {sample.pipeline!r}; {silver_name} holds "
                         f"{', '.join(map(repr, pipelines[:_SHOWN]))}")
    ids = [r.query_id for r in silver]
    digest = ids_digest(ids)
    if digest != sample.ids_digest or len(ids) != sample.population:
        absent = set(sample.query_ids) - set(ids)
        more = f"; drawn but not in {silver_name}: {_named(list(absent))}" if absent else ""
        raise ValueError(f"{sample_name} was drawn from other traces than {silver_name}: {sample.population} requests "
                         f"(ids {sample.ids_digest[:19]}…) then, {len(ids)} now (ids {digest[:19]}…){more}")
    other = sorted({r.pipeline for r in gold} - {sample.pipeline})
    if other:
        raise ValueError(f"{gold_name} has rows of pipeline {', '.join(map(repr, other))}; the sample is of "
                         f"pipeline {sample.pipeline!r}")
    drawn = set(sample.query_ids)
    labelled = {r.query_id: r.bucket for r in gold}
    extra = [q for q in labelled if q not in drawn]
    if extra:
        raise ValueError(f"{gold_name} has {len(extra)} row(s) that were not drawn in {sample_name}: {_named(extra)} "
                         "(the estimate needs the drawn requests, not a chosen set)")
    missing = [q for q in sample.query_ids if q not in labelled]
    if missing:
        raise ValueError(f"{len(missing)} drawn request(s) have no row in {gold_name}: {_named(missing)}")
    unlabelled = [q for q, b in labelled.items() if b == "label_missing"]
    if unlabelled:
        raise ValueError(f"{len(unlabelled)} row(s) of {gold_name} have no gold label (bucket label_missing): "
                         f"{_named(unlabelled)}; label them, or mark them unanswerable")
    if sample.by_bucket:
        then = {b: (s.get("population", 0), s.get("drawn", 0)) for b, s in sample.strata.items()}
        now = {b: (sum(r.bucket == b for r in silver), sum(r.bucket == b and r.query_id in drawn for r in silver))
               for b in BUCKETS}
        changed = [b for b in BUCKETS if now[b] != then.get(b, (0, 0))]
        if changed:
            raise ValueError(f"the silver buckets changed since {sample_name} was drawn (requests, drawn): "
                             + ", ".join(f"{b} {then.get(b, (0, 0))} then, {now[b]} now" for b in changed[:_SHOWN]))
    return labelled


def _warning(gold_n: int, estimate: float) -> str | None:
    if not too_few(gold_n, estimate):
        return None
    if gold_n < SMALL_SAMPLE:
        return f"{gold_n} gold labels (< {SMALL_SAMPLE}): the simulation's coverage fell below 93% there"
    count = gold_n * min(max(estimate, 0.0), 1 - min(estimate, 1.0))
    return (f"expected count {count:.1f} in the sample (< {SMALL_COUNT}): "
            "the simulation's coverage fell below 93% there")


def estimate_buckets(silver: Sequence[Request], gold_bucket: dict[str, str], sample: Sample, *, alpha: float = 0.05,
                     joint: bool = False) -> GoldEstimate:
    """Per bucket, the judge-only rate, the gold-only Wilson interval and the PPI++ (or stratified)
    estimate; ``joint=True`` widens every interval so that all hold together (Bonferroni, the
    intervals of Holm's procedure: :func:`ragstage.ppi.means.joint_intervals`)."""
    drawn = set(sample.query_ids)
    inside = [r for r in silver if r.query_id in drawn]
    outside = [r for r in silver if r.query_id not in drawn]
    if not outside:
        raise ValueError("the sample holds every request: its gold traces give the rates directly "
                         "(ragstage attribute GOLD_TRACES)")
    gold = [gold_bucket[r.query_id] for r in inside]
    judged = [r.bucket for r in inside]
    raw: dict[str, PPIEstimate] = {}
    counts: dict[str, tuple[int, int, int, int, int]] = {}
    for b in BUCKETS:
        y = [g == b for g in gold]
        h = [j == b for j in judged]
        judge_k = sum(h) + sum(r.bucket == b for r in outside)
        if not judge_k and not any(y):
            continue
        if sample.by_bucket:
            strata = [(s["population"], [g == b for g, j in zip(gold, judged) if j == stratum])
                      for stratum, s in sample.strata.items()]
            raw[b] = stratified_mean(strata, alpha)
        else:
            raw[b] = ppi_mean(y, h, [r.bucket == b for r in outside], alpha)
        both = sum(a and c for a, c in zip(y, h))
        counts[b] = (judge_k, sum(y), both, sum(h) - both, sum(y) - both)
    shown = joint_intervals(raw, alpha) if joint else raw
    rows = []
    for b, e in shown.items():
        judge_k, gold_k, both, judge_only, gold_only = counts[b]
        gold_low, gold_high = (None, None) if sample.by_bucket else wilson(gold_k, len(gold))
        rows.append(BucketEstimate(b, len(silver), judge_k, judge_k / len(silver), gold_k, len(gold), gold_low,
                                   gold_high, e.estimate, max(e.low, 0.0), min(e.high, 1.0), e.se,
                                   None if sample.by_bucket else e.lam, "stratified" if sample.by_bucket else "ppi++",
                                   both, judge_only, gold_only, _warning(len(gold), e.estimate)))
    return GoldEstimate(rows, raw, confusion(gold, judged, BUCKETS))


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.3f} to {high:.3f}"


def _print_table(result: GoldEstimate, sample: Sample) -> None:
    head = ("stage", "n", "judge_k", "judge rate", "gold_k/n", "gold-only Wilson", "estimate", "95% interval", "")
    cells = [(r.stage, str(r.n), str(r.judge_k), f"{r.judge_rate:.3f}", f"{r.gold_k}/{r.gold_n}",
              _interval(r.gold_low, r.gold_high), f"{r.estimate:.3f}", _interval(r.low, r.high),
              "!" if r.warning else "") for r in result.rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    for line in (head, *cells):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))).rstrip())
    method = ("stratified by silver bucket: each stratum's gold share, weighted by its share of the requests"
              if sample.by_bucket else "PPI++ (tuned lambda): the judge's rate, corrected by its error on the sample")
    print(f"\nestimate: {method}")
    print("judge rate: the judge's buckets alone, biased by its errors (shown for comparison, not a result)")
    for r in result.rows:
        if r.warning:
            print(f"! {r.stage}: {r.warning}")
    a = result.agreement
    print(f"\njudge vs gold on the sample: {a.agree}/{a.n} agree, Cohen's kappa {a.kappa:.3f} "
          "(rows: gold, columns: judge)")
    width = max(len("gold \\ judge"), *map(len, a.labels))
    print("gold \\ judge".ljust(width) + "".join(f"  {label:>{len(label)}}" for label in a.labels))
    for label, row in zip(a.labels, a.counts):
        print(label.ljust(width) + "".join(f"  {k:>{len(name)}}" for k, name in zip(row, a.labels)))


def gold_attribute(args: Any) -> int:
    """``ragstage attribute SILVER --gold-sample GOLD --sample SAMPLE``: check, estimate, print."""
    if not (args.gold_sample and args.sample):
        raise ValueError("--gold-sample and --sample go together: the gold traces and the sample file they label")
    if len(args.files) != 1:
        raise ValueError(f"with --gold-sample, give one SILVER_TRACES file; got {len(args.files)}")
    if args.flags:
        raise ValueError("--flags counts flags; it does not combine with --gold-sample")
    if args.by != "pipeline":
        raise ValueError("--by does not combine with --gold-sample: a sample is of one pipeline's requests, "
                         "estimated as one group")
    if args.format == "csv":
        raise ValueError("--gold-sample prints a table or JSON (--format table|json)")
    silver_path = args.files[0]
    sample = read_sample(args.sample)
    if sample.by_bucket and sample.require != args.require:
        raise ValueError(f"{args.sample} was stratified with --require {sample.require}; run with the same")
    silver = read_requests(silver_path, args.require)
    labelled = pair(silver, read_requests(args.gold_sample, args.require), sample, silver_name=silver_path,
                    gold_name=args.gold_sample, sample_name=args.sample)
    result = estimate_buckets(silver, labelled, sample)
    if args.format == "json":
        sys.stdout.write(orjson.dumps([asdict(r) for r in result.rows], option=orjson.OPT_INDENT_2).decode() + "\n")
        a = result.agreement
        print(f"judge vs gold on the sample: {a.agree}/{a.n} agree, Cohen's kappa {a.kappa:.3f}", file=sys.stderr)
        flagged = [r.stage for r in result.rows if r.warning]
        if flagged:
            print(f"warning: {len(flagged)} interval(s) where the simulation's coverage fell below 93%: "
                  f"{', '.join(flagged)} (see each row's 'warning')", file=sys.stderr)
    else:
        _print_table(result, sample)
    return 0
