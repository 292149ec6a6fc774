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
from chapter_namespace import NOTEBOOKS, run_chapter, run_solution

from ragstage import exercises as ex_pkg
from ragstage.exercises import CheckResult, Exercise, Expect, check, exercise, exercises
from ragstage.exercises._core import evaluate
from ragstage.exercises.solutions import solution_cell, solutions_notebook, solutions_path

ALL = exercises()
CHAPTERS = ex_pkg.chapters()
SELF_CHECK = re.compile(r"""\bcheck\(\s*["'](\d+\.\d+)["']""")


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
        for match in re.finditer(r"Exercise (\d+\.\d+): (right|not yet)", text):
            shown[match.group(1)] = match.group(2)
    assert shown == {ex.id: "right" for ex in exercises(chapter)}


# -- every solution, from its chapter's namespace -----------------------------------------------
@pytest.fixture(scope="module")
def namespaces(tmp_path_factory):
    cache: dict[int, dict] = {}

    def get(chapter: int) -> dict:
        if chapter not in cache:
            cache[chapter] = run_chapter(ex_pkg.notebook(chapter), tmp_path_factory.mktemp(f"ch{chapter}"))
        return cache[chapter]
    return get


@pytest.mark.parametrize("ex", ALL, ids=[e.id for e in ALL])
def test_solution_passes_its_self_check_in_the_chapter_namespace(ex, namespaces):
    chapter = namespaces(ex.chapter)
    result = run_solution(chapter, ex.solution, ex.id)
    outcome = check(ex.id, result)
    assert isinstance(outcome, CheckResult) and outcome.ok, str(outcome)
    # the cell of the solutions notebook is the same code plus its check
    with chapter.kernel() as namespace:
        exec(compile(solution_cell(ex.id, ex.solution), f"<cell {ex.id}>", "exec"), namespace)
