"""Chapter 2, intervals: the expected outcome of every exercise, with its solution."""

from __future__ import annotations

from ._core import Exercise, Expect, explained

NOTEBOOK = "02_intervals.ipynb"


def _stage_row(stages, stage: str):
    """One stage's row of a funnel table (``funnel_from_counts``)."""
    rows = stages[stages["stage"] == stage]
    if rows.empty:
        raise ValueError(f"the table has no {stage!r} row: pass the funnel table")
    return rows.iloc[0]


def _bm25_vs_minilm(adjusted):
    """The Holm-adjusted p of BM25 against MiniLM, found by its position in the published pairs."""
    from ..published import load_published

    pairs = load_published().pairs
    position = [i for i, row in enumerate(pairs.itertuples()) if (row.before, row.after) == ("minilm", "bm25")]
    return float(list(adjusted)[position[0]])


EXERCISES = (
    Exercise(
        id="2.1",
        title="Explorer: the edge",
        submit="explorer (the interval explorer), after setting n = 15 and k = 15",
        solution="explorer.n_slider.value = 15\nexplorer.k_slider.value = 15\nresult = explorer",
        expects=(
            Expect("k", 15, "drag the k slider to its right end"),
            Expect("n", 15, "set the n slider as the exercise says"),
            Expect("Wilson low end", 0.796, "read the Wilson interval the explorer prints",
                   get=lambda e: e.wilson[0]),
            Expect("Wilson high end", 1.0, "read the Wilson interval the explorer prints",
                   get=lambda e: e.wilson[1]),
            Expect("normal interval's width", 0.0, "p(1 - p) at p = 1: what width does the normal formula give?",
                   get=lambda e: e.normal[1] - e.normal[0]),
        ),
    ),
    Exercise(
        id="2.2",
        title="Explorer: more questions",
        submit="explorer, after setting k = 220 and n = 300",
        solution="explorer.n_slider.value = 300\nexplorer.k_slider.value = 220\nresult = explorer",
        expects=(
            Expect("k", 220, "set n first (k cannot exceed n), then k"),
            Expect("n", 300, "set the n slider as the exercise says"),
            Expect("Wilson low end", 0.681, "read the Wilson interval the explorer prints",
                   get=lambda e: e.wilson[0]),
            Expect("Wilson high end", 0.780, "read the Wilson interval the explorer prints",
                   get=lambda e: e.wilson[1]),
        ),
    ),
    Exercise(
        id="2.3",
        title="Planning",
        submit="the number of questions sample_size gives for a ±0.03 half-width at the planning p",
        solution='result = sample_size(plan["p"], 0.03)',
        kind="number",
        expects=(
            Expect("value", 897, "use the p of the planning cell (0.7) and a half-width of 0.03, not 0.3 or 3"),
        ),
    ),
    Exercise(
        id="2.4",
        title="Denominators",
        submit="the funnel table from funnel_from_counts, with retrieval losses at 150 and none at 40",
        solution=('edited = {**illustration, "retrieval": 150, "none": 40}\n'
                  'result = funnel_from_counts({"illustration": edited})'),
        kind="table",
        expects=(
            Expect("questions entering reranking", 150,
                   "reranking sees only what retrieval kept: 300 minus the retrieval losses",
                   get=lambda s: int(_stage_row(s, "reranking")["entered"])),
            Expect("questions surviving reranking", 108,
                   "survivors are the questions that entered minus reranking's own losses (unchanged)",
                   get=lambda s: int(_stage_row(s, "reranking")["survived"])),
            Expect("questions in all", 300, "the edit moves 60 questions from none to retrieval; the total stays",
                   get=lambda s: int(_stage_row(s, "retrieval")["entered"])),
        ),
    ),
    Exercise(
        id="2.5",
        title="Paired counts",
        submit="the exact McNemar p-value for 10 fixed and 2 broken, mcnemar(fixed, broken)",
        solution="result = mcnemar(10, 2)",
        kind="number",
        expects=(
            Expect("value", 0.039,
                   "only the flipped questions enter the test: how many were fixed, and how many broken?",
                   places=2),
        ),
    ),
    Exercise(
        id="2.6",
        title="Power",
        submit="the paired claims mcnemar_sample_size asks for at 90% power, for the MiniLM reranker effect",
        solution=('row = pairs[(pairs.before == "minilm") & (pairs.after == "minilm+ce")].iloc[0]\n'
                  "result = mcnemar_sample_size(row.fixed / N, row.broken / N, power=0.9)"),
        kind="number",
        expects=(
            Expect("value", 251, "use the MiniLM reranker row's fixed and broken as shares of N, and power=0.9"),
        ),
    ),
    Exercise(
        id="2.7",
        title="A sixth test",
        submit="the list holm(...) returns for the five published p-values plus 0.01",
        solution="result = holm(list(pairs.p_value) + [0.01])",
        expects=(
            Expect("number of adjusted p-values", 6, "pass every published p-value and the new one, in one list",
                   get=lambda adjusted: len(list(adjusted))),
            Expect("the new test's adjusted p", 0.040,
                   "put the new p-value last; Holm multiplies it by the number of tests not yet set aside",
                   get=lambda adjusted: float(list(adjusted)[-1])),
            Expect("BM25 against MiniLM, adjusted", 0.120,
                   "keep the published p-values in the table's order", get=_bm25_vs_minilm),
        ),
    ),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    '2.1': ('The Wilson interval is 0.796 to 1.000 and the normal interval has width 0. At 15 of 15 the normal '
            "formula's p(1 - p) is 0, so it claims certainty from fifteen questions; Wilson still allows a true "
            'rate near 0.8.'),
    '2.2': ('Wilson 0.681 to 0.780 around 220/300 = 0.733. With twenty times the questions the interval is far '
            'narrower than at n = 15: its width shrinks with the square root of n.'),
    '2.3': ('897 questions. The half-width shrinks as 1/√n, so going from ±0.05 to ±0.03 multiplies n by '
            '(0.05/0.03)² ≈ 2.8: about three times as many questions, not twice.'),
    '2.4': ('150 claims enter reranking and 108 survive it; the total stays 300. Each stage divides by what '
            "reached it: moving 60 claims from `none` to `retrieval` shrinks reranking's denominator from 210 to "
            '150 while its own 42 losses stay, so its rate falls from 0.80 to 0.72.'),
    '2.5': ('p = 0.039 (0.0386), below 0.05. The exact test reads only the 12 flipped claims, and 10 against 2 is '
            'lopsided enough; the separate Wilson intervals of 150/300 and 158/300 overlap almost entirely, '
            'because they throw the pairing away.'),
    '2.6': ('251 paired claims. Power depends on the shares of claims fixed (32/300) and broken (9/300), not on '
            'accuracy; at 90% power this effect needs 251 claims, so the published 300 were enough.'),
    '2.7': ("The new test's adjusted p is 0.040 and BM25 against MiniLM rises to 0.120. Holm multiplies the "
            'smallest of m p-values by m, the next by m - 1, and so on: 0.01 is third smallest of six (0.01 × 4) '
            'and BM25 against MiniLM fourth (0.040 × 3). Every added test raises the bar for the others.'),
}
EXERCISES = explained(EXERCISES, WHY)
