"""Chapter 4, five stages and two oracles: the expected outcome of every exercise, with its solution.

The simulation is seeded (``systems.json``: ``n`` = 1000, ``seed`` = 3), so each outcome is an
exact count of that seeded run, not an approximation of the rate the simulation was given.
"""

from __future__ import annotations

from typing import Any

from ._core import Exercise, Expect, explained

NOTEBOOK = "04_five_stages_and_oracles.ipynb"


def _bucket(traces: Any, query_id: str) -> str:
    """The bucket ``diagnose`` gives the trace ``query_id`` of a list of traces."""
    from ..attribution import diagnose

    for trace in traces:
        if trace.query_id == query_id:
            return diagnose(trace).stage.value
    raise ValueError(f"no trace {query_id!r} in your list: pass the edited copy of qu")


def _funnel_cell(traces: Any, stage: str) -> list[int]:
    """``[survived, entered]`` of one stage in the pooled funnel of ``traces``."""
    from ..report import funnel

    table = funnel(list(traces), by=None).set_index("stage")
    if stage not in table.index:
        raise ValueError(f"the funnel has no {stage!r} row")
    return [int(table.loc[stage, "survived"]), int(table.loc[stage, "entered"])]


def _measure(table: Any, measure: str, system: str = "loss upstream") -> int:
    """The count ``k`` of one measure of one system in a table from ``measure_table``."""
    rows = table[(table["system"] == system) & (table["measure"] == measure)]
    if rows.empty:
        raise ValueError(f"the table has no row for {system!r}, {measure!r}: pass what measure_table returned")
    return int(rows.iloc[0]["k"])


EXERCISES = (
    Exercise(
        id="4.1",
        title="Misjudge a rewrite",
        submit="edited_qu, the copy of qu with one query_ok changed",
        solution=('edited_qu = [t.replace(query_ok=True) if t.query_id == "qu-1" else t for t in qu]\n'
                  "result = edited_qu"),
        kind="traces",
        expects=(
            Expect("qu-1's bucket", "retrieval",
                   "qu-1 is the rewrite that dropped 'parental leave': judge it as if nobody had noticed, "
                   "then ask which stage is the first to lose its gold",
                   get=lambda ts: _bucket(ts, "qu-1")),
            Expect("query understanding [survived, entered]", [2, 3],
                   "only judged traces enter this row: which of the four have query_ok set?",
                   get=lambda ts: _funnel_cell(ts, "query_understanding")),
            Expect("retrieval [survived, entered]", [2, 3],
                   "retrieval is scored over what query understanding passed on, plus the unjudged trace",
                   get=lambda ts: _funnel_cell(ts, "retrieval")),
            Expect("qu-2's bucket", "query_understanding", "change qu-1 only; qu-2's filter is still wrong",
                   get=lambda ts: _bucket(ts, "qu-2")),
        ),
    ),
    Exercise(
        id="4.2",
        title="A perfect retriever",
        submit="perfect, the measure_table of 'loss upstream' with one rate changed",
        solution=('rates = {**systems["readings"]["loss upstream"], "retrieval": 1.0}\n'
                  'perfect = measure_table({"loss upstream": rates})\n'
                  "result = perfect"),
        kind="table",
        expects=(
            Expect("retrieved-context sufficiency (k of 1000)", 902,
                   "the stage to change is the first one after query understanding; set it so it never loses",
                   get=lambda t: _measure(t, "retrieved-context sufficiency")),
            Expect("end to end (k of 1000)", 861,
                   "end to end is the product of every stage's pass rate: did you change only retrieval?",
                   get=lambda t: _measure(t, "end to end")),
            Expect("gold-context oracle (k of 1000)", 952,
                   "the oracle bypasses retrieval: it moves only when the generator changes",
                   get=lambda t: _measure(t, "gold-context oracle")),
        ),
    ),
    Exercise(
        id="4.3",
        title="The ceiling",
        submit="ceiling, the measure_table of 'loss upstream' with one rate changed",
        solution=('rates = {**systems["readings"]["loss upstream"], "generation": 0.74}\n'
                  'ceiling = measure_table({"loss upstream": rates})\n'
                  "result = ceiling"),
        kind="table",
        expects=(
            Expect("gold-context oracle (k of 1000)", 741,
                   "the oracle measures the generator alone: set the generation rate of 'loss upstream' "
                   "to the value of the 'loss in generation' system",
                   get=lambda t: _measure(t, "gold-context oracle")),
            Expect("end to end (k of 1000)", 525,
                   "a weaker generator multiplies the whole product down",
                   get=lambda t: _measure(t, "end to end")),
            Expect("retrieved-context sufficiency (k of 1000)", 713,
                   "sufficiency never asks the generator: change generation only",
                   get=lambda t: _measure(t, "retrieved-context sufficiency")),
        ),
    ),
    Exercise(
        id="4.4",
        title="Chase the wrong passage",
        submit="rare_kinds, the Counter of generation kinds of the specific-rare questions",
        solution=('types = {name: dict(spec) for name, spec in systems["question_types"].items()}\n'
                  'types["specific-rare"]["kinds"] = {"wrong_passage": 1.0}\n'
                  'retyped = simulate_pipeline(N, types=types, seed=SEED, pipeline="mixed")\n'
                  'rare_kinds = Counter(generation_kind(t) for t in retyped.traces\n'
                  '                     if t.meta["qtype"] == "specific-rare" and generation_kind(t))\n'
                  "result = rare_kinds"),
        expects=(
            Expect("generation kinds present", ["wrong_passage"],
                   "the kinds weights of 'specific-rare' decide how its generation failures are drawn: "
                   "give all the weight to one kind",
                   get=lambda c: sorted(k for k, v in dict(c).items() if v)),
        ),
    ),
    Exercise(
        id="4.5",
        title="More questions",
        submit="the dict {'n': ..., 'width_ratio': ...} the exercise cell builds",
        solution=("bigger = measure_table(systems['readings'], n=4000)\n"
                  "width_ratio = (bigger.high - bigger.low).mean() / (oracles.high - oracles.low).mean()\n"
                  "result = {'n': int(bigger.n.max()), 'width_ratio': width_ratio}"),
        expects=(
            Expect("n", 4000, "pass four times the chapter's N as n to measure_table"),
            Expect("width_ratio", 0.5,
                   "four times the questions: how does a Wilson interval's width scale with n?", places=1),
        ),
    ),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    '4.1': ('qu-1 lands in `retrieval`; query understanding reads 2 of 3 and retrieval 2 of 3. A bad rewrite '
            'judged right passes query understanding, and the term it dropped then makes retrieval miss the gold: '
            'the loss shows up one stage late, as a retrieval failure.'),
    '4.2': ('Sufficiency rises to 902 of 1000 and end to end to 861; the oracle stays at 952. With a perfect '
            'retriever only reranking and assembly (0.95 × 0.95 ≈ 0.90) lose evidence before generation, and the '
            'oracle, which hands the generator the gold passage, never sees the retriever.'),
    '4.3': ('The oracle falls to 741 and end to end to 525; sufficiency stays at 713. The oracle and the '
            'end-to-end score both run the generator, so a weaker one lowers both; sufficiency stops before '
            'generation.'),
    '4.4': ("Only `wrong_passage` is left among the specific-rare questions' generation failures. The kinds "
            "weights decide how the simulation draws each failure's kind, so all the weight on one kind makes "
            'every failure that kind: the split reads back what the simulation was told.'),
    '4.5': ("n = 4000 and the intervals are about half as wide (ratio 0.5). A Wilson interval's width shrinks "
            'with the square root of n: four times the questions halves it.'),
}
EXERCISES = explained(EXERCISES, WHY)
