"""Writing an HTML page from a notebook cell shows none of the page's figures below the cell.

The report and the comparison page draw their figures to embed them as SVG. In a Jupyter
kernel every figure the package makes is shown at the end of the cell unless it was made inside
``plots.no_display()``; a page's figures are the page's, so a cell that only writes the page
must show nothing (chapter 6's gate cell once showed the comparison page's heatmap and flow).
The cells run in a real kernel through nbclient (``tests/kernel_cells.py``).
"""

from __future__ import annotations

import nbformat
import pytest
from kernel_cells import run_cells

SETUP = """%matplotlib inline
import tempfile
from pathlib import Path
from ragstage import compare, write_traces
from ragstage.fixtures import load_traces
from ragstage.html import comparison_html, report_html
from ragstage.plots import migration_heatmap
folder = Path(tempfile.mkdtemp())
before = load_traces("incidents", "batch.jsonl")
write_traces(folder / "before.jsonl", before)
write_traces(folder / "after.jsonl", [t.replace(pipeline="after") for t in before])"""

HEATMAP = "heatmap = migration_heatmap(compare(before, before))"
COMPARISON = """page, n = comparison_html(folder / "before.jsonl", folder / "after.jsonl")
assert n > 0 and "<svg" in page"""
REPORT = """page, _ = report_html([folder / "before.jsonl"])
assert "<svg" in page"""


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    return run_cells([SETUP, HEATMAP, COMPARISON, REPORT])


def _images(cell: nbformat.NotebookNode) -> int:
    return sum("image/png" in output.get("data", {}) for output in cell.outputs)


def test_the_kernel_shows_a_figure_the_cell_made(executed):
    assert _images(executed.cells[1]) == 1


def test_the_comparison_page_shows_no_figure_in_the_cell(executed):
    assert _images(executed.cells[2]) == 0


def test_the_report_shows_no_figure_in_the_cell(executed):
    assert _images(executed.cells[3]) == 0
