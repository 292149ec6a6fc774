"""The interval explorer: sliders for k and n, the Wilson and the normal interval of k / n."""

from __future__ import annotations

import base64
import io
from typing import Any

import ipywidgets as W

from ..stats import normal_interval, wilson
from .display import show

__all__ = ["IntervalExplorer"]


def _interval_text(k: int, n: int, wilson_ci: tuple[float, float], normal_ci: tuple[float, float]) -> str:
    """The printed intervals, flagging a normal interval that leaves [0, 1] or has no width."""
    warn = ""
    if normal_ci[0] < 0 or normal_ci[1] > 1:
        warn = " <b>(leaves [0, 1])</b>"
    elif normal_ci[1] - normal_ci[0] == 0:
        warn = " <b>(zero width)</b>"
    return (f"{k} of {n} = {k / n:.3f}<br>"
            f"Wilson 95%: {wilson_ci[0]:.3f} to {wilson_ci[1]:.3f}<br>"
            f"normal 95%: {normal_ci[0]:.3f} to {normal_ci[1]:.3f}{warn}")


def _png_output(figure: Any, label: str) -> dict[str, Any]:
    """A figure as the display_data message an Output widget stores."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    return {
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(buffer.getvalue()).decode("ascii"), "text/plain": label},
        "metadata": {},
    }


class IntervalExplorer:
    """Sliders for k and n; prints and draws the 95% Wilson and normal intervals of k / n.

    ``k`` is capped at ``n`` (moving n below k pulls k down). State for code and tests:
    :attr:`wilson`, :attr:`normal` (the two intervals), :attr:`text` (the printed line),
    :attr:`figure` (the last matplotlib figure drawn).
    """

    def __init__(self, k: int = 11, n: int = 15, *, n_max: int = 500) -> None:
        if not 1 <= n <= n_max:
            raise ValueError(f"need 1 <= n <= n_max, got n={n}, n_max={n_max}")
        if not 0 <= k <= n:
            raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
        self.n_slider = W.IntSlider(value=n, min=1, max=n_max, description="n",
                                    continuous_update=False).add_class("ragstage-n")
        self.k_slider = W.IntSlider(value=k, min=0, max=n, description="k",
                                    continuous_update=False).add_class("ragstage-k")
        self.text = W.HTML().add_class("ragstage-interval-text")
        self.output = W.Output()
        self.figure: Any = None
        self._holding = False
        self.wilson: tuple[float, float] = (0.0, 1.0)
        self.normal: tuple[float, float] = (0.0, 1.0)
        self.n_slider.observe(self._on_n, names="value")
        self.k_slider.observe(lambda _: self._update(), names="value")
        self._update()
        self.widget = W.VBox([self.k_slider, self.n_slider, self.text, self.output]
                             ).add_class("ragstage-interval-explorer")

    def _on_n(self, change: dict) -> None:
        n = int(change["new"])
        self._holding = True  # one redraw for the whole change, not one per slider trait
        try:
            if self.k_slider.value > n:
                self.k_slider.value = n
            self.k_slider.max = n
        finally:
            self._holding = False
        self._update()

    @property
    def k(self) -> int:
        return int(self.k_slider.value)

    @property
    def n(self) -> int:
        return int(self.n_slider.value)

    def _update(self) -> None:
        k, n = self.k, self.n
        if self._holding or k > n:  # mid-update, before the cap has been applied
            return
        self.wilson = wilson(k, n)
        self.normal = normal_interval(k, n)
        self.text.value = _interval_text(k, n, self.wilson, self.normal)
        self._draw()

    def _draw(self) -> None:
        from ..plots import interval_plot, no_display

        with no_display():  # shown inside the widget's Output, not again below the cell
            self.figure = interval_plot({f"{self.k} of {self.n}": (self.k, self.n)}, normal=True,
                                        title="95% intervals")
        # Set the Output widget's content directly (a display_data message, as the front end
        # would store it) instead of capturing display() calls: this needs no running kernel,
        # works the same in JupyterLab, Colab and tests, and keeps executed notebooks small.
        self.output.outputs = (_png_output(self.figure, f"<interval plot: {self.k} of {self.n}>"),)

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a front end
        show(self.widget)
