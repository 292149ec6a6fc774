"""Chapter 6, reading the run: the expected outcome of every exercise, with its solution.

The solutions run in the chapter's namespace after its cells: ``mcnemar``, ``published``,
``prompt_ceiling``, ``system_traces``, ``oracle_traces``, ``diagnose``-free checks through the
package, ``Points``, ``agreed``, ``load_run`` and ``attribution_table`` are the chapter's own.
"""

from __future__ import annotations

from typing import Any

from ._core import Exercise, Expect, explained

NOTEBOOK = "06_reading_the_run.ipynb"


def _row(table: Any, group: str | None = None) -> Any:
    """The first row of a pandas table (of ``group`` when given)."""
    rows = table if group is None else table[table["group"] == group]
    if len(rows) == 0:
        raise ValueError("the table has no rows: pass the table the cell printed")
    return rows.iloc[0]


def _largest_bucket(table: Any) -> str:
    return str(table.sort_values("count", ascending=False).iloc[0]["stage"])


def _pooled(groups: Any) -> str | None:
    """The hint for a table grouped by nothing (``by=None``), which hides the system's own name."""
    if list(groups) == ["all"]:
        return ("by=None pools every pipeline into one group, 'all': keep the table by pipeline (the default), "
                "so the group names the system the logs came from")
    return None


def _query_ids(result: Any) -> list[str]:
    if isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
        raise TypeError("pass a list of query ids")
    return sorted(str(q) for q in result)


EXERCISES = (
    Exercise(
        id="6.1",
        title="A paired test by hand",
        submit="the p-value mcnemar(fixed, broken) returns for the published reranker comparison",
        solution="result = mcnemar(32, 9)",
        kind="number",
        expects=(
            Expect("value", 0.000431, "the published comparison fixed 32 claims and broke 9: pass those two counts",
                   places=4),
        ),
    ),
    Exercise(
        id="6.2",
        title="The ceiling",
        submit="the table prompt_ceiling({'what if': counts}) returns after your edit",
        solution=('counts = dict(published.buckets["minilm+ce/revised-prompt"])\n'
                  'counts["reranking"] -= 20\n'
                  'counts["generation"] += 20\n'
                  'result = prompt_ceiling({"what if": counts})'),
        kind="table",
        expects=(
            Expect("questions", 300, "move claims between buckets; do not add or drop any",
                   get=lambda t: int(_row(t)["questions"])),
            Expect("reached_prompt", 227, "the claims the reranker now keeps reach the prompt: take them out of "
                   "reranking and put them into generation", get=lambda t: int(_row(t)["reached_prompt"])),
            Expect("right", 151, "the kept claims land in generation, not in none: the model has not answered "
                   "them right yet", get=lambda t: int(_row(t)["right"])),
        ),
    ),
    Exercise(
        id="6.3",
        title="What the oracle fixed",
        submit="a list of the query ids wrong under the full system and right under the oracle",
        solution=("from ragstage import diagnose\n\n"
                  "right = {t.query_id for t in oracle_traces if diagnose(t).stage.value == 'none'}\n"
                  "result = [t.query_id for t in system_traces if diagnose(t).stage.value != 'none' "
                  "and t.query_id in right]"),
        kind="ids",
        expects=(
            Expect("claims", ["1", "2"], "a claim counts when it is wrong in system_traces and its bucket is none "
                   "in oracle_traces; the oracle's migration row of reranking holds them", get=_query_ids),
        ),
    ),
    Exercise(
        id="6.4",
        title="Trust the judge, and see where it sends you",
        submit="Points(...) built with the judge's sufficiency",
        solution=("result = Points(correctness(system_traces), correctness(oracle_traces),\n"
                  "                (agreed.both_yes + agreed.judge_only, agreed.n))"),
        expects=(
            Expect("sufficiency", (13, 13), "count the claims the judge called sufficient (judge True), over "
                   "the readable verdicts"),
            Expect("reading", "generation fails with the evidence in front of it",
                   "with the judge's sufficiency the second gap grows: read what Points.reading() says now",
                   get=lambda p: p.reading().split(":")[0]),
        ),
    ),
    Exercise(
        id="6.5",
        title="Your own logs, tried on stored ones",
        submit="attribution_table(own_run.all_traces()) for the folder holding the incident batch",
        solution=("own_folder = Path(tempfile.mkdtemp(prefix='own-logs-'))\n"
                  "shutil.copy(fixtures_dir() / 'incidents' / 'batch.jsonl', own_folder)\n"
                  "own_run = load_run(own_folder)\n"
                  "result = attribution_table(own_run.all_traces())"),
        kind="table",
        expects=(
            Expect("groups", ["support-bot"], "load the folder you copied the batch into, not RUN_FOLDER",
                   get=lambda t: sorted(set(t["group"])), why=_pooled),
            Expect("n", 40, "copy batch.jsonl (the whole batch), not four_logs.jsonl",
                   get=lambda t: int(_row(t)["n"])),
            Expect("largest bucket", "generation", "sort the table by count", get=_largest_bucket),
        ),
    ),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    '6.1': ('p = 0.0004 (0.000431): below 0.05 and below 0.001. 32 fixes against 9 breaks on 41 flipped claims is '
            'far more lopsided than chance makes it; the exact test reads only those 41 claims.'),
    '6.2': ('227 claims reach the prompt (207 + 20) and 151 are still right. Keeping claims past the reranker '
            'raises the ceiling a prompt change can reach, not the score: the kept claims still need the '
            'generator to answer them right.'),
    '6.3': ('Claims 1 and 2. Both were lost at reranking under the full system (the top-10 cut) and are right '
            'under the oracle: starved, not misread, so their points are upstream, in the ranking.'),
    '6.4': ('Sufficiency becomes 13 of 13 and the reading flips to "generation fails with the evidence in front '
            'of it". An always-YES judge inflates sufficiency above correctness and sends the team to the '
            'generator, while the exact rule says the evidence was missing: that is why the judge is checked '
            'first.'),
    '6.5': ('One group, `support-bot`, 40 incidents, and `generation` is the largest bucket. Any folder of traces '
            'reads like a run, grouped by its `pipeline` field; without a receipt the provenance cell can only '
            'say the models are unknown.'),
}
EXERCISES = explained(EXERCISES, WHY)
