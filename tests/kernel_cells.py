"""Code cells run in a real Jupyter kernel through nbclient (the machinery nbval and Jupyter use),
for the tests of what a reader's notebook shows."""

from __future__ import annotations

import os
from typing import Iterable

import nbformat
from nbclient import NotebookClient


def run_cells(sources: Iterable[str], timeout: int = 120) -> nbformat.NotebookNode:
    """A new notebook of ``sources`` as code cells, executed in a ``python3`` kernel that plots
    inline as a reader's kernel does (``MPLBACKEND`` removed from its environment)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3").execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb
