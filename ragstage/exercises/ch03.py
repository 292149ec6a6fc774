"""Chapter 3, policy versions and incident logs: expected outcomes and solutions.

Every edit goes through :func:`ragstage.fixtures.edit_case` (one call, validated, on a copy),
so no exercise asks the reader to edit a JSON line by hand.
"""

from __future__ import annotations

from typing import Any

from ._core import Exercise, Expect, explained

NOTEBOOK = "03_policy_versions.ipynb"


def _inc_209(traces: Any) -> Any:
    found = [t for t in traces if t.query_id == "inc-209"]
    if not found:
        raise ValueError("no inc-209 among your traces: pass the edited batch")
    return found[0]


def _keeps_the_first_passages(traces: Any) -> bool:
    """Whether inc-209's prompt still holds the passages it was logged with."""
    from ..fixtures import load_traces

    (logged,) = [t for t in load_traces("incidents", "batch.jsonl") if t.query_id == "inc-209"]
    return set(logged.prompt) <= set(_inc_209(traces).prompt or ())


def _replayed(bucket: str) -> Any:
    def read(traces: Any) -> int:
        from ..attribution import replay

        return replay(traces)[bucket]
    return read

EXERCISES = (
    Exercise(
        id="3.1",
        title="A fifth audit edit",
        submit='the diagnosis (require="all") of retrieval-miss with retrieved = returns-v2, returns-v1',
        solution=('edited = edit_case(audit, "retrieval-miss", retrieved=["returns-v2", "returns-v1"])\n'
                  'result = diagnose(find_case(edited, "retrieval-miss"), "all")'),
        expects=(
            Expect("recall", 1.0, "the gold policy is not in the retrieved list yet: pass the retrieved list the "
                   "exercise gives to edit_case (retrieved=[...])", edit=True),
            Expect("stage", "prompt_assembly",
                   "retrieval now holds the current policy; compare the prompt list with the gold"),
            Expect("retention", 0.0, "retention counts gold ids in the prompt list, which you did not change"),
        ),
    ),
    Exercise(
        id="3.2",
        title="The any-convention",
        submit='the diagnosis of the fourth audit edit with require="any"',
        solution=('fourth = spec["exercises"][3]\n'
                  'result = diagnose(by_id[fourth["case"]].replace(**fourth["edit"]), "any")'),
        expects=(
            Expect("stage", "unjudged",
                   'under "any" one gold id in the prompt is enough; then what judges the answer, '
                   "claims or a correct label?"),
            Expect("recall", 0.5, "recall does not depend on the convention: count the gold ids retrieved"),
        ),
    ),
    Exercise(
        id="3.3",
        title="Judge the supported answer",
        submit="the diagnosis (require=\"all\") of supported-answer with correct = False",
        solution=('edited = edit_case(audit, "supported-answer", correct=False)\n'
                  'result = diagnose(find_case(edited, "supported-answer"), "all")'),
        expects=(
            Expect("stage", "source_or_label",
                   "every claim is supported by the prompt, and still wrong: which part of the system "
                   "is left to blame?"),
        ),
    ),
    Exercise(
        id="3.4",
        title="A supported but incomplete answer",
        submit='the diagnosis (require="all") of supported-answer with correct = False and complete = False',
        solution=('edited = edit_case(audit, "supported-answer", correct=False, complete=False)\n'
                  'result = diagnose(find_case(edited, "supported-answer"), "all")'),
        expects=(
            Expect("stage", "generation",
                   "an answer that leaves out what the evidence says is the model's omission; set both fields"),
            Expect("reason", "supported by the prompt but incomplete (partial extraction)",
                   "the reason should name the missing part of the answer: is complete False?"),
        ),
    ),
    Exercise(
        id="3.5",
        title="Fix an eviction",
        submit="edited, the batch with handbook:leave added to inc-209's prompt",
        solution=('before = find_case(batch, "inc-209")\n'
                  'edited = edit_case(batch, "inc-209", prompt=[*before.prompt, "handbook:leave"])\n'
                  "result = edited"),
        kind="traces",
        expects=(
            Expect("handbook:leave in inc-209's prompt", True, "the edit has not reached inc-209's prompt: "
                   "pass the edited list (edited), with prompt=[...] in edit_case", edit=True,
                   get=lambda ts: "handbook:leave" in (_inc_209(ts).prompt or ())),
            Expect("inc-209's logged passages kept", True, "inc-209's prompt lost the passages it was logged "
                   "with: add handbook:leave after them (find_case(batch, \"inc-209\").prompt shows them)",
                   edit=True, get=_keeps_the_first_passages),
            Expect("prompt_assembly", 8, "replay the edited list, not batch", get=_replayed("prompt_assembly")),
            Expect("generation", 11, "the evidence now reaches the model: what does inc-209's answer say?",
                   get=_replayed("generation")),
        ),
    ),
    Exercise(
        id="3.6",
        title="Make the fix honest",
        submit="compare(batch, edited) with inc-210, inc-211 and inc-212 judged correct in the after run",
        solution=('edited = edit_case(after, ["inc-210", "inc-211", "inc-212"], correct=True)\n'
                  "result = compare(batch, edited)"),
        expects=(
            Expect("fixed", 5, "edit the after run (after_fix), not the batch, and all three incidents"),
            Expect("broken", 2, "the edit should not touch the questions the fix broke"),
            Expect("p_value", 0.453, "the exact McNemar test reads only fixed and broken"),
        ),
    ),
    Exercise(
        id="3.7",
        title="A numeric claim without a marker",
        submit="the diagnosis of inc-231 with the new answer and correct = False",
        solution=('edited = edit_case(batch, "inc-231", answer="You get 25 days [1]. Part-timers get 12.", '
                  "correct=False)\n"
                  'result = diagnose(find_case(edited, "inc-231"))'),
        expects=(
            Expect("stage", "generation", "is the evidence in inc-231's prompt? Then the answer is the model's"),
            Expect("reason", "numeric claim without a citation marker",
                   "read the answer sentence by sentence: which one states a number and carries no [n]?"),
        ),
    ),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    '3.1': ('`prompt_assembly`, recall 1.0, retention 0.0. The current policy is now retrieved, so retrieval '
            'keeps every gold id, and the prompt list, which you did not change, still lacks it: under '
            '`require="all"` the walk stops at the first list that loses a gold id.'),
    '3.2': ('`unjudged`, recall 0.5. Under "any" one gold id in the prompt is enough, so the walk reaches the '
            'answer, and this case has neither judged claims nor a correct label to judge it by. Recall counts '
            'the gold ids retrieved and does not depend on the convention.'),
    '3.3': ('`source_or_label`. Every claim of the answer is supported by the prompt and the answer is still '
            'judged wrong, so no stage lost anything: the source says something wrong or the label is wrong, and '
            'the fix is in the documents or the labels, not the pipeline.'),
    '3.4': ('`generation`, "supported by the prompt but incomplete (partial extraction)". The answer\'s claims are '
            "supported but it leaves out part of what the evidence says: the model's omission, which needs both "
            '`correct=False` and `complete=False` to be told from a wrong source.'),
    '3.5': ('`prompt_assembly` falls from 9 to 8 and `generation` rises from 10 to 11: inc-209 moves from '
            'assembly to generation. Its evidence now reaches the model, but its logged answer is still wrong, so '
            'the loss moves down a stage. Adding the passage after the two already there keeps the rest of the '
            'prompt as logged.'),
    '3.6': ('5 fixed, 2 broken, exact McNemar p = 0.453. Judging the three incidents right adds three fixes, and '
            'the two incidents the fix broke stay broken; 5 against 2 on seven flips is far from a shown '
            'improvement.'),
    '3.7': ('`generation`, "numeric claim without a citation marker". The evidence is in inc-231\'s prompt and the '
            "answer is wrong, so the loss is the model's; its second sentence states a number and carries no [n], "
            'which is what a citation check flags first.'),
}
EXERCISES = explained(EXERCISES, WHY)
