"""Showing a widget in a notebook front end, Colab included."""

from __future__ import annotations

import sys

import ipywidgets as W

__all__ = ["show"]


def show(widget: W.Widget) -> None:  # pragma: no cover - needs a front end
    """Display a widget; in Colab, first switch on the widget manager that renders ipywidgets 8.

    Colab's built-in manager only renders its own widget versions: without this call an
    editor shows as an empty box there, with no error.
    """
    from IPython.display import display

    if "google.colab" in sys.modules:
        try:
            from google.colab import output  # type: ignore[import-not-found]

            output.enable_custom_widget_manager()
        except Exception:  # noqa: BLE001 - an older Colab without it still shows what it can
            pass
    display(widget)
