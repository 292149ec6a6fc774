"""What a report page says about its labels: whose they are (a judge's or people's), and, with a gold
sample, the three rates of ``ragstage attribute --gold-sample`` per bucket.

Silver traces carry ``meta["labels"] = {"by": "judge", "judge": ..., "model": ..., "prompt": ...}``;
every rate computed from them alone is the judge's, biased by its errors, and the page says so
with counts. Given the gold traces of a drawn sample, the page shows per bucket the judge-only
rate (marked biased), the gold-only Wilson interval and the PPI++ (or stratified) estimate with
its interval, computed by :mod:`ragstage.ppi.estimate` (the same rows ``attribute --gold-sample
--format json`` prints).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..judge.notice import silver_summary

__all__ = ["judge_labels", "gold_sample_data"]


def judge_labels(metas: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """``{"traces": read, "judged": labelled by a judge, "judges": {judge_of(meta): count}}``."""
    metas = list(metas)
    judges = dict(silver_summary({"meta": meta} for meta in metas))
    return {"traces": len(metas), "judged": sum(judges.values()), "judges": judges}


def gold_sample_data(silver: str | Path, gold: str | Path, sample: str | Path, require: str = "any") -> dict[str, Any]:
    """The estimate of ``attribute SILVER --gold-sample GOLD --sample SAMPLE`` as the page's data:
    its rows, the method, the sample's draw and the judge's agreement with gold on it."""
    from ..ppi.estimate import estimate_buckets, pair
    from ..ppi.sample import read_requests, read_sample

    drawn = read_sample(sample)
    if drawn.by_bucket and drawn.require != require:
        raise ValueError(f"{sample} was stratified with --require {drawn.require}; run with the same")
    requests = read_requests(silver, require)
    labelled = pair(requests, read_requests(gold, require), drawn, silver_name=str(silver), gold_name=str(gold),
                    sample_name=str(sample))
    result = estimate_buckets(requests, labelled, drawn)
    a = result.agreement
    return {"rows": [asdict(r) for r in result.rows], "stratified": drawn.by_bucket,
            "files": {"gold": str(gold), "sample": str(sample)}, "seed": drawn.seed, "drawn": drawn.n,
            "agreement": {"agree": a.agree, "n": a.n, "kappa": a.kappa}}
