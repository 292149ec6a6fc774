"""In a real kernel each figure appears exactly once, however the cell that makes it ends.

A small notebook runs through nbclient (the machinery nbval and Jupyter use) and the
``image/png`` outputs of each cell are counted: the figure as the last expression, followed by
a ``print``, assigned to a name, drawn in a loop, shown with ``display``, made inside
``no_display``, and drawn into a pyplot axes of the reader's own.
"""

from __future__ import annotations

import nbformat
import pytest
from kernel_cells import run_cells

SETUP = """%matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import display
from ragstage import table_from_counts
from ragstage.plots import no_display, stage_bars
table = table_from_counts({"x": {"retrieval": 1, "none": 4}})"""

# (cell source, number of images it must show)
CELLS = [
    ("stage_bars(table)", 1),
    ('stage_bars(table)\nprint("after the figure")', 1),
    ("fig = stage_bars(table)", 1),
    ("for _ in range(3):\n    stage_bars(table)", 3),
    ("fig = stage_bars(table)\ndisplay(fig)", 1),
    ("stage_bars(table)\nfig", 2),  # a new figure, then the earlier one shown again
    ("with no_display():\n    quiet = stage_bars(table)", 0),
    ("quiet", 1),
    ("fig, ax = plt.subplots()\nstage_bars(table, ax=ax)\nprint('pyplot shows its own figure')", 1),
    ("print('no figure here')", 0),
    # a figure made outside any cell (as a widget callback would) is not the next cell's output
    ("get_ipython().events.register('post_execute', lambda: stage_bars(table) and None)", 0),
    ("get_ipython().events.callbacks['post_execute'].pop()\nprint('next cell')", 0),
]


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    return run_cells([SETUP, *(src for src, _ in CELLS)])


@pytest.mark.parametrize("index", range(len(CELLS)), ids=[src.splitlines()[0] for src, _ in CELLS])
def test_each_figure_shows_exactly_once(executed, index):
    source, want = CELLS[index]
    cell = executed.cells[index + 1]
    images = [o for o in cell.outputs if "image/png" in o.get("data", {})]
    assert len(images) == want, (source, [o.get("data", {}).keys() for o in cell.outputs])


def test_the_shown_png_is_the_reproducible_one(executed):
    import base64

    from ragstage import table_from_counts
    from ragstage.plots import png_bytes, stage_bars

    shown = next(o for o in executed.cells[1].outputs if "image/png" in o.get("data", {}))
    assert base64.b64decode(shown["data"]["image/png"]) == png_bytes(
        stage_bars(table_from_counts({"x": {"retrieval": 1, "none": 4}})))
