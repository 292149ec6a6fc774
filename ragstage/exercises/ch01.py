"""Chapter 1, five cases: the expected outcome of every exercise, with its solution.

The exercises edit the cases in the chapter's case editor (``editor``), so every solution
starts from ``editor.reset()`` and reads the editor's state afterwards, exactly what a
reader's self-check cell reads.
"""

from __future__ import annotations

from ._core import Exercise, Expect

NOTEBOOK = "01_five_cases.ipynb"


def _none_row(table):
    """The ``none`` row of a bucket table (the editor's ``editor.table``)."""
    rows = table[table["stage"] == "none"]
    if rows.empty:
        raise ValueError("the table has no 'none' row: no case is answered correctly yet")
    return rows.iloc[0]


EXERCISES = (
    Exercise(
        id="1.1",
        title="Trace case D by hand",
        submit='the bucket name you traced, as a string (e.g. "retrieval")',
        solution='result = walk(cases[3])',
        expects=(
            Expect("value", "prompt_assembly",
                   "follow d2 through case D's lists in order (retrieved, reranked, prompt): the bucket is "
                   "named after the first list d2 is missing from, and only if it reached the prompt does "
                   "the answer matter"),
        ),
    ),
    Exercise(
        id="1.2",
        title="Retrieve d2 in case A",
        submit='editor.diagnoses["A"], after setting A\'s retrieved to "d1, d2" and its reranked to empty',
        solution=('editor.reset()\neditor.set_case("A", retrieved="d1, d2", reranked="")\n'
                  'result = editor.diagnoses["A"]'),
        expects=(
            Expect("stage", "reranking",
                   "is d2 in A's retrieved list now, and is it in the reranked list? The walk stops at the "
                   "first stage whose output lacks d2"),
            Expect("recall", 1.0, "recall is the share of gold ids in the retrieved list: check A's retrieved box"),
            Expect("retention", 0.0, "retention is the share of gold ids in the prompt: A's prompt is unchanged"),
        ),
    ),
    Exercise(
        id="1.3",
        title="Put d2 into case D's prompt",
        submit='editor.diagnoses["D"], after setting D\'s prompt to "d1, d2"',
        solution='editor.reset()\neditor.set_case("D", prompt="d1, d2")\nresult = editor.diagnoses["D"]',
        expects=(
            Expect("stage", "generation",
                   "with d2 in the prompt, assembly kept the evidence; look at what D's answer names"),
            Expect("reason", "named a non-gold passage",
                   "the reason describes the answer: which id does D's answer name, and is it gold?"),
        ),
    ),
    Exercise(
        id="1.4",
        title="Fix case C's answer",
        submit="editor.table, after setting C's answer_ids to d2",
        solution='editor.reset()\neditor.set_case("C", answer_ids="d2")\nresult = editor.table',
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
    Exercise(
        id="1.5",
        title="Refuse in case E",
        submit='editor.diagnoses["E"], after ticking refused for E',
        solution='editor.reset()\neditor.set_case("E", refused=True)\nresult = editor.diagnoses["E"]',
        expects=(
            Expect("stage", "generation",
                   "E's evidence reached the prompt; a refusal is the model's choice, so which stage made it?"),
            Expect("reason", "refused despite evidence in the prompt",
                   "the reason should say why the answer failed: did you tick refused, and only that?"),
        ),
    ),
    Exercise(
        id="1.6",
        title="Label case G",
        submit='editor.diagnoses["G"], after giving G the gold d3',
        solution='editor.reset()\neditor.set_case("G", gold="d3")\nresult = editor.diagnoses["G"]',
        expects=(
            Expect("stage", "none",
                   "with a gold id the walk can run: is d3 in every list of G, and what does G's answer name?"),
        ),
    ),
    Exercise(
        id="1.7",
        title="Stop logging E's prompt",
        submit='editor.diagnoses["E"], after setting E\'s prompt to null',
        solution='editor.reset()\neditor.set_case("E", prompt="null")\nresult = editor.diagnoses["E"]',
        expects=(
            Expect("stage", "not_logged",
                   "type null (not an empty box): null means the prompt was not recorded, an empty box "
                   "means an empty prompt, and the two are diagnosed differently"),
        ),
    ),
    Exercise(
        id="1.8",
        title="An edit the trace cannot have",
        submit='editor.warnings["B"], after setting B\'s reranked to "d1, d9"',
        solution='editor.reset()\neditor.set_case("B", reranked="d1, d9")\nresult = editor.warnings["B"]',
        expects=(
            Expect("warning names d9", True,
                   "the warning is empty until an id in reranked was never retrieved: type an id that is "
                   "not in B's retrieved list", get=lambda w: "d9" in w.value),
            Expect("warning says d9 is not in the corpus", True,
                   "the editor checks ids against the corpus only when it was given one: "
                   "CaseEditor(..., corpus=corpus)", get=lambda w: "not in the corpus" in w.value),
        ),
    ),
)
