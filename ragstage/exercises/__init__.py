"""Self-checks for the exercises of every chapter.

Each chapter's exercises, with their expected outcomes and solutions, are declared once in
``ragstage/exercises/chNN.py`` (``EXERCISES``; a chapter between two others, such as 6b, in
``chNNb.py``, its exercises numbered ``"6b.1"``...). The chapter's self-check cells, the solutions
notebooks and the tests all read them from there::

    from ragstage.exercises import check
    check("2.7", result)     # prints right, or what to look at; .ok is True or False

The check reports the reader's own value and a hint for what is wrong, never the expected
value. :func:`exercises` lists every exercise of every chapter (the tests run each solution
from its chapter's namespace and check it). Importing this package is light: a chapter's
module is imported on first use, and checks read plain attributes and keys.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

from ._core import CheckResult, Exercise, Expect, evaluate

__all__ = ["check", "evaluate", "exercise", "exercises", "chapters", "notebook", "Chapter", "Exercise", "Expect",
           "CheckResult"]

_CHAPTER_MODULE = re.compile(r"ch(\d\d)([a-z]?)$")

#: A chapter: its number (``2``), or its number and letter for one between two others (``"6b"``).
Chapter = int | str


def _chapter(number: str, letter: str) -> Chapter:
    return f"{int(number)}{letter}" if letter else int(number)


def _order(chapter: Chapter) -> tuple[int, str]:
    match = re.fullmatch(r"(\d+)([a-z]?)", str(chapter))
    if not match:
        raise KeyError(f"no chapter {chapter!r}: a chapter is a number, or a number and a letter ('6b')")
    return int(match.group(1)), match.group(2)


def chapters() -> list[Chapter]:
    """The chapters that declare exercises (one ``chNN`` or ``chNNb`` module each), in reading order."""
    found = [_chapter(*m.groups()) for info in pkgutil.iter_modules(__path__)
             if (m := _CHAPTER_MODULE.fullmatch(info.name))]
    return sorted(found, key=_order)


def _module(chapter: Chapter) -> Any:
    number, letter = _order(chapter)
    return importlib.import_module(f".ch{number:02d}{letter}", __name__)


def notebook(chapter: Chapter) -> str:
    """The file name of the chapter's notebook in ``notebooks/`` (e.g. ``02_intervals.ipynb``)."""
    return _module(chapter).NOTEBOOK


def exercises(chapter: Chapter | None = None) -> list[Exercise]:
    """Every exercise of one chapter, or of every chapter when ``chapter`` is None, in order."""
    numbers = chapters() if chapter is None else [chapter]
    return [ex for number in numbers for ex in _module(number).EXERCISES]


def exercise(exercise_id: str) -> Exercise:
    """The exercise ``"<chapter>.<n>"``; a clear error for an id no chapter declares."""
    match = re.fullmatch(r"(\d+)([a-z]?)\.(\d+)", str(exercise_id))
    chapter = _chapter(match.group(1), match.group(2)) if match else None
    if chapter is None or chapter not in chapters():
        raise KeyError(f"no exercise {exercise_id!r}: ids are '<chapter>.<n>', chapters with exercises: {chapters()}")
    for ex in exercises(chapter):
        if ex.id == exercise_id:
            return ex
    known = ", ".join(ex.id for ex in exercises(chapter))
    raise KeyError(f"no exercise {exercise_id!r}; chapter {match.group(1)} has {known}")


def check(exercise_id: str, result: Any) -> CheckResult:
    """Say whether ``result`` is what exercise ``exercise_id`` should produce.

    Returns a :class:`CheckResult` (``.ok``, ``.problems``) that prints as "right" or as
    "not yet" with, for every wrong item, the reader's own value and what to look at.
    """
    return evaluate(exercise(exercise_id), result)
