"""Chapter 5, the run: the expected outcome of every exercise, with its solution.

The outcomes are those of the offline run: the invented mini corpus with the stand-in models
(greedy decoding, so the same inputs give the same answers). They say what the machinery does
with these claims, nothing about SciFact.
"""

from __future__ import annotations

from typing import Any

from ._core import Exercise, Expect, explained

NOTEBOOK = "05_scifact_run.ipynb"


def _moved(comparison: Any, before: str, after: str) -> int:
    """How many questions a comparison moved from bucket ``before`` to bucket ``after``."""
    migration = comparison.migration
    if before not in migration.index or after not in migration.columns:
        return 0
    return int(migration.loc[before, after])


def _row(table: Any) -> Any:
    """The only row of a one-pair ``comparison_table``."""
    if len(table) != 1:
        raise ValueError(f"the table has {len(table)} rows: pass the table of one pair")
    return table.iloc[0]


EXERCISES = (
    Exercise(
        id="5.1",
        title="More room in the prompt",
        submit="budget_change, the comparison of MiniLM at the chapter's budget with MiniLM at the new one",
        solution=('minilm_only = Pipeline(make_retriever("dense", data.corpus, models.embedder), NoReranker(),\n'
                  "                       models.generator, budget=2048)\n"
                  'roomier = minilm_only.run(data.queries, data.qrels,\n'
                  '                          folder_for(f"{RUN_FOLDER}-exercise", "minilm-budget-2048"),\n'
                  '                          data_info={"source": data.source, **data.meta})\n'
                  'budget_change = compare(read_traces(results["dense", False].traces), read_traces(roomier.traces))\n'
                  "result = budget_change"),
        expects=(
            Expect("claims moved from prompt_assembly to generation",
                   2, "double the budget: the claims the budget cut should now reach the prompt",
                   get=lambda c: _moved(c, "prompt_assembly", "generation")),
            Expect("claims left in prompt_assembly", 0,
                   "with twice the room, does any relevant abstract still miss the prompt?",
                   get=lambda c: _moved(c, "prompt_assembly", "prompt_assembly")),
            Expect("fixed", 0, "read the rows of the migration that end in none", get=lambda c: c.fixed),
            Expect("broken", 0, "read the rows of the migration that start in none", get=lambda c: c.broken),
        ),
        output_varies=True,
    ),
    Exercise(
        id="5.2",
        title="Fewer abstracts offered",
        submit="offered_fewer, the dict with the top you offered and the claims lost",
        solution=("fused = Pipeline(make_retriever('dense', data.corpus, models.embedder), models.reranker,\n"
                  "                 models.generator, budget=BUDGET, prompt_top=1)\n"
                  "stages = fused.stages(data.queries)\n"
                  "in_prompt = {qid: bool(set(data.qrels[qid]) & set(stages.prompts[qid].ids))\n"
                  "             for qid in data.queries}\n"
                  "result = {'top': 1, 'lost': sorted((q for q in full if full[q] and not in_prompt[q]), key=int)}"),
        expects=(
            Expect("top", 1, "go down until assembly may use only the single best-ranked abstract"),
            Expect("lost", ["5"],
                   "the claims whose relevant abstract reached the prompt from the top 5 but not now: "
                   "which claim has a sibling abstract ranked above its relevant one?"),
        ),
    ),
    Exercise(
        id="5.3",
        title="Read the prompt change with the paired test",
        submit="prompt_change, the comparison_table of one pair",
        solution=('prompt_change = comparison_table(run.traces, [("minilm+rrf", "minilm+rrf/revised")])\n'
                  "result = prompt_change"),
        expects=(
            Expect("after", "minilm+rrf/revised", "the second label is the revised-prompt run of the same pipeline",
                   get=lambda t: _row(t)["after"]),
            Expect("fixed", 0, "count the claims wrong under the original prompt and right under the revised one",
                   get=lambda t: int(_row(t)["fixed"])),
            Expect("broken", 0, "count the claims right under the original prompt and wrong under the revised one",
                   get=lambda t: int(_row(t)["broken"])),
            Expect("right after", 8, "read right_after", get=lambda t: int(_row(t)["right_after"])),
        ),
    ),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    '5.1': ('2 claims move from `prompt_assembly` to `generation`, none stays in `prompt_assembly`, and nothing '
            'is fixed or broken. With twice the budget every relevant abstract reaches the prompt, but the '
            'stand-in still answers those claims wrong: the loss moves down a stage and the score does not '
            'change.'),
    '5.2': ('top = 1 loses claim 5. Offering fewer abstracts loses a claim only when another abstract is ranked '
            'above its relevant one; on the mini corpus claim 5 alone has such a sibling ranked first.'),
    '5.3': ('The revised prompt fixed 0 claims, broke 0 and got 8 right, as before. The stand-in never answers '
            'NONE and keeps naming the adult trial for claim 13, so on this run a prompt change has nothing to '
            'move: only the paired counts show that it moved nothing, rather than moving claims both ways.'),
}
EXERCISES = explained(EXERCISES, WHY)
