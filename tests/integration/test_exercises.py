"""The exercise self-checks: the registry, the check itself, and every solution run as a reader runs it.

Each solution runs in its chapter's namespace (every code cell of the chapter notebook first,
through IPython; see ``chapter_namespace.py``) and must pass its own self-check; a result of
the wrong shape, or the chapter's unedited state, must not. The chapter notebooks must hold a
self-check cell for each of their exercises, and each solutions notebook must be exactly what
``ragstage.exercises.solutions`` generates from the declarations.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from chapter_namespace import NOTEBOOKS, run_solution, shared_chapter

from ragstage import exercises as ex_pkg
from ragstage.exercises import CheckResult, Exercise, Expect, check, evaluate, exercise, exercises
from ragstage.exercises.solutions import solution_cell, solutions_notebook, solutions_path

ALL = exercises()
CHAPTERS = ex_pkg.chapters()
SELF_CHECK = re.compile(r"""\bcheck\(\s*["'](\d+[a-z]?\.\d+)["']""")


# -- the check ----------------------------------------------------------------------------------
TOY = Exercise(id="9.1", title="toy", submit="a mapping with stage and recall", solution="result = {}",
               expects=(Expect("stage", "reranking", "look at the reranked list"),
                        Expect("recall", 0.5, "count the gold ids retrieved")))


def test_right_result_is_ok():
    outcome = evaluate(TOY, {"stage": "reranking", "recall": 0.5000001})
    assert outcome.ok and bool(outcome) and outcome.problems == ()
    assert str(outcome) == "Exercise 9.1: right."


def test_wrong_result_says_where_to_look_and_shows_the_readers_value_not_the_answer():
    outcome = evaluate(TOY, {"stage": "retrieval", "recall": 0.25})
    assert not outcome.ok and not bool(outcome)
    text = str(outcome)
    assert "not yet" in text and "look at the reranked list" in text and "count the gold ids" in text
    assert "'retrieval'" in text and "0.250" in text
    assert "reranking" not in text.replace("reranked", "") and "0.5" not in text.replace("0.500", "")


def test_result_of_the_wrong_shape_says_what_to_pass():
    outcome = evaluate(TOY, 42)
    assert not outcome.ok
    assert all("a mapping with stage and recall" in p for p in outcome.problems)


def test_a_table_where_one_value_was_wanted_says_what_to_pass():
    import pandas as pd

    outcome = evaluate(TOY, pd.DataFrame({"stage": ["reranking", "none"], "recall": [0.5, 1.0]}))
    assert not outcome.ok and all("not one value" in p for p in outcome.problems)


def test_getter_errors_are_reported_not_raised():
    boom = Exercise(id="9.2", title="t", submit="a table", solution="result = 0",
                    expects=(Expect("cell", 1, "h", get=lambda r: r["missing"]),))
    outcome = evaluate(boom, {})
    assert not outcome.ok and "KeyError" in outcome.problems[0] and "a table" in outcome.problems[0]


@pytest.mark.parametrize("got, want, same", [
    (0.0385, 0.039, True), (0.0375, 0.039, False), (True, 1.0, False), (None, 0.0, False),
    (1, 1.0, True), ([0.1, 0.2], [0.1, 0.2], True), ("none", "none", True), (2, 3, False),
])
def test_matching_rounds_floats_to_the_printed_places(got, want, same):
    assert Expect("x", want, "h").matches(got) is same


EDITED = Exercise(id="9.2", title="toy edit", submit="a mapping", solution="result = {}", kind="",
                  expects=(Expect("retention", 1.0, "d2 is not in the prompt yet: edit the prompt", edit=True),
                           Expect("stage", "generation", "look at what the answer names",
                                  why=lambda got: "by=None pools the groups" if got == "all" else None)))


def test_a_missing_edit_gets_the_edit_hint_alone():
    outcome = evaluate(EDITED, {"retention": 0.0, "stage": "prompt_assembly"})
    assert outcome.problems == ("retention is 0.000: d2 is not in the prompt yet: edit the prompt",)
    outcome = evaluate(EDITED, {"retention": 1.0, "stage": "prompt_assembly"})
    assert outcome.problems == ("stage is 'prompt_assembly': look at what the answer names",)


def test_a_recognised_wrong_value_gets_its_own_hint():
    assert evaluate(EDITED, {"retention": 1.0, "stage": "all"}).problems == (
        "stage is 'all': by=None pools the groups",)


@pytest.mark.parametrize(("kind", "result", "slip"), [
    ("bucket", "prompt assembly", "'prompt assembly' is not a bucket name: the buckets are endpoint_unavailable"),
    ("bucket", 3, "an int, not a bucket name"),
    ("number", "897", "'897' is a string, not a number"),
    ("number", [897], "a list, not a number"),
    ("table", {"stage": ["none"], "count": [2]}, "a dict of lists, not a table: pass the DataFrame itself"),
    ("table", __import__("collections").Counter(none=2), "a Counter, not a table"),
    ("traces", __import__("collections").Counter(none=2), "a Counter, not the traces"),
    ("ids", "1, 2", "a str, not a list of query ids"),
])
def test_a_result_of_another_kind_gets_the_slip_named_first(kind, result, slip):
    toy = Exercise(id="9.3", title="toy", submit="x", solution="result = 1", kind=kind,
                   expects=(Expect("value", 1, "a reasoning hint"),))
    outcome = evaluate(toy, result)
    assert len(outcome.problems) == 1 and slip in outcome.problems[0], outcome.problems
    assert "a reasoning hint" not in str(outcome)


def test_a_value_rounded_to_the_stated_precision_is_right_and_shown_with_its_digits():
    toy = Exercise(id="9.4", title="toy", submit="p", solution="result = 1", kind="number",
                   expects=(Expect("value", 0.000431, "pass the published counts", places=4),))
    assert evaluate(toy, 0.0004).ok and evaluate(toy, 0.000431).ok and evaluate(toy, round(0.000431, 4)).ok
    assert evaluate(toy, 0.0006).problems == ("value is 0.0006: pass the published counts",)
    assert evaluate(toy, 0.00001).problems == ("value is 1e-05: pass the published counts",)
    assert evaluate(toy, 1.0).problems == ("value is 1.000: pass the published counts",)


def test_unknown_ids_raise_clearly():
    with pytest.raises(KeyError, match="chapters with exercises"):
        check("99.1", None)
    with pytest.raises(KeyError, match="chapter 1 has 1.1"):
        check("1.99", None)
    with pytest.raises(KeyError):
        exercise("two.seven")


# -- the registry -------------------------------------------------------------------------------
def test_chapters_one_to_three_declare_exercises():
    assert {1, 2, 3} <= set(CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_ids_are_chapter_dot_n_numbered_from_one(chapter):
    ids = [ex.id for ex in exercises(chapter)]
    assert ids == [f"{chapter}.{n}" for n in range(1, len(ids) + 1)]
    assert (NOTEBOOKS / ex_pkg.notebook(chapter)).exists()


@pytest.mark.parametrize("ex", ALL, ids=[e.id for e in ALL])
def test_a_hint_never_holds_its_expected_value(ex):
    for expect in ex.expects:
        value = expect.value
        if isinstance(value, bool):
            continue
        shown = {f"{value:.3f}", f"{value:g}"} if isinstance(value, float) else {str(value)}
        for text in shown:
            pattern = rf"(?<![\w.]){re.escape(text)}(?![\w.])"
            assert not re.search(pattern, expect.hint), f"{ex.id}: the hint for {expect.what} gives {text!r} away"


@pytest.mark.parametrize("ex", ALL, ids=[e.id for e in ALL])
def test_nothing_passes_an_empty_result(ex):
    assert not check(ex.id, None).ok
    assert not check(ex.id, object()).ok


# -- the chapters and the solutions notebooks ---------------------------------------------------
def _code(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_has_a_self_check_cell_in_its_chapter(chapter):
    cells = _code(NOTEBOOKS / ex_pkg.notebook(chapter))
    found = [i for source in cells for i in SELF_CHECK.findall(source)]
    declared = [ex.id for ex in exercises(chapter)]
    assert sorted(set(found)) == sorted(declared), f"self-check cells {found}, declared {declared}"
    assert any("from ragstage.exercises import check" in s for s in cells), "the chapter must import check"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solutions_notebook_is_generated_from_the_declarations(chapter):
    path = NOTEBOOKS / solutions_path(chapter)
    assert path.exists(), f"missing {path.relative_to(NOTEBOOKS.parent)}"
    def shape(cells):
        return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in cells]
    stored = shape(nbformat.read(path, as_version=4).cells)
    generated = shape(solutions_notebook(chapter).cells)
    command = f"python -m ragstage.exercises.solutions {chapter} notebooks/{solutions_path(chapter)}"
    assert stored == generated, f"{path.name} differs from its declarations: regenerate it with {command}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solutions_notebook_stores_a_right_self_check_for_every_exercise(chapter):
    nb = nbformat.read(NOTEBOOKS / solutions_path(chapter), as_version=4)
    shown = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        for match in re.finditer(r"Exercise (\d+[a-z]?\.\d+): (right|not yet)", text):
            shown[match.group(1)] = match.group(2)
    assert shown == {ex.id: "right" for ex in exercises(chapter)}


# -- every solution, from its chapter's namespace -----------------------------------------------
@pytest.fixture(scope="module")
def namespaces():
    return lambda chapter: shared_chapter(ex_pkg.notebook(chapter))


@pytest.mark.parametrize("ex", ALL, ids=[e.id for e in ALL])
def test_solution_passes_its_self_check_in_the_chapter_namespace(ex, namespaces):
    chapter = namespaces(ex.chapter)
    result = run_solution(chapter, ex.solution, ex.id)
    outcome = check(ex.id, result)
    assert isinstance(outcome, CheckResult) and outcome.ok, str(outcome)
    # the cell of the solutions notebook is the same code plus its check
    with chapter.kernel() as namespace:
        exec(compile(solution_cell(ex.id, ex.solution), f"<cell {ex.id}>", "exec"), namespace)


# -- the solutions teach ------------------------------------------------------------------------
def _forms(value) -> set[str]:
    if isinstance(value, bool):
        return set()
    if isinstance(value, (list, tuple)):
        return set().union(*(_forms(v) for v in value)) if value else set()
    if isinstance(value, float):
        return {f"{value:g}", f"{value:.1f}", f"{value:.2f}", f"{value:.3f}"}
    return {str(value)}


@pytest.mark.parametrize("ex", ALL, ids=[e.id for e in ALL])
def test_every_solution_states_its_value_and_why_in_two_to_four_sentences(ex):
    sentences = [s for s in re.split(r"(?<=[.!?:)])\s+(?=[A-Z0-9`*])", ex.why.strip()) if s]
    assert 2 <= len(sentences) <= 5, f"{ex.id}: the why has {len(sentences)} sentences: {ex.why!r}"
    forms = set().union(*(_forms(e.value) for e in ex.expects))
    assert not forms or any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\w])", ex.why) for f in forms), (
        f"{ex.id}: the why states none of the values {sorted(forms)}")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_solutions_notebook_shows_the_why_after_each_solution(chapter):
    cells = solutions_notebook(chapter).cells
    for ex in exercises(chapter):
        (at,) = [i for i, c in enumerate(cells) if c.cell_type == "code" and f"check({ex.id!r}, result)" in c.source]
        assert cells[at + 1].cell_type == "markdown" and ex.why in cells[at + 1].source


def test_the_hand_trace_is_solved_by_reading_the_lists_not_by_the_walk():
    assert "walk(" not in exercise("1.1").solution and "diagnose(" not in exercise("1.1").solution


def test_no_chapter_code_quotes_the_sentence_exercise_7_7_asks_for():
    from ragstage.exercises.ch07 import ZINC_FIRST, ZINC_LAST
    from ragstage.ingest.demo import load_corpus

    text = next(d["text"] for d in load_corpus() if d["_id"] == "1042")
    sentence = text[text.index(ZINC_FIRST):text.index(ZINC_LAST) + len(ZINC_LAST)]
    pieces = {sentence[i:i + 30] for i in range(len(sentence) - 29)}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for source in _code(path):
            found = [p for p in pieces if p in source]
            assert not found, f"{path.name} quotes the answer of exercise 7.7: {found[0]!r}"
