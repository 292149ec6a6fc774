"""Every figure a notebook promises is in its committed outputs.

A code cell whose output is a figure carries the cell tag ``figure``. In every notebook in
``notebooks/`` and ``notebooks/solutions/``, each such cell must hold an ``image/png`` output
as committed (nbval does not compare images, so a figure lost from the outputs, e.g. one
that never displayed, would otherwise pass unnoticed), and every chapter
(``notebooks/0N_*.ipynb``, and ``0Nb_*.ipynb``: a chapter between two others or a companion) must
have at least one.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from repo_paths import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "notebooks" / "solutions").glob("*.ipynb"))
CHAPTERS = sorted((REPO / "notebooks").glob("0[0-9]*_*.ipynb"))  # 06b and 07b too
TAG = "figure"


def figure_cells(path: Path) -> list[tuple[int, nbformat.NotebookNode]]:
    nb = nbformat.read(path, as_version=4)
    return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and TAG in c.metadata.get("tags", [])]


def has_png(cell: nbformat.NotebookNode) -> bool:
    return any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def test_there_are_chapters():
    assert len(CHAPTERS) >= 7


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_figure_cell_has_an_image(path):
    missing = [f"cell {i}: {''.join(c.source).splitlines()[0] if c.source else ''}"
               for i, c in figure_cells(path) if not has_png(c)]
    assert not missing, f"{path.name}: cells tagged {TAG!r} without an image/png output: {missing}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_has_a_figure(path):
    assert figure_cells(path), f"{path.name} has no code cell tagged {TAG!r}"


def untagged_images(path: Path) -> list[str]:
    """Code cells not tagged ``figure`` that hold an image: a figure nobody asked the reader to look at."""
    nb = nbformat.read(path, as_version=4)
    return [f"cell {i}: {c.source.splitlines()[0] if c.source else ''}" for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and TAG not in c.metadata.get("tags", []) and has_png(c)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_only_figure_cells_show_an_image(path):
    assert not (bad := untagged_images(path)), f"{path.name}: images in cells not tagged {TAG!r}: {bad}"


def test_an_unasked_figure_is_caught(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("write_comparison(a, b, out)")
    png = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}
    cell.outputs = [nbformat.v4.new_output("display_data", data=png)]
    nb.cells = [cell]
    path = tmp_path / "unasked.ipynb"
    nbformat.write(nb, path)
    assert untagged_images(path) == ["cell 0: write_comparison(a, b, out)"]


def test_a_lost_figure_is_caught(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("stage_bars(table)\nprint('done')", metadata={"tags": [TAG]})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="done\n")]
    nb.cells = [cell]
    path = tmp_path / "lost.ipynb"
    nbformat.write(nb, path)
    assert [i for i, c in figure_cells(path) if not has_png(c)] == [0]
