"""Build a chapter's solutions notebook from its exercise declarations.

The notebook is generated, not written by hand, so a solution is written once (in
``chNN.py``) and the notebook cannot drift from what the tests run. Its first code cell runs
the chapter notebook itself (``%run ../NN_name.ipynb``, output captured), so every solution
runs in the chapter's own namespace, as a reader's new cell would. Each exercise then gets a
heading, one code cell (the solution, then its self-check as the last line) and the value the
solution produces with the reasoning behind it (``Exercise.why``): code alone shows what to
type, not why it is the answer.

Regenerate and execute::

    python -m ragstage.exercises.solutions 2 notebooks/solutions/02_intervals_solutions.ipynb
    jupyter nbconvert --to notebook --execute --inplace notebooks/solutions/02_intervals_solutions.ipynb
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from . import Chapter, exercises, notebook

__all__ = ["solution_cell", "solutions_notebook", "solutions_path"]


def solution_cell(exercise_id: str, solution: str) -> str:
    """The code of an exercise's cell in the solutions notebook: solution, then its check."""
    return f"{solution.rstrip()}\ncheck({exercise_id!r}, result)"


def solutions_path(chapter: Chapter) -> str:
    """``solutions/NN_name_solutions.ipynb``, relative to ``notebooks/``."""
    return f"solutions/{notebook(chapter).removesuffix('.ipynb')}_solutions.ipynb"


def solutions_notebook(chapter: Chapter) -> Any:
    """The solutions notebook of ``chapter`` as an (unexecuted) nbformat notebook."""
    import nbformat.v4 as v4

    name = notebook(chapter)
    intro = (f"# Chapter {chapter}: solutions\n\n"
             f"One solution per exercise of [chapter {chapter}](../{name}), each followed by its self-check. "
             "Try each exercise in the chapter first: the self-check there tells you what to look at, and this "
             "notebook shows one way to get there.\n\n"
             "The first cell runs the whole chapter (its output is hidden), so every solution below runs in "
             "the chapter's own namespace, exactly like a new cell you add at the end of the chapter. "
             "Run this notebook from the `notebooks/solutions/` folder of a checkout.")
    cells = [v4.new_markdown_cell(intro),
             v4.new_code_cell(f"%%capture chapter_output\n%run ../{name}")]
    for ex in exercises(chapter):
        cells.append(v4.new_markdown_cell(f"## Exercise {ex.id}: {ex.title}\n\nThe self-check reads {ex.submit}."))
        cell = v4.new_code_cell(solution_cell(ex.id, ex.solution))
        if ex.output_varies:
            cell.metadata["tags"] = ["nbval-ignore-output"]
        cells.append(cell)
        cells.append(v4.new_markdown_cell(f"**The value, and why.** {ex.why}"))
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def main(argv: list[str]) -> None:
    """``python -m ragstage.exercises.solutions CHAPTER PATH``: write the unexecuted notebook (CHAPTER: 2, or 6b)."""
    import nbformat

    chapter, path = (int(argv[0]) if argv[0].isdigit() else argv[0]), Path(argv[1])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(solutions_notebook(chapter), path)


if __name__ == "__main__":  # pragma: no cover - exercised through the command in the docstring
    main(sys.argv[1:])
