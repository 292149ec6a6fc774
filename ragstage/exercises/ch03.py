"""Chapter 3, policy versions and incident logs: expected outcomes and solutions.

Every edit goes through :func:`ragstage.fixtures.edit_case` (one call, validated, on a copy),
so no exercise asks the reader to edit a JSON line by hand.
"""

from __future__ import annotations

from ._core import Exercise, Expect

NOTEBOOK = "03_policy_versions.ipynb"

EXERCISES = (
    Exercise(
        id="3.1",
        title="A fifth audit edit",
        submit='the diagnosis (require="all") of retrieval-miss with retrieved = returns-v2, returns-v1',
        solution=('edited = edit_case(audit, "retrieval-miss", retrieved=["returns-v2", "returns-v1"])\n'
                  'result = diagnose(find_case(edited, "retrieval-miss"), "all")'),
        expects=(
            Expect("stage", "prompt_assembly",
                   "retrieval now holds the current policy; compare the prompt list with the gold"),
            Expect("recall", 1.0, "recall counts gold ids in the retrieved list"),
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
        title="Fix an eviction",
        submit="replay(...) of the batch with handbook:leave added to inc-209's prompt",
        solution=('before = find_case(batch, "inc-209")\n'
                  'edited = edit_case(batch, "inc-209", prompt=[*before.prompt, "handbook:leave"])\n'
                  "result = replay(edited)"),
        expects=(
            Expect("prompt_assembly", 8, "did the edit reach inc-209's prompt? Replay the edited list, not batch"),
            Expect("generation", 11, "the evidence now reaches the model: what does inc-209's answer say?"),
        ),
    ),
    Exercise(
        id="3.4",
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
        id="3.5",
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
    Exercise(
        id="3.6",
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
        id="3.7",
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
)
