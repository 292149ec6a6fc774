"""How a workbook figure is made, shown in a notebook, and turned into PNG bytes.

A figure drawn here is not registered with ``pyplot``: nothing global keeps it alive, and a
script or an HTML report can draw hundreds. In a Jupyter kernel each new figure is noted, and
at the end of the cell every noted figure that the cell did not already show is displayed, in
the order it was made. A figure is "shown" when IPython renders it, either as the cell's last
expression or through ``display(fig)``. So a figure appears exactly once whether the call is
the cell's last line, is followed by a ``print``, or is assigned to a name; :func:`no_display`
turns this off for code that only wants the figure object (e.g. an HTML report).

PNG bytes are reproducible: a fixed DPI and no software version or date in the metadata.
"""

from __future__ import annotations

import io
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from matplotlib.figure import Figure as _MplFigure

__all__ = ["Figure", "new_figure", "new_axes", "png_bytes", "no_display", "DPI"]

#: Pixels per inch of every PNG made here (notebook outputs and :func:`png_bytes`).
DPI = 100

# Figures made in the current cell and not yet shown; the kernels whose hook is installed.
_pending: list["Figure"] = []
_hooked: set[int] = set()
_quiet = [0]


class Figure(_MplFigure):
    """A matplotlib :class:`~matplotlib.figure.Figure` that a notebook shows exactly once.

    It behaves as any matplotlib figure (``savefig``, ``axes``, ``add_subplot``); the class
    only lets IPython's PNG formatter recognise it and note that it was shown.
    """


def png_bytes(fig: Any, dpi: int = DPI) -> bytes:
    """The figure as PNG bytes, identical from run to run (no software or date metadata)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def _render(fig: Figure) -> bytes:
    """IPython's PNG formatter for :class:`Figure`: render it and mark it as shown."""
    if fig in _pending:
        _pending.remove(fig)
    return png_bytes(fig)


def _flush() -> None:
    """At the end of a cell: display the figures the cell made but did not show."""
    waiting = list(_pending)
    _pending.clear()
    if waiting:
        from IPython.display import display

        for fig in waiting:
            display(fig)


def _kernel_shell() -> Any:
    """The running IPython kernel's shell, or None (plain Python, a terminal IPython)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    return shell if shell is not None and hasattr(shell, "kernel") else None


def _note(fig: Figure) -> None:
    if _quiet[0]:
        return
    shell = _kernel_shell()
    if shell is None:
        return
    if id(shell) not in _hooked:
        shell.display_formatter.formatters["image/png"].for_type(Figure, _render)
        shell.events.register("post_execute", _flush)
        _hooked.add(id(shell))
    _pending.append(fig)


@contextmanager
def no_display() -> Iterator[None]:
    """Figures made inside this block are never displayed by the end of the cell."""
    _quiet[0] += 1
    try:
        yield
    finally:
        _quiet[0] -= 1


def new_figure(size: tuple[float, float]) -> Figure:
    """A fresh figure of ``size`` inches with constrained layout, noted for display."""
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    _note(fig)
    return fig


def new_axes(ax: Any, size: tuple[float, float]) -> tuple[Any, Any]:
    """``(figure, axes)``: the caller's axes (the caller shows its figure), or a fresh figure."""
    if ax is not None:
        return ax.figure, ax
    fig = new_figure(size)
    return fig, fig.add_subplot()
