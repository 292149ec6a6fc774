"""What a reader sees cell by cell, in every chapter and solutions notebook as committed.

* no stray markdown cell: a markdown cell is a heading or at least a sentence, never one word
  left over from an edit (a marker like ``GATE06`` shows on the website as a paragraph);
* no chapter repeats a ``## `` heading (two ``## Exercises`` sections: the reader does not know
  which one is meant, and the site's table of contents lists both);
* a cell's printed output is one box: no stream output is split into two consecutive outputs of
  the same stream (the site draws each as its own box, cutting a line in two);
* no progress bar among the committed outputs (tqdm's bars render on the site as "interactive
  widget" notices and change from run to run), except in chapter 5 and its solutions: there
  they are the progress of a twenty-minute generation, which a reader running it needs to see.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from repo_paths import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "notebooks" / "solutions").glob("*.ipynb"))
params = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO).as_posix())
PROGRESS_BAR = re.compile(r"\d+%\|")


def stray_markdown(nb: nbformat.NotebookNode) -> list[str]:
    """Markdown cells that are neither a heading nor more than one word."""
    return [f"cell {i}: {c.source.strip()!r}" for i, c in enumerate(nb.cells)
            if c.cell_type == "markdown" and not c.source.lstrip().startswith("#") and len(c.source.split()) < 2]


def repeated_headings(nb: nbformat.NotebookNode) -> list[str]:
    """``## `` headings that appear more than once in the notebook's markdown."""
    seen: dict[str, int] = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        in_fence = False
        for line in cell.source.splitlines():
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            elif not in_fence and line.startswith("## "):
                seen[line.strip()] = seen.get(line.strip(), 0) + 1
    return sorted(h for h, n in seen.items() if n > 1)


def split_streams(nb: nbformat.NotebookNode) -> list[str]:
    """Code cells with two consecutive stream outputs of the same stream."""
    found = []
    for i, cell in enumerate(nb.cells):
        outs = cell.get("outputs", []) if cell.cell_type == "code" else []
        for a, b in zip(outs, outs[1:]):
            if a.output_type == b.output_type == "stream" and a.name == b.name:
                found.append(f"cell {i}: {a.text[-40:]!r} | {b.text[:40]!r}")
    return found


def progress_bars(nb: nbformat.NotebookNode) -> list[str]:
    """Outputs that are a progress bar (a tqdm line: ``37%|``), as a stream or a widget's text."""
    found = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = out.get("text", "") if out.output_type == "stream" else out.get("data", {}).get("text/plain", "")
            if PROGRESS_BAR.search(text if isinstance(text, str) else "".join(text)):
                found.append(f"cell {i}: {str(text)[:60]!r}")
    return found


@params
def test_no_stray_markdown_cell(path):
    assert not (bad := stray_markdown(nbformat.read(path, as_version=4))), f"{path.name}: {bad}"


@params
def test_no_repeated_second_level_heading(path):
    assert not (bad := repeated_headings(nbformat.read(path, as_version=4))), f"{path.name}: {bad}"


@params
def test_printed_output_is_not_split(path):
    assert not (bad := split_streams(nbformat.read(path, as_version=4))), f"{path.name}: {bad}"


@params
def test_no_progress_bar_in_the_committed_outputs(path):
    if path.name.startswith("05_"):
        pytest.skip("chapter 5 shows the progress of its twenty-minute generation on purpose")
    assert not (bad := progress_bars(nbformat.read(path, as_version=4))), f"{path.name}: {bad}"


# -- the rules themselves, on notebooks made to break them -------------------------------------------
def _nb(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=list(cells))


def test_the_rules_catch_what_they_are_for():
    md, code, out = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell, nbformat.v4.new_output
    assert stray_markdown(_nb(md("GATE06"), md("# Title"), md("A sentence here."))) == ["cell 0: 'GATE06'"]
    assert repeated_headings(_nb(md("## Exercises\n\n1. x"), md("```\n## not a heading\n```"),
                                 md("text\n## Exercises"))) == ["## Exercises"]
    assert repeated_headings(_nb(md("## A"), md("## B"), md("### A"))) == []
    split = code("print('cut of 1:', x)")
    split.outputs = [out("stream", name="stdout", text="cut of 1:"), out("stream", name="stdout", text=" reranking\n")]
    kept = code("x")
    kept.outputs = [out("stream", name="stdout", text="a\n"), out("stream", name="stderr", text="b\n")]
    assert len(split_streams(_nb(split, kept))) == 1
    bar = code("judge()")
    bar.outputs = [out("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "m"},
                                             "text/plain": "Loading weights:   0%|          | 0/339"})]
    assert len(progress_bars(_nb(bar, kept))) == 1
