"""Chapter 2, intervals: the expected outcome of every exercise, with its solution."""

from __future__ import annotations

from ._core import Exercise, Expect

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
        expects=(
            Expect("value", 0.039, "only the flipped questions enter: fixed first, broken second"),
        ),
    ),
    Exercise(
        id="2.6",
        title="Power",
        submit="the paired claims mcnemar_sample_size asks for at 90% power, for the MiniLM reranker effect",
        solution=('row = pairs[(pairs.before == "minilm") & (pairs.after == "minilm+ce")].iloc[0]\n'
                  "result = mcnemar_sample_size(row.fixed / N, row.broken / N, power=0.9)"),
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
