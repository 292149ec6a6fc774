"""Run a chapter notebook's code cells into one namespace, the way a reader's kernel holds them.

The exercises are run from here: after every code cell of the chapter has run (magics
included, through IPython), an exercise's solution runs in the same namespace, so a name the
chapter never defines or imports fails the test exactly as it fails a reader (the ``holm``
that chapter 2 once forgot to import).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


class _ChapterShell(InteractiveShell):
    """A plain shell on which ``%matplotlib inline`` works: there is no GUI event loop to start."""

    def enable_gui(self, gui=None):
        return None


def _shell() -> InteractiveShell:
    """A fresh IPython shell (one per chapter, so no name leaks from one chapter to the next)."""
    if InteractiveShell.initialized():
        InteractiveShell.clear_instance()
    return _ChapterShell.instance()


@dataclass
class Chapter:
    """A chapter's namespace and the folder its kernel ran in (its relative paths point there)."""

    namespace: dict[str, Any]
    workdir: Path

    @contextmanager
    def kernel(self) -> Iterator[dict[str, Any]]:
        """The namespace, with the working directory the chapter's cells had while they ran."""
        here = os.getcwd()
        os.chdir(self.workdir)
        try:
            yield self.namespace
        finally:
            os.chdir(here)


def run_chapter(name: str, workdir: Path) -> Chapter:
    """Every code cell of ``notebooks/<name>``, in order, from ``workdir``.

    A cell that raises fails with the cell's number and first line. Output is captured and
    thrown away: the chapter's own outputs are nbval's business.
    """
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    shell = _shell()
    chapter = Chapter(shell.user_ns, workdir)
    with chapter.kernel():
        for number, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            with capture_output(display=True):
                outcome = shell.run_cell(cell.source, store_history=False)
            if not outcome.success:
                error = outcome.error_in_exec or outcome.error_before_exec
                head = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                raise AssertionError(f"{name}: code cell {number + 1} ({head!r}) raised {error!r}")
    return chapter


def run_solution(chapter: Chapter, solution: str, label: str) -> Any:
    """Run one solution as a reader's new cell would: same namespace, same folder; its ``result``."""
    with chapter.kernel() as namespace:
        namespace.pop("result", None)
        exec(compile(solution, f"<solution {label}>", "exec"), namespace)
    if "result" not in namespace:
        raise AssertionError(f"solution {label} does not bind `result`")
    return namespace["result"]


_SHARED: dict[str, Chapter] = {}


def shared_chapter(name: str) -> Chapter:
    """``run_chapter(name)``, reused while the next caller asks for the same chapter.

    Every chapter runs in the one IPython shell's ``__main__`` namespace, so running another
    chapter overwrites the names of the last (chapter 6's ``pairs`` is not chapter 2's): only
    the chapter run last is kept, and asking for another runs that one afresh.
    """
    if name not in _SHARED:
        import tempfile

        _SHARED.clear()
        _SHARED[name] = run_chapter(name, Path(tempfile.mkdtemp(prefix=f"ragstage-{Path(name).stem}-")))
    return _SHARED[name]
