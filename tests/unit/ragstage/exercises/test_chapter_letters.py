"""A chapter between two others (6b) declares its exercises like any chapter: found, ordered, checked."""

from __future__ import annotations

import pytest

from ragstage.exercises import chapters, check, exercise, exercises, notebook
from ragstage.exercises.solutions import solutions_notebook, solutions_path


def test_a_lettered_chapter_sits_between_its_neighbours():
    found = chapters()
    assert "6b" in found and found.index(6) < found.index("6b") < found.index(7)
    assert all(isinstance(c, int) for c in found if c != "6b")


def test_its_exercises_are_numbered_and_found_by_id():
    ids = [ex.id for ex in exercises("6b")]
    assert ids == [f"6b.{n}" for n in range(1, len(ids) + 1)]
    assert exercise("6b.1").chapter == "6b" and exercise("6.1").chapter == 6
    assert notebook("6b") == "06b_gold_for_a_few.ipynb"
    assert solutions_path("6b") == "solutions/06b_gold_for_a_few_solutions.ipynb"
    assert solutions_notebook("6b").cells[0].source.startswith("# Chapter 6b: solutions")


@pytest.mark.parametrize("bad", ["6c.1", "6b.99", "b6.1", "6bb.1"])
def test_an_id_no_chapter_declares_is_a_clear_error(bad):
    with pytest.raises(KeyError, match="no exercise"):
        check(bad, 1)
