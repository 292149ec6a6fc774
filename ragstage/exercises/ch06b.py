"""Chapter 6b, gold for a few questions: the expected outcome of every exercise, with its solution.

The solutions run in the chapter's namespace after its cells: ``inside``, ``outside`` and
``labelled`` (the mini run's drawn claims, the rest, and the drawn claims' gold buckets),
``gold_needed`` and ``indicator_correlation`` (the planner), ``app_requests``, ``people``,
``spans``, ``SEED`` and the estimate's functions (chapter 7's app, judged, and its stored labels)
are the chapter's own.
"""

from __future__ import annotations

from typing import Any

from ._core import Exercise, Expect, explained

NOTEBOOK = "06b_gold_for_a_few.ipynb"

#: Plain PPI (lam = 1) of the mini run's ``none`` share: the judge's rate outside the sample
#: plus its average error (gold minus judge) on the sample.
_PLAIN_PPI = 5 / 7 - 0.5
#: The judge's rate of ``none`` outside the sample alone (the reader who adds nothing).
_JUDGE_ONLY = 5 / 7


def _sign_flipped(got: Any) -> str | None:
    if isinstance(got, (int, float)) and abs(float(got) - (2 * _JUDGE_ONLY - _PLAIN_PPI)) < 5e-4:
        return "the error to add is gold minus judge (people's indicator minus the judge's), not judge minus gold"
    if isinstance(got, (int, float)) and abs(float(got) - _JUDGE_ONLY) < 5e-4:
        return ("that is the judge's rate alone: add the judge's average error on the sample, the mean over the "
                "sampled claims of (gold is none) minus (judge is none)")
    return None


def _planned(got: Any) -> str | None:
    if got == 217:
        return ("with rho = 0 this is the gold-only number: give gold_needed the judge's correlation, "
                "indicator_correlation(0.10, 0.85, 0.03)")
    if got == 22:
        return "a half-width of 0.04 is half the interval's width: pass 0.04, not the whole width"
    if got == 138:
        return "gold_needed squares the correlation itself: pass rho, not rho squared"
    return None


EXERCISES = (
    Exercise(
        id="6b.1",
        title="Add the error back, by hand",
        submit="the plain PPI estimate of the share of none (a number)",
        solution=('B = "none"\n'
                  "judge_outside = sum(r.bucket == B for r in outside) / len(outside)\n"
                  "average_error = sum((labelled[r.query_id] == B) - (r.bucket == B) for r in inside) / len(inside)\n"
                  "result = judge_outside + average_error"),
        kind="number",
        expects=(
            Expect("value", _PLAIN_PPI, "the judge's rate outside the sample plus the mean, over the sampled "
                   "claims, of (gold is none) minus (judge is none)", why=_sign_flipped),
        ),
    ),
    Exercise(
        id="6b.2",
        title="How many labels to buy",
        submit="the number of gold labels gold_needed returns",
        solution=("rho = indicator_correlation(0.10, 0.85, 0.03)\n"
                  "result = gold_needed(0.10, 0.04, 8000, rho)"),
        kind="number",
        expects=(
            Expect("value", 87, "a 10% bucket, a half-width of 0.04, 8,000 requests and the judge's correlation "
                   "from its sensitivity and false-positive rate", why=_planned),
        ),
    ),
    Exercise(
        id="6b.3",
        title="Label 60 instead of 30",
        submit="the generation row of estimate_buckets (a BucketEstimate) for a sample of 60",
        solution=("more = draw(app_requests, 60, seed=SEED)\n"
                  "more_gold = [t for t in ingest_openinference(spans, labels=[people[q] for q in more.query_ids],\n"
                  "                                              judge=judge_contains).traces\n"
                  "             if t.query_id in set(more.query_ids)]\n"
                  "more_result = estimate_buckets(app_requests, pair(app_requests, [Request(t.query_id, t.pipeline,\n"
                  "                               diagnose(t).stage.value) for t in more_gold], more), more)\n"
                  'result = next(r for r in more_result.rows if r.stage == "generation")'),
        expects=(
            Expect("gold_n", 60, "draw the larger sample the exercise asks for (draw(app_requests, ..., "
                   "seed=SEED)), not N_LABEL", edit=True),
            Expect("stage", "generation", "pick the row of the bucket the exercise asks about from "
                   "more_result.rows", edit=True),
            Expect("estimate", 0.219, "label exactly the drawn requests, with judge=judge_contains as in section 6"),
            Expect("low", 0.115, "read the row's low, clipped to [0, 1]"),
            Expect("high", 0.323, "read the row's high, clipped to [0, 1]"),
        ),
    ),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    "6b.1": ("0.214: the judge's rate of none outside the sample, 0.714 (5 of the 7 claims), plus its average "
             "error on the sample, -0.500 (it called all 6 sampled claims answered right, gold 3 of them). The "
             "full-gold share is 0.615: the correction is itself measured on six labels, and this sample happened to "
             "hold three of the judge's false none calls, so plain PPI over-corrects. PPI++ gives the judge no "
             "weight here (lam = 0: it says none on every sampled claim), and its interval, 0.100 to 0.900, says how "
             "little six labels know."),
    "6b.2": ("87 gold labels, against 217 with no judge. The judge's correlation with gold is 0.78 "
             "(indicator_correlation(0.10, 0.85, 0.03)), so about 1 - 0.78² = 0.39 of the gold-only variance is "
             "left for the gold labels to pin down. Check the plan against the coverage table before buying: 87 "
             "labels expect about 9 cases of a 10% bucket, where the simulation's coverage fell below 93%, and the "
             "tool would warn."),
    "6b.3": ("With 60 labels the generation row reads 0.219 (0.115 to 0.323), against 0.469 (0.290 to 0.647) with "
             "30: a width of 0.208 against 0.357, narrower than the 1/√2 of doubling n alone because the new "
             "sample's share, and so its variance, is lower. Both intervals contain the full-gold share, 0.328; "
             "lam stays near 0 (this weak judge carries little information about the bucket), and the warning "
             "stays, since 60 labels are still below 100."),
}
EXERCISES = explained(EXERCISES, WHY)
