"""Chapter 1, five cases: the expected outcome of every exercise, with its solution.

The exercises edit the cases in the chapter's case editor (``editor``), so every solution
starts from ``editor.reset()`` and reads the editor's state afterwards, exactly what a
reader's self-check cell reads.
"""

from __future__ import annotations

from ._core import Exercise, Expect, explained

NOTEBOOK = "01_five_cases.ipynb"


def _none_row(table):
    """The ``none`` row of a bucket table (the editor's ``editor.table``)."""
    rows = table[table["stage"] == "none"]
    if rows.empty:
        raise ValueError("the table has no 'none' row: no case is answered correctly yet")
    return rows.iloc[0]


def _edit(exercise_id: str, title: str, case: str, typed: str, edit: str, *expects: Expect,
          read: str = "diagnoses") -> Exercise:
    """An exercise that edits one case in the chapter's editor and checks what the editor shows.

    ``edit`` is the argument list of ``editor.set_case`` as the reader types it
    (``'retrieved="d1, d2"'``); ``read`` is the editor's state the self-check reads.
    """
    return Exercise(
        id=exercise_id, title=title,
        submit=f'editor.{read}["{case}"], after {typed}',
        solution=f'editor.reset()\neditor.set_case("{case}", {edit})\nresult = editor.{read}["{case}"]',
        expects=expects)


EXERCISES = (
    Exercise(
        id="1.1",
        title="Trace case D by hand",
        submit='the bucket name you traced, as a string (e.g. "retrieval")',
        solution=('d = cases[3]\n'
                  'print("d2 in retrieved:", "d2" in d.retrieved)   # yes: retrieval kept it\n'
                  'print("d2 in reranked: ", "d2" in d.reranked)    # yes: reranking kept it\n'
                  'print("d2 in prompt:   ", "d2" in d.prompt)      # no: the first list without d2\n'
                  'result = "prompt_assembly"'),
        kind="bucket",
        expects=(
            Expect("value", "prompt_assembly",
                   "follow d2 through case D's lists in order (retrieved, reranked, prompt): the bucket is "
                   "named after the first list d2 is missing from, and only if it reached the prompt does "
                   "the answer matter"),
        ),
    ),
    _edit("1.2", "Retrieve d2 in case A", "A", 'setting A\'s retrieved to "d1, d2" and its reranked to empty',
          'retrieved="d1, d2", reranked=""',
          Expect("stage", "reranking",
                 "is d2 in A's retrieved list now, and is it in the reranked list? The walk stops at the "
                 "first stage whose output lacks d2"),
          Expect("recall", 1.0, "recall is the share of gold ids in the retrieved list: check A's retrieved box"),
          Expect("retention", 0.0, "retention is the share of gold ids in the prompt: A's prompt is unchanged")),
    _edit("1.3", "Put d2 into case D's prompt", "D", 'setting D\'s prompt to "d1, d2"',
          'prompt="d1, d2"',
          Expect("retention", 1.0, "d2 is not in D's prompt yet: type both ids into D's prompt box and press "
                 "Enter (or run the set_case line), then run the self-check again", edit=True),
          Expect("stage", "generation",
                 "with d2 in the prompt, assembly kept the evidence; look at what D's answer names"),
          Expect("reason", "named a non-gold passage",
                 "the reason describes the answer: which id does D's answer name, and is it gold?")),
    Exercise(
        id="1.4",
        title="Fix case C's answer",
        submit="editor.table, after setting C's answer_ids to d2",
        solution='editor.reset()\neditor.set_case("C", answer_ids="d2")\nresult = editor.table',
        kind="table",
        expects=(
            Expect("count of none", 2, "count the cases whose answer names the gold d2 with d2 in the prompt",
                   get=lambda table: int(_none_row(table)["count"])),
            Expect("low end of none's interval", 0.082,
                   "the interval is a Wilson interval over every case in the editor, not only the five "
                   "relevance cases: read the n column", get=lambda table: float(_none_row(table)["low"])),
            Expect("high end of none's interval", 0.641, "as for the low end: which n does the table use?",
                   get=lambda table: float(_none_row(table)["high"])),
        ),
    ),
    _edit("1.5", "Refuse in case E", "E", 'ticking refused for E',
          'refused=True',
          Expect("stage", "generation",
                 "E's evidence reached the prompt; a refusal is the model's choice, so which stage made it?"),
          Expect("reason", "refused despite evidence in the prompt",
                 "the reason should say why the answer failed: did you tick refused, and only that?")),
    _edit("1.6", "Label case G", "G", 'giving G the gold d3',
          'gold="d3"',
          Expect("stage", "none",
                 "with a gold id the walk can run: is d3 in every list of G, and what does G's answer name?")),
    _edit("1.7", "Stop logging E's prompt", "E", "setting E's prompt to null",
          'prompt="null"',
          Expect("stage", "not_logged",
                 "type null (not an empty box): null means the prompt was not recorded, an empty box "
                 "means an empty prompt, and the two are diagnosed differently")),
    _edit("1.8", "An edit the trace cannot have", "B", 'setting B\'s reranked to "d1, d9"',
          'reranked="d1, d9"',
          Expect("a warning under B", True, "B's warning is empty, so the edit has not reached the editor: "
                 "type the ids into B's reranked box and press Enter (or run the set_case line)",
                 get=lambda w: bool(w.value.strip()), edit=True),
          Expect("warning names d9", True,
                 "the warning names another id: set B's reranked to the two ids the exercise gives, "
                 "one of them never retrieved", get=lambda w: "d9" in w.value),
          Expect("warning says d9 is not in the corpus", True,
                 "the editor checks ids against the corpus only when it was given one: "
                 "CaseEditor(..., corpus=corpus_ids)", get=lambda w: "not in the corpus" in w.value),
          read="warnings"),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    '1.1': ("The bucket is `prompt_assembly`. d2 is in case D's retrieved list and in its reranked list, and "
            'missing from its prompt: the prompt is the first list without d2, so the walk stops there and never '
            "reads D's answer. The reranker kept d2; assembly dropped its text."),
    '1.2': ('A moves from `retrieval` to `reranking`, with recall 1.0 and retention 0.0. Retrieving d2 repairs '
            "retrieval's loss, but A's reranked list is still empty, so the loss moves one stage down: fixing a "
            'stage reveals the next loss, not a right answer.'),
    '1.3': ('D moves to `generation`, with the reason "named a non-gold passage". With d2 in the prompt assembly '
            "no longer loses it, and D's answer still names d1: the evidence was in front of the model and it "
            'chose another passage, the one kind of loss a prompt or model change can fix.'),
    '1.4': ("Two cases are now `none`, with a Wilson interval of 0.082 to 0.641. The editor's table divides by "
            'all seven cases, F and G included, so the share is 2 of 7; with seven cases the interval still '
            'covers most of the range.'),
    '1.5': ('E moves to `generation`, with the reason "refused despite evidence in the prompt". d2 reached the '
            'prompt, so declining to answer is the model not using evidence it had. A refusal is the safe outcome '
            "only when the evidence is absent (chapter 3's refusal buckets)."),
    '1.6': ("G lands in `none`. With gold d3 the walk can run: d3 is in every list of G and G's answer names it, "
            'so no stage lost anything. A question enters the relevance buckets only once someone labels it.'),
    '1.7': ('E becomes `not_logged`. `null` says the prompt was not recorded, so the walk cannot tell whether d2 '
            "reached the model: E is neither right nor a stage's loss. An empty box would have said the opposite, "
            'an empty prompt, and put E in `prompt_assembly`.'),
    '1.8': ("B's warning names d9 and says it is not in the corpus. A reranker can only reorder and cut what "
            'retrieval returned, so an id in `reranked` that was never retrieved is a logging or editing error, '
            'and the diagnosis of such a trace is not to be taken at face value.'),
}
EXERCISES = explained(EXERCISES, WHY)
