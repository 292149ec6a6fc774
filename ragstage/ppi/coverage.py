"""Where the PPI intervals hold: a seeded simulation with known true buckets and a judge of set errors.

PPI intervals are normal approximations, so their coverage is a claim to check, not a given.
Each draw builds a population of requests whose true buckets follow :data:`RATES` (2% to 50%,
and the rest in ``other``), lets a judge with a set confusion matrix label every one, takes
the first ``n`` requests as the gold sample (the requests are independent draws, so the first
``n`` are a uniform random sample of them) and builds, for every bucket, the PPI++ interval of
:mod:`ragstage.ppi.means` and the gold-only Wilson interval of the same ``n``. The target is
the bucket's share of that population, the quantity the tool estimates.

Two judges: ``uniform`` is right 85% of the time whatever the bucket; ``bucket_dependent``
misses most of the rare buckets, confuses neighbours, and calls 5% of the common bucket the
rarest one, as a judge that over-reports one failure would. :func:`coverage_table` runs the
grid; the tables in ``docs/gold-for-a-few.md`` are ``coverage_table()`` for both designs and
``paired_table()`` (:func:`simulate_paired`: two runs on the same questions, PPI on the
per-question difference), with their default seed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..stats import wilson
from .means import indicator_moments, ppi_from_moments, row_moments

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RATES", "BUCKETS", "JUDGES", "SIZES", "CHANGES", "simulate", "simulate_paired", "coverage_table",
           "paired_table", "SMALL_COUNT", "SMALL_SAMPLE", "too_few", "markdown"]

#: The true share of each simulated bucket; ``other`` takes the rest (13%).
RATES: tuple[float, ...] = (0.02, 0.05, 0.10, 0.20, 0.50)
BUCKETS: tuple[str, ...] = ("b02", "b05", "b10", "b20", "b50", "other")
#: Gold sample sizes of the table.
SIZES: tuple[int, ...] = (50, 100, 200, 500)

#: Rows: the true bucket; columns: the probability that the judge names each bucket (order of
#: :data:`BUCKETS`).
JUDGES: dict[str, tuple[tuple[float, ...], ...]] = {
    "uniform": tuple(tuple(0.85 if i == j else 0.03 for j in range(6)) for i in range(6)),
    "bucket_dependent": (
        (0.50, 0.00, 0.00, 0.00, 0.50, 0.00),  # the rarest bucket: half of it called the common one
        (0.00, 0.70, 0.30, 0.00, 0.00, 0.00),
        (0.00, 0.10, 0.80, 0.10, 0.00, 0.00),
        (0.00, 0.00, 0.05, 0.90, 0.05, 0.00),
        (0.05, 0.00, 0.00, 0.05, 0.85, 0.05),  # 5% of the common bucket called the rarest
        (0.00, 0.00, 0.00, 0.10, 0.10, 0.80),
    ),
}

#: The rule the command line applies (:func:`too_few`): a PPI interval is flagged when the gold
#: sample is smaller than ``SMALL_SAMPLE`` or the bucket's expected count in it (gold labels times
#: the estimate, or times one minus it, whichever is smaller) is below ``SMALL_COUNT``. Chosen
#: from :func:`coverage_table`: see ``docs/gold-for-a-few.md`` for the cells on either side.
SMALL_SAMPLE = 100
SMALL_COUNT = 20


def too_few(gold_n: Any, estimate: Any) -> Any:
    """Whether a PPI interval of this many gold labels and this estimate is in the region where
    the simulation found coverage below 93% (arrays allowed)."""
    p = np.clip(estimate, 0.0, 1.0)
    return (np.asarray(gold_n) < SMALL_SAMPLE) | (np.asarray(gold_n) * np.minimum(p, 1 - p) < SMALL_COUNT)


def _draw(rng: np.random.Generator, cum: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Categorical draws: the index of the first cumulative probability above a uniform."""
    u = rng.random(size)
    return (u[..., None] >= cum[:-1]).sum(axis=-1).astype(np.int8)


def _stratified_design(said: np.ndarray, n: int, population: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A sample of ``n`` stratified by the judge's bucket in every draw, allocated as ``ragstage sample
    --by-bucket`` allocates it: per stratum, which requests are drawn (the first ``n_h`` of the
    stratum: the requests are independent, so any ``n_h`` of them are a random sample), ``n_h`` and ``N_h``."""
    from .sample import allocate

    sizes = np.stack([(said == h).sum(axis=1) for h in range(len(BUCKETS))], axis=1)
    alloc = np.array([[allocate({h: int(c) for h, c in enumerate(row) if c}, n).get(h, 0)
                       for h in range(len(BUCKETS))] for row in sizes])
    design = []
    for h in range(len(BUCKETS)):
        inside = said == h
        design.append((inside & (np.cumsum(inside, axis=1) <= alloc[:, h:h + 1]), alloc[:, h], sizes[:, h]))
    return design


def _stratified_interval(y: np.ndarray, design: list, population: int, z: float) -> dict[str, np.ndarray]:
    """:func:`ragstage.ppi.means.stratified_mean` over every draw at once."""
    estimate = np.zeros(len(y))
    variance = np.zeros(len(y))
    for drawn, n_h, size in design:
        k = (drawn & y).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(n_h > 0, k / n_h, 0.0)
            s2 = np.where(n_h > 1, n_h / (n_h - 1) * mean * (1 - mean), 0.0)
            part = np.where(n_h > 0, (size / population) ** 2 * (1 - n_h / size) * s2 / n_h, 0.0)
        estimate += size / population * mean
        variance += part
    se = np.sqrt(variance)
    return {"estimate": estimate, "low": estimate - z * se, "high": estimate + z * se}


def simulate(judge: str = "uniform", *, design: str = "uniform", sizes: tuple[int, ...] = SIZES,
             population: int = 5000, reps: int = 2000, seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """One row per (bucket, gold sample size): coverage and mean width of the PPI++ and Wilson intervals.

    ``design="uniform"``: a uniform sample and the PPI++ interval; ``"stratified"``: a sample
    stratified by the judge's bucket (``ragstage sample --by-bucket``) and the stratified
    estimate. Columns: ``judge, design, bucket, rate, n, expected_count`` (n × rate),
    ``ppi_coverage`` with ``mc_low``/``mc_high`` (the Wilson interval of the simulation's own hit
    count), ``wilson_coverage`` and ``wilson_width`` (the gold-only Wilson interval of a uniform
    sample of the same n), ``ppi_width``, ``width_ratio`` (PPI over Wilson), ``judge_bias`` (the
    judge-only rate minus the true share, averaged) and ``flagged`` (the share of draws
    :func:`too_few` flags). Seeded: the same arguments give the same table on every machine.
    """
    import pandas as pd
    from scipy.special import ndtri

    if judge not in JUDGES:
        raise ValueError(f"unknown judge {judge!r}; known: {', '.join(JUDGES)}")
    if design not in ("uniform", "stratified"):
        raise ValueError(f"design is 'uniform' or 'stratified', got {design!r}")
    if max(sizes) >= population:
        raise ValueError(f"every sample size must be below the population ({population})")
    rng = np.random.default_rng(seed)
    truth_p = np.array([*RATES, 1 - sum(RATES)])
    confusion = np.array(JUDGES[judge])
    true = _draw(rng, np.cumsum(truth_p), (reps, population))
    said = np.empty_like(true)
    for b in range(len(BUCKETS)):  # the judge's bucket, drawn from the row of the true one
        rows = true == b
        said[rows] = _draw(rng, np.cumsum(confusion[b]), (int(rows.sum()),))
    strata = {n: _stratified_design(said, n, population) for n in sizes} if design == "stratified" else {}
    z = float(ndtri(1 - alpha / 2))
    rows = []
    for b, name in enumerate(BUCKETS[:-1]):
        y, h = true == b, said == b
        share = y.mean(axis=1)
        judge_rate = h.mean(axis=1)
        for n in sizes:
            ys, hs = y[:, :n], h[:, :n]
            both = (ys & hs).sum(axis=1)
            gold_k = ys.sum(axis=1)
            judge_k = hs.sum(axis=1)
            if design == "stratified":
                r = _stratified_interval(y, strata[n], population, z)
            else:
                r = ppi_from_moments(indicator_moments(both, gold_k - both, judge_k - both,
                                                       n - gold_k - judge_k + both, h[:, n:].sum(axis=1),
                                                       population - n), alpha)
            covered = (r["low"] <= share) & (share <= r["high"])
            table = np.array([wilson(k, n) for k in range(n + 1)])
            w_low, w_high = table[gold_k, 0], table[gold_k, 1]
            hits = int(covered.sum())
            mc_low, mc_high = wilson(hits, reps)
            flagged = too_few(n, r["estimate"])
            ppi_width = np.clip(r["high"], 0, 1) - np.clip(r["low"], 0, 1)
            rows.append((judge, design, name, RATES[b], n, n * RATES[b], hits / reps, mc_low, mc_high,
                         float(((w_low <= share) & (share <= w_high)).mean()), float(ppi_width.mean()),
                         float((w_high - w_low).mean()), float(ppi_width.mean() / (w_high - w_low).mean()),
                         float((judge_rate - share).mean()), float(flagged.mean())))
    return pd.DataFrame(rows, columns=["judge", "design", "bucket", "rate", "n", "expected_count", "ppi_coverage",
                                       "mc_low", "mc_high", "wilson_coverage", "ppi_width", "wilson_width",
                                       "width_ratio", "judge_bias", "flagged"])


#: (share of questions fixed, share broken) of the paired simulation's changes.
CHANGES: tuple[tuple[float, float], ...] = ((0.10, 0.05), (0.05, 0.02), (0.02, 0.01))


def simulate_paired(*, changes: tuple[tuple[float, float], ...] = CHANGES, sizes: tuple[int, ...] = SIZES,
                    population: int = 5000, reps: int = 1000, right_before: float = 0.6, accuracy: float = 0.85,
                    errors: str = "shared", seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """Coverage of :func:`ragstage.ppi.means.ppi_paired`'s interval for (fixed − broken) / questions.

    Each draw: every question is right before with probability ``right_before``; the change fixes
    and breaks the given shares; a judge calls each run's answer right or wrong, right with
    probability ``accuracy``. ``errors="shared"``: a question whose answer did not change gets the
    same verdict in both runs (a judge that reads the same answer twice says the same thing);
    ``"independent"``: the two verdicts err independently (the harder case: the judge's errors do
    not cancel in the difference). The first ``n`` questions get gold. Columns: ``errors, fixed, broken, n,
    discordant`` (n × (fixed + broken), the expected flipped questions in the sample),
    ``ppi_coverage``, ``mc_low``, ``mc_high``, ``gold_coverage`` (the gold-only normal interval of
    the mean difference, ``lam = 0``), ``ppi_width``, ``gold_width``, ``width_ratio``, ``judge_bias``.
    """
    import pandas as pd

    if errors not in ("shared", "independent"):
        raise ValueError(f"errors is 'shared' or 'independent', got {errors!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for fixed, broken in changes:
        if not (0 <= broken <= right_before and 0 <= fixed <= 1 - right_before):
            raise ValueError(f"fixed {fixed} and broken {broken} do not fit a right-before share of {right_before}")
        before = rng.random((reps, population)) < right_before
        flip = rng.random((reps, population))
        after = np.where(before, flip >= broken / right_before, flip < fixed / (1 - right_before))
        judge_before = before ^ (rng.random(before.shape) >= accuracy)
        judge_after = after ^ (rng.random(after.shape) >= accuracy)
        if errors == "shared":
            judge_after = np.where(after == before, judge_before, judge_after)
        d = after.astype(np.int8) - before.astype(np.int8)
        dj = judge_after.astype(np.int8) - judge_before.astype(np.int8)
        truth = d.mean(axis=1)
        bias = float((dj.mean(axis=1) - truth).mean())
        for n in sizes:
            m = row_moments(d[:, :n].astype(float), dj[:, :n].astype(float), dj[:, n:].astype(float))
            ppi, gold = ppi_from_moments(m, alpha), ppi_from_moments(m, alpha, lam=0.0)
            covered = (ppi["low"] <= truth) & (truth <= ppi["high"])
            hits = int(covered.sum())
            mc_low, mc_high = wilson(hits, reps)
            ppi_width, gold_width = float((ppi["high"] - ppi["low"]).mean()), float((gold["high"] - gold["low"]).mean())
            rows.append((errors, fixed, broken, n, n * (fixed + broken), hits / reps, mc_low, mc_high,
                         float(((gold["low"] <= truth) & (truth <= gold["high"])).mean()), ppi_width, gold_width,
                         ppi_width / gold_width, bias))
    return pd.DataFrame(rows, columns=["errors", "fixed", "broken", "n", "discordant", "ppi_coverage", "mc_low",
                                       "mc_high", "gold_coverage", "ppi_width", "gold_width", "width_ratio",
                                       "judge_bias"])


def coverage_table(*, design: str = "uniform", reps: int = 2000, seed: int = 20261205, population: int = 5000,
                   sizes: tuple[int, ...] = SIZES) -> pd.DataFrame:
    """:func:`simulate` for both judges, one table (the docs print both designs', with this seed)."""
    import pandas as pd

    return pd.concat([simulate(j, design=design, sizes=sizes, population=population, reps=reps, seed=seed + i)
                      for i, j in enumerate(JUDGES)], ignore_index=True)


def paired_table(*, reps: int = 1000, seed: int = 20261205, population: int = 5000,
                 sizes: tuple[int, ...] = SIZES) -> pd.DataFrame:
    """:func:`simulate_paired` with shared and with independent judge errors (the docs' table, with this seed)."""
    import pandas as pd

    return pd.concat([simulate_paired(errors=e, sizes=sizes, population=population, reps=reps, seed=seed + i)
                      for i, e in enumerate(("shared", "independent"))], ignore_index=True)


#: The columns of the docs' tables: (header, alignment, how a row prints it); the coverage cell is
#: bold below 93%.
_COVERAGE = ("PPI++ coverage (simulation's 95%)", "---",
             lambda r: ("**{:.3f}**" if r.ppi_coverage < 0.93 else "{:.3f}").format(r.ppi_coverage)
             + f" ({r.mc_low:.3f}–{r.mc_high:.3f})")
_BUCKET_COLUMNS = (("judge", "---", lambda r: r.judge), ("rate", "---:", lambda r: f"{r.rate:.0%}"),
                   ("gold n", "---:", lambda r: str(r.n)), ("n × rate", "---:", lambda r: f"{r.expected_count:g}"),
                   _COVERAGE, ("Wilson coverage", "---:", lambda r: f"{r.wilson_coverage:.3f}"),
                   ("PPI++ width", "---:", lambda r: f"{r.ppi_width:.3f}"),
                   ("Wilson width", "---:", lambda r: f"{r.wilson_width:.3f}"),
                   ("PPI/Wilson", "---:", lambda r: f"{r.width_ratio:.2f}"),
                   ("flagged", "---:", lambda r: f"{r.flagged:.0%}"))
_PAIRED_COLUMNS = (("judge's errors", "---", lambda r: r.errors), ("fixed", "---:", lambda r: f"{r.fixed:.0%}"),
                   ("broken", "---:", lambda r: f"{r.broken:.0%}"), ("gold n", "---:", lambda r: str(r.n)),
                   ("flipped in the sample", "---:", lambda r: f"{r.discordant:g}"), _COVERAGE,
                   ("gold-only coverage", "---:", lambda r: f"{r.gold_coverage:.3f}"),
                   ("PPI++ width", "---:", lambda r: f"{r.ppi_width:.3f}"),
                   ("gold-only width", "---:", lambda r: f"{r.gold_width:.3f}"),
                   ("PPI/gold-only", "---:", lambda r: f"{r.width_ratio:.2f}"))


def markdown(table: pd.DataFrame) -> str:
    """A table of :func:`simulate` or :func:`simulate_paired` as Markdown, the way
    ``docs/gold-for-a-few.md`` prints it (a test regenerates and compares)."""
    columns = _PAIRED_COLUMNS if "fixed" in table.columns else _BUCKET_COLUMNS
    lines = ["| " + " | ".join(c[0] for c in columns) + " |", "|" + "|".join(c[1] for c in columns) + "|"]
    lines += ["| " + " | ".join(c[2](r) for c in columns) + " |" for r in table.itertuples()]
    return "\n".join(lines) + "\n"
