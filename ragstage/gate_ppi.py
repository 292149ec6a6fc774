"""The gate on judge-labelled runs: the verdict on the PPI++ estimate of the change, not on the judge's counts.

When a judge labelled the traces (``meta["labels"]["by"] == "judge"`` on each trace), the fixed
and broken counts of :func:`ragstage.report.compare` are the judge's: biased by its errors, and
by errors that differ between the runs (the judge reads other answers in the new run). So a
gate on such runs needs a gold sample of each judge-labelled run (``ragstage sample``, then
people's labels of the drawn questions) and decides on the prediction-powered estimate:

1. **paired PPI++**: the ``1 - alpha`` PPI++ interval of (fixed − broken) / questions lies
   below 0 (:func:`ragstage.ppi.means.ppi_paired`: PPI on the per-question difference, right after
   minus right before, gold on the sample and the judge on every question). On gold labels this is
   the two-sided question McNemar asks: is the change significantly worse?
2. **max broken**: the PPI++ estimate of how many questions broke (:func:`ragstage.ppi.means.ppi_mean`
   on the broken indicator, times the questions) exceeds ``max_broken``;
3. **critical**: a question newly critical in the judge-labelled traces, as on gold runs (a
   fabricated citation does not depend on labels; ``source_or_label`` and ``missing_refusal`` do,
   and are then the judge's call, named as such).

Beside the estimate, never instead of it: the gold-only interval (the same difference on the
sample alone, ``lam = 0``) and the judge-only figures (its fixed, broken and McNemar p over every
question, biased). Without a gold sample a gate on judge labels is refused (:func:`require_gold`):
a CI job reads an exit code, not a warning, and a judge whose errors differ between the runs can
turn noise into a fix or hide a regression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .attribution import diagnose
from .gate import GateResult, Pair, Paired, critical_rule, decide, format_p, md_code, md_text, outcome, pair_runs
from .ppi.estimate import pair
from .ppi.means import PPIEstimate, ppi_mean, ppi_paired
from .ppi.sample import Request, Sample
from .rows import printable
from .run_labels import RunLabels, require_gold, run_labels
from .trace import Trace

__all__ = ["RULES", "PAIRED_SMALL_SAMPLE", "PAIRED_SMALL_FLIPPED", "JudgeEstimate", "paired_too_few",
           "gold_buckets", "judge_estimate", "gate_on_judge"]

#: The rules checked on judge-labelled runs, in order.
RULES: tuple[str, ...] = ("paired PPI++", "max broken", "critical")
#: The paired interval is flagged below these (``docs/gold-for-a-few.md``, the paired coverage table):
#: every cell with fewer than 200 gold labels fell below 93% with the shared-error judge, and the
#: cells of 200 or more covered at 93.7% or better down to 6 questions flipped in the sample.
PAIRED_SMALL_SAMPLE = 200
PAIRED_SMALL_FLIPPED = 6
_SHOWN = 5


def paired_too_few(gold_n: int, flipped: int) -> bool:
    """Whether a paired PPI++ interval of this many gold labels, of which ``flipped`` were fixed or
    broken by gold, is outside the region where the paired simulation covered 93% or more."""
    return gold_n < PAIRED_SMALL_SAMPLE or flipped < PAIRED_SMALL_FLIPPED


def _uniform(sample: Sample, name: str) -> None:
    if sample.by_bucket:
        raise ValueError(f"{name} is stratified by silver bucket (--by-bucket): the paired estimate needs a "
                         "uniform sample, the same questions in both runs; draw it without --by-bucket")


def gold_buckets(traces: Sequence[Trace], gold: Sequence[Trace], sample: Sample, *, require: str = "any",
                 names: tuple[str, str, str] = ("TRACES", "GOLD", "SAMPLE")) -> dict[str, str]:
    """The gold bucket of every drawn question of one judge-labelled run, after the checks of
    ``attribute --gold-sample`` (:func:`ragstage.ppi.estimate.pair`: the sample drawn from these
    traces, the gold rows exactly the drawn ones, each labelled); the gold traces must be people's
    and the sample uniform (the paired estimate needs the same questions drawn in both runs)."""
    traces_name, gold_name, sample_name = names
    _uniform(sample, sample_name)
    judged = run_labels(gold, gold_name)
    if judged.judged:
        raise ValueError(f"{judged.describe()}: a gold sample is labelled by people")
    requests = []
    seen: set[tuple[str, str]] = set()
    for t in gold:
        if (t.query_id, t.pipeline) in seen:
            raise ValueError(f"{gold_name}: query_id {printable(t.query_id)!r} of pipeline "
                             f"{printable(t.pipeline)!r} appears twice")
        seen.add((t.query_id, t.pipeline))
        requests.append(Request(t.query_id, t.pipeline, diagnose(t, require).stage.value))
    silver = [Request(t.query_id, t.pipeline, diagnose(t, require).stage.value) for t in traces]
    return pair(silver, requests, sample, silver_name=traces_name, gold_name=gold_name, sample_name=sample_name)


@dataclass(frozen=True)
class JudgeEstimate:
    """The change between two judge-labelled runs, three ways (see the module's docstring).

    ``change``: PPI++ (fixed − broken) / questions; ``gold_only``: the same on the sample alone;
    ``broken``: PPI++ share of questions broken. ``gold_*``: counts on the sample by gold;
    ``judge_*``: counts over every question by the judge. Intervals are not clipped.
    """

    change: PPIEstimate
    gold_only: PPIEstimate
    broken: PPIEstimate
    questions: int
    gold_fixed: int
    gold_broken: int
    judge_fixed: int
    judge_broken: int
    judge_p: float
    labels: tuple[RunLabels, RunLabels]
    gold_sources: tuple[str, ...]
    seed: int

    @property
    def gold_n(self) -> int:
        return self.change.n

    @property
    def judge_only(self) -> float:
        """(fixed − broken) / questions by the judge alone: biased, shown for comparison."""
        return (self.judge_fixed - self.judge_broken) / self.questions

    @property
    def level(self) -> str:
        return f"{100 * (1 - self.change.alpha):g}%"

    @property
    def warning(self) -> str | None:
        """Why the interval is in the region where the paired simulation's coverage fell below 93%, or None."""
        flipped = self.gold_fixed + self.gold_broken
        if not paired_too_few(self.gold_n, flipped):
            return None
        return (f"{self.gold_n} gold labels, {flipped} of them fixed or broken: the paired simulation's coverage "
                f"fell below 93% with fewer than {PAIRED_SMALL_SAMPLE} gold labels or {PAIRED_SMALL_FLIPPED} "
                "flipped; read the gold-only interval beside it, or label more")

    def summary(self) -> str:
        """The figures of the verdict line: the PPI++ estimate, then gold only and judge only."""
        e, g = self.change, self.gold_only
        return (f"PPI++ (fixed − broken) / questions {e.estimate:+.3f}, {self.level} {e.low:+.3f} to "
                f"{e.high:+.3f}; gold only {g.estimate:+.3f} on {self.gold_n}; judge only {self.judge_only:+.3f} "
                f"({self.judge_fixed} fixed, {self.judge_broken} broken, p = {format_p(self.judge_p)})")

    def broken_count(self) -> tuple[float, float, float]:
        """The PPI++ estimate of the questions broken, with its interval (clipped at 0)."""
        b, n = self.broken, self.questions
        return b.estimate * n, max(b.low, 0.0) * n, b.high * n

    def threshold(self, rule: str, max_broken: int | None) -> str | None:
        """A rule's "fails when" as the Markdown summary shows it (None: the gold gate's wording)."""
        if rule == "paired PPI++":
            return f"the {self.level} PPI++ interval of (fixed − broken) / questions lies below 0"
        if rule == "max broken" and max_broken is not None:
            return f"PPI++ estimate of broken questions > {max_broken}"
        return None

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(figure, estimate, interval, what it rests on), in the order every output prints them."""
        e, g = self.change, self.gold_only
        est, low, high = self.broken_count()
        return [
            ("PPI++ (the verdict)", f"{e.estimate:+.3f}", f"{e.low:+.3f} to {e.high:+.3f}",
             f"judge on {self.questions} questions, gold on {self.gold_n}"),
            ("gold only", f"{g.estimate:+.3f}", f"{g.low:+.3f} to {g.high:+.3f}",
             f"{self.gold_n} gold-labelled questions: {self.gold_fixed} fixed, {self.gold_broken} broken"),
            ("judge only (biased)", f"{self.judge_only:+.3f}", "-",
             f"{self.questions} judged questions: {self.judge_fixed} fixed, {self.judge_broken} broken, "
             f"exact McNemar p = {format_p(self.judge_p)}"),
            ("broken questions (PPI++)", f"{est:.1f}", f"{low:.1f} to {high:.1f}",
             f"the judge's count: {self.judge_broken}"),
        ]

    def text(self) -> list[str]:
        """The estimate as the terminal prints it (data escaped, one line each)."""
        rows = [("(fixed − broken) / questions", "estimate", f"{self.level} interval", "from"), *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        out = [f"labels: {lab.describe()}" for lab in self.labels if lab.judged]
        out.append(f"gold samples: {self.gold_n} questions (seed {self.seed}) from "
                   + ", ".join(printable(s) for s in self.gold_sources))
        out += ["  ".join((r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].rjust(widths[2]), r[3])).rstrip()
                for r in rows]
        out.append("the counts above are the judge's (biased); the verdict is made on the PPI++ estimate")
        if self.warning:
            out.append(f"! paired PPI++: {self.warning}")
        return out

    def markdown(self) -> list[str]:
        """The estimate as Markdown lines, data escaped as the gate's summary escapes it
        (:func:`ragstage.gate.md_text`, :func:`ragstage.gate.md_code`)."""
        out = ["### The estimate the verdict is made on (PPI++: a judge on every question, gold on a sample)", ""]
        for lab in self.labels:
            if lab.judged:
                who = "; ".join(md_text(j) if len(lab.judges) == 1 else f"{md_text(j)}: {k}"
                                for j, k in lab.judges.items())
                out.append(f"- labels of {md_code(lab.name)}: by a judge ({who}) on {lab.judged} of {lab.traces} "
                           "traces")
        out.append(f"- gold samples: {self.gold_n} questions (seed {self.seed}) from "
                   + ", ".join(md_code(s) for s in self.gold_sources))
        out += ["", f"| (fixed − broken) / questions | estimate | {self.level} interval | from |",
                "|---|---:|---:|---|"]
        out += [f"| {a} | {b} | {c} | {md_text(d)} |" for a, b, c, d in self.rows()]
        out += ["", "The counts below are the judge's (biased); the verdict is made on the PPI++ estimate."]
        if self.warning:
            out += ["", f"**Warning**: {md_text(self.warning)}"]
        return out

    def properties(self) -> list[tuple[str, str]]:
        """JUnit properties: the estimate, its interval, the gold-only and judge-only figures, the judges."""
        e, g = self.change, self.gold_only
        est, low, high = self.broken_count()
        out = [("labels", "judge"), ("ppi_estimate", repr(e.estimate)), ("ppi_low", repr(e.low)),
               ("ppi_high", repr(e.high)), ("ppi_se", repr(e.se)), ("ppi_lam", repr(e.lam)),
               ("gold_n", str(self.gold_n)), ("gold_fixed", str(self.gold_fixed)),
               ("gold_broken", str(self.gold_broken)), ("gold_estimate", repr(g.estimate)),
               ("gold_low", repr(g.low)), ("gold_high", repr(g.high)), ("judge_estimate", repr(self.judge_only)),
               ("judge_fixed", str(self.judge_fixed)), ("judge_broken", str(self.judge_broken)),
               ("judge_p_value", repr(self.judge_p)), ("broken_estimate", repr(est)), ("broken_low", repr(low)),
               ("broken_high", repr(high))]
        out += [(f"judge_{side}", lab.describe()) for side, lab in zip(("before", "after"), self.labels)
                if lab.judged]
        out += [("gold_sources", ", ".join(self.gold_sources)), ("warning", self.warning or "")]
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``compare --gate --format json`` adds as ``"ppi"``."""
        e, g = self.change, self.gold_only
        est, low, high = self.broken_count()
        return {"estimate": e.estimate, "low": e.low, "high": e.high, "se": e.se, "lam": e.lam, "alpha": e.alpha,
                "questions": self.questions, "gold_n": self.gold_n, "gold_fixed": self.gold_fixed,
                "gold_broken": self.gold_broken, "gold_estimate": g.estimate, "gold_low": g.low,
                "gold_high": g.high, "judge_estimate": self.judge_only, "judge_fixed": self.judge_fixed,
                "judge_broken": self.judge_broken, "judge_p_value": self.judge_p, "broken_estimate": est,
                "broken_low": low, "broken_high": high, "warning": self.warning,
                "judges": {side: lab.judges for side, lab in zip(("before", "after"), self.labels) if lab.judged}}


def _rights(before_bucket: str, after_bucket: str) -> tuple[bool, bool]:
    """Right before, right after; an undecided question counts as neither fixed nor broken (as in ``compare``)."""
    status = outcome(before_bucket, after_bucket)
    return status in ("broken", "both_right"), status in ("fixed", "both_right")


def judge_estimate(paired: Paired, gold_before: dict[str, str], gold_after: dict[str, str], drawn: Sequence[str], *,
                   labels: tuple[RunLabels, RunLabels], gold_sources: tuple[str, ...] = (), seed: int = 0,
                   alpha: float = 0.05) -> JudgeEstimate:
    """PPI++ on the per-question difference (gold on the ``drawn`` questions, the judge's buckets of
    ``paired`` everywhere), the gold-only interval of the same sample, and the broken count's estimate."""
    by_id = {p.query_id: p for p in paired.pairs}
    inside = set(drawn)
    missing = [q for q in drawn if q not in by_id]
    if missing:
        raise ValueError(f"{len(missing)} drawn question(s) are not in both runs: "
                         + ", ".join(repr(printable(q)) for q in missing[:_SHOWN]))
    rest: list[Pair] = [p for p in paired.pairs if p.query_id not in inside]
    if not rest:
        raise ValueError("the sample holds every question: gate the gold traces themselves")
    gold = np.array([_rights(gold_before[q], gold_after[q]) for q in drawn], dtype=bool).reshape(-1, 2)
    judge = np.array([_rights(by_id[q].before_bucket, by_id[q].after_bucket) for q in drawn], dtype=bool).reshape(-1, 2)
    judge_rest = np.array([_rights(p.before_bucket, p.after_bucket) for p in rest], dtype=bool).reshape(-1, 2)
    change = ppi_paired(gold[:, 0], gold[:, 1], judge[:, 0], judge[:, 1], judge_rest[:, 0], judge_rest[:, 1], alpha)

    def diff(x: np.ndarray) -> np.ndarray:
        return x[:, 1].astype(float) - x[:, 0].astype(float)

    def broke(x: np.ndarray) -> np.ndarray:
        return (x[:, 0] & ~x[:, 1]).astype(float)

    gold_only = ppi_mean(diff(gold), diff(judge), diff(judge_rest), alpha, lam=0.0)
    broken = ppi_mean(broke(gold), broke(judge), broke(judge_rest), alpha)
    c = paired.comparison
    return JudgeEstimate(change, gold_only, broken, c.n, int((~gold[:, 0] & gold[:, 1]).sum()), int(broke(gold).sum()),
                         c.fixed, c.broken, c.p_value, labels, gold_sources, seed)


def gate_on_judge(before: Sequence[Trace], after: Sequence[Trace], *, gold: tuple[Sequence[Trace] | None, ...],
                  samples: tuple[Sample | None, ...], alpha: float = 0.05, max_broken: int | None = None,
                  critical: bool = True, require: str = "any", names: tuple[str, str] = ("before", "after"),
                  gold_names: tuple[str | None, ...] = (None, None),
                  sample_names: tuple[str | None, ...] = (None, None)) -> GateResult:
    """Gate two runs, at least one labelled by a judge, on the PPI++ estimate (see the module's rules).

    ``gold`` and ``samples``: per run (before, after), its gold traces of the drawn questions and
    its sample file, or None for a run labelled by people. Refusals (``ValueError``, exit 2 from the
    command line) name what differs: a judge-labelled run without its gold sample, a sample not
    drawn from its run, gold rows not the drawn ones, the two runs' samples drawing other questions.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if max_broken is not None and max_broken < 0:
        raise ValueError(f"max_broken must not be negative, got {max_broken}")
    runs = (before, after)
    labels = tuple(run_labels(run, name) for run, name in zip(runs, names))
    judged = [require_gold(lab, g, s, side) for lab, g, s, side in zip(labels, gold, samples, ("before", "after"))]
    if not any(judged):
        raise ValueError("neither run is labelled by a judge: gate them without gold samples")
    paired = pair_runs(before, after, require=require)
    sample_names = tuple(n or f"the sample of {side}" for n, side in zip(sample_names, ("before", "after")))
    drawn_by = [s for s in samples if s is not None]
    for sample, name in zip(samples, sample_names):
        if sample is not None:
            _uniform(sample, name)
    if len(drawn_by) == 2 and set(drawn_by[0].query_ids) != set(drawn_by[1].query_ids):
        only = [sorted(set(a.query_ids) - set(b.query_ids)) for a, b in (drawn_by, drawn_by[::-1])]
        raise ValueError(f"the two samples draw other questions ({len(only[0])} only in {sample_names[0]}, "
                         f"{len(only[1])} only in {sample_names[1]}, e.g. "
                         + ", ".join(repr(printable(q)) for q in (only[0] + only[1])[:3])
                         + "): the paired estimate needs gold for the same questions in both runs (draw both with "
                         "the same --n and --seed from runs over the same questions)")
    buckets: list[dict[str, str] | None] = []
    for i, side in enumerate(("before", "after")):
        sample, g = samples[i], gold[i]
        if sample is None or g is None:
            buckets.append(None)
            continue
        buckets.append(gold_buckets(runs[i], g, sample, require=require,
                                    names=(names[i], gold_names[i] or f"the gold traces of {side}",
                                           sample_names[i])))
    drawn = drawn_by[0].query_ids
    own = {side: {p.query_id: getattr(p, f"{side}_bucket") for p in paired.pairs} for side in ("before", "after")}
    estimate = judge_estimate(paired, buckets[0] or own["before"], buckets[1] or own["after"], drawn,
                              labels=labels, alpha=alpha, seed=drawn_by[0].seed,
                              gold_sources=tuple(n or side for n, side, s in zip(gold_names, ("before", "after"),
                                                                                   samples) if s is not None))
    critical_pairs = paired.newly_critical if critical else []
    est, low, high = estimate.broken_count()
    e = estimate.change
    fired = {
        "paired PPI++": (e.high < 0, f"significantly worse (the {estimate.level} PPI++ interval lies below 0)"),
        "max broken": (max_broken is not None and est > max_broken,
                       f"about {est:.1f} questions broke (PPI++, {estimate.level} {low:.1f} to {high:.1f}), "
                       f"more than --max-broken {max_broken}"),
        "critical": critical_rule(critical_pairs),
    }
    observed = {"paired PPI++": f"{e.estimate:+.3f} ({estimate.level} {e.low:+.3f} to {e.high:+.3f})",
                "max broken": f"{est:.1f} broken (PPI++; the judge's count {paired.comparison.broken})",
                "critical": f"{len(critical_pairs)} question(s), by the judge's labels" if critical else "-"}
    verdict = decide(RULES, fired, estimate.summary())
    return GateResult(paired, verdict, alpha, max_broken, critical, *names, observed, RULES, estimate)
