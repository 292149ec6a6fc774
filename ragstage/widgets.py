"""Two ipywidgets for the chapters: the case editor and the interval explorer.

:class:`CaseEditor` puts every stage list and judgment of a few traces into text boxes.
Change one and that case is diagnosed again at once, and the bucket table (with a Wilson
interval on every share) is recomputed for the whole set. Bad input shows a message next to
the case and keeps the case's last valid version; it never raises.

:class:`IntervalExplorer` has two sliders, k and n, and prints and draws the Wilson and the
normal interval for k of n.

Both are plain Python objects that hold their widgets: build one, display it with
``editor.widget`` (or just leave ``editor`` as the last expression of a cell), and read
their state (``.diagnoses``, ``.table``, ``.wilson``) from Python, which is how the tests
drive them without a browser.

CSS classes (stable, for browser tests and for styling). ``<qid>`` is the case's
``query_id`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``:

=================================  =========================================================
``ragstage-case-editor``           the whole editor
``ragstage-case-<qid>``            the box of one case
``ragstage-field-<qid>-<field>``   one input (``<field>``: retrieved, reranked, prompt,
                                   gold, answer_ids, claims, correct, refused,
                                   answerable, query_ok)
``ragstage-stage-<qid>``           the diagnosed bucket of the case: its text is exactly the
                                   bucket name, e.g. ``retrieval``
``ragstage-reason-<qid>``          the reason and the numbers (recall, retention, support)
``ragstage-message-<qid>``         the input error of the case, empty when there is none
``ragstage-scores-<qid>``          the retrieval scores of the current ``retrieved`` list
                                   (empty when the list has no scores)
``ragstage-table``                 the bucket table with Wilson intervals
``ragstage-save-path``             the file path box; ``ragstage-save`` the save button;
                                   ``ragstage-save-status`` the result of the last save
``ragstage-interval-explorer``     the interval explorer; ``ragstage-interval-text`` its
                                   printed intervals; ``ragstage-k`` / ``ragstage-n`` the
                                   sliders
=================================  =========================================================
"""

from __future__ import annotations

import base64
import html
import io
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

import ipywidgets as W
import pandas as pd

from .attribution import Diagnosis, diagnose
from .report import table_from_counts
from .stats import normal_interval, wilson
from .trace import Trace, TraceError, write_traces

__all__ = ["CaseEditor", "IntervalExplorer", "parse_ids", "parse_claims", "css_name"]

#: The list fields, in the order the evidence passes them, and whether null is allowed.
LIST_FIELDS: dict[str, bool] = {
    "gold": False,
    "retrieved": False,
    "reranked": True,
    "prompt": True,
    "answer_ids": True,
}
_NULL_WORDS = {"null", "none"}
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}
_TRISTATE = {"not set": None, "true": True, "false": False}


def css_name(query_id: str) -> str:
    """The part of a CSS class that names a case: ``query_id`` with unsafe characters as ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(query_id))


def parse_ids(text: str, *, nullable: bool = True) -> list[str] | None:
    """Comma-separated ids -> a list. Empty text is an empty list; ``null`` is "not logged".

    Spaces around ids are dropped and empty entries skipped (so a trailing comma is fine).
    An entry with a space inside is an error: it is almost always a missing comma.
    """
    stripped = text.strip()
    if stripped.lower() in _NULL_WORDS:
        if not nullable:
            raise ValueError("cannot be null here: leave it empty for 'no ids'")
        return None
    out = []
    for part in stripped.split(","):
        part = part.strip()
        if not part:
            continue
        if re.search(r"\s", part):
            raise ValueError(f"'{part}' has a space in it: separate ids with commas")
        out.append(part)
    return out


def parse_claims(text: str) -> list[bool] | None:
    """Comma-separated claim labels (true/false, t/f, yes/no, 1/0) -> a list; empty -> None."""
    stripped = text.strip()
    if not stripped or stripped.lower() in _NULL_WORDS:
        return None
    out = []
    for part in stripped.split(","):
        word = part.strip().lower()
        if not word:
            continue
        if word in _TRUE:
            out.append(True)
        elif word in _FALSE:
            out.append(False)
        else:
            raise ValueError(f"claim label '{part.strip()}' is not true or false")
    return out or None


def _ids_text(ids: Sequence[str] | None) -> str:
    return "null" if ids is None else ", ".join(ids)


def _claims_text(claims: Sequence[bool] | None) -> str:
    return "" if not claims else ", ".join("true" if c else "false" for c in claims)


def _tristate_text(value: bool | None) -> str:
    return {None: "not set", True: "true", False: "false"}[value]


def _show(widget: W.Widget) -> None:  # pragma: no cover - needs a front end
    """Display a widget; in Colab, first switch on the widget manager that renders ipywidgets 8."""
    from IPython.display import display

    if "google.colab" in sys.modules:
        try:
            from google.colab import output  # type: ignore[import-not-found]

            output.enable_custom_widget_manager()
        except Exception:  # noqa: BLE001 - an older Colab without it still shows what it can
            pass
    display(widget)


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


class CaseEditor:
    """Edit the stage lists and judgments of a few traces; see the diagnosis move at once.

    ``cases`` are :class:`~ragstage.trace.Trace` objects (e.g. from
    :func:`ragstage.fixtures.load_traces`); their ``query_id`` values must be distinct.
    ``require`` is passed to :func:`~ragstage.attribution.diagnose`. ``path`` pre-fills the
    file box that :meth:`save` writes to.

    State for code and tests: :attr:`traces` (the current valid traces),
    :attr:`diagnoses` (``query_id -> Diagnosis``), :attr:`table` (the bucket table with
    Wilson intervals), :attr:`fields` (``query_id -> {field: widget}``), and the label
    widgets :attr:`stage_labels`, :attr:`reason_labels`, :attr:`messages`, :attr:`status`.
    """

    def __init__(self, cases: Iterable[Trace], require: str = "any", path: str | Path | None = None) -> None:
        self.original: list[Trace] = list(cases)
        if not self.original:
            raise ValueError("the case editor needs at least one case")
        ids = [t.query_id for t in self.original]
        if len(set(ids)) != len(ids):
            raise ValueError(f"case query_ids must be distinct, got {ids}")
        if require not in ("any", "all"):
            raise ValueError(f"require must be 'any' or 'all', got {require!r}")
        self.require = require
        self._original: dict[str, Trace] = {t.query_id: t for t in self.original}
        self._current: dict[str, Trace] = dict(self._original)
        self.diagnoses: dict[str, Diagnosis] = {}
        self.fields: dict[str, dict[str, W.Widget]] = {}
        self.stage_labels: dict[str, W.Label] = {}
        self.reason_labels: dict[str, W.HTML] = {}
        self.messages: dict[str, W.HTML] = {}
        self.score_labels: dict[str, W.HTML] = {}
        self.table: pd.DataFrame = pd.DataFrame()
        self._loading = False

        self.table_html = W.HTML().add_class("ragstage-table")
        self.path_box = W.Text(value="" if path is None else str(path), description="save to",
                               placeholder="fixtures/five_cases/my_cases.jsonl",
                               layout=W.Layout(width="28em")).add_class("ragstage-save-path")
        self.save_button = W.Button(description="save cases", icon="save").add_class("ragstage-save")
        self.status = W.HTML().add_class("ragstage-save-status")
        self.save_button.on_click(lambda _: self.save())
        self.reset_button = W.Button(description="reset all").add_class("ragstage-reset")
        self.reset_button.on_click(lambda _: self.reset())

        boxes = [self._case_box(t) for t in self.original]
        for t in self.original:
            self._rediagnose(t.query_id)
        self._refresh_table()
        self.widget = W.VBox(
            boxes + [W.HTML("<b>Buckets over all cases</b> (share with its 95% Wilson interval)"),
                     self.table_html, W.HBox([self.path_box, self.save_button, self.reset_button]),
                     self.status]).add_class("ragstage-case-editor")

    # -- building ---------------------------------------------------------------------------
    def _case_box(self, trace: Trace) -> W.Widget:
        qid, css = trace.query_id, css_name(trace.query_id)
        fields: dict[str, W.Widget] = {}
        wide = W.Layout(width="24em")
        for name in LIST_FIELDS:
            box = W.Text(value=_ids_text(getattr(trace, name)), description=name,
                         continuous_update=False, layout=wide)
            fields[name] = box
        fields["claims"] = W.Text(value=_claims_text(trace.claims), description="claims",
                                  placeholder="e.g. true, false", continuous_update=False, layout=wide)
        for name in ("correct", "query_ok"):
            fields[name] = W.Dropdown(options=list(_TRISTATE), value=_tristate_text(getattr(trace, name)),
                                      description=name, layout=W.Layout(width="14em"))
        for name in ("refused", "answerable"):
            fields[name] = W.Checkbox(value=bool(getattr(trace, name)), description=name, indent=False,
                                      layout=W.Layout(width="9em"))
        for name, widget in fields.items():
            widget.add_class(f"ragstage-field-{css}-{name}")
            widget.observe(lambda change, q=qid: self._on_edit(q), names="value")
        self.fields[qid] = fields
        self.stage_labels[qid] = W.Label(style={"font_weight": "bold"}).add_class(f"ragstage-stage-{css}")
        self.reason_labels[qid] = W.HTML().add_class(f"ragstage-reason-{css}")
        self.messages[qid] = W.HTML().add_class(f"ragstage-message-{css}")
        self.score_labels[qid] = W.HTML().add_class(f"ragstage-scores-{css}")
        title = f"<b>case {html.escape(qid)}</b>"
        if trace.query:
            title += f" — {html.escape(trace.query)}"
        teaches = trace.meta.get("teaches") if isinstance(trace.meta, dict) else None
        header = [W.HTML(title)] + ([W.HTML(f"<i>{html.escape(str(teaches))}</i>")] if teaches else [])
        lists = [fields[n] for n in LIST_FIELDS]
        judgment = W.HBox([fields["correct"], fields["refused"], fields["answerable"], fields["query_ok"]])
        verdict = W.HBox([W.HTML("diagnosis:&nbsp;"), self.stage_labels[qid], self.reason_labels[qid]])
        grid = W.HBox([W.VBox(lists[:3]), W.VBox(lists[3:] + [fields["claims"]])])
        return W.VBox(header + [grid, judgment, self.score_labels[qid], verdict, self.messages[qid]],
                      layout=W.Layout(border="1px solid #ddd", padding="4px", margin="2px 0")
                      ).add_class(f"ragstage-case-{css}")

    # -- reacting ---------------------------------------------------------------------------
    def _read(self, qid: str) -> Trace:
        """The trace the inputs of one case describe; raises ValueError on bad input."""
        f = self.fields[qid]
        base = self._current[qid]
        changes: dict[str, Any] = {}
        for name, nullable in LIST_FIELDS.items():
            try:
                changes[name] = parse_ids(f[name].value, nullable=nullable)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        try:
            changes["claims"] = parse_claims(f["claims"].value)
        except ValueError as exc:
            raise ValueError(f"claims: {exc}") from None
        for name in ("correct", "query_ok"):
            changes[name] = _TRISTATE[f[name].value]
        changes["refused"] = bool(f["refused"].value)
        changes["answerable"] = bool(f["answerable"].value)
        record = base.to_dict()
        # Keep the retrieval scores while every retrieved id still has one (from the case as
        # loaded or as last edited); a new id without a score turns the list into plain ids.
        old_scores = {}
        for t in (self._original[qid], base):
            old_scores.update(zip(t.retrieved, t.retrieved_scores or ()))
        if changes["retrieved"] and all(i in old_scores for i in changes["retrieved"]):
            changes["retrieved"] = [{"id": i, "score": old_scores[i]} for i in changes["retrieved"]]
        record.update(changes)
        try:
            return Trace.from_dict(record)
        except TraceError as exc:
            raise ValueError(str(exc)) from None

    def _on_edit(self, qid: str) -> None:
        if self._loading:
            return
        try:
            trace = self._read(qid)
        except ValueError as exc:
            self.messages[qid].value = (
                f"<span style='color:#b00'>⚠ {html.escape(str(exc))}</span> "
                "— the diagnosis below is for the last valid input")
            return
        except Exception as exc:  # a widget must never show a traceback
            self.messages[qid].value = f"<span style='color:#b00'>⚠ unexpected: {html.escape(repr(exc))}</span>"
            return
        self.messages[qid].value = ""
        self._current[qid] = trace
        self._rediagnose(qid)
        self._refresh_table()

    def _rediagnose(self, qid: str) -> None:
        trace = self._current[qid]
        if trace.retrieved_scores is not None:
            self.score_labels[qid].value = "<small>retrieval scores: " + " · ".join(
                f"{html.escape(i)} {s:g}" for i, s in zip(trace.retrieved, trace.retrieved_scores)) + "</small>"
        else:
            self.score_labels[qid].value = ""
        d = diagnose(trace, self.require)
        self.diagnoses[qid] = d
        self.stage_labels[qid].value = d.stage.value
        self.reason_labels[qid].value = (
            f"&nbsp;— {html.escape(d.reason)} <small>(recall {_num(d.recall)}, "
            f"retention {_num(d.retention)}, support {_num(d.support)})</small>")

    def _refresh_table(self) -> None:
        counts: dict[str, int] = {}
        for d in self.diagnoses.values():
            counts[d.stage.value] = counts.get(d.stage.value, 0) + 1
        self.table = table_from_counts({"all": counts})
        shown = self.table.drop(columns="group").copy()
        for col in ("share", "low", "high"):
            shown[col] = shown[col].map(lambda x: f"{x:.2f}")
        self.table_html.value = shown.to_html(index=False, border=0)

    # -- public -----------------------------------------------------------------------------
    @property
    def traces(self) -> list[Trace]:
        """The current (last valid) version of every case, in the original order."""
        return [self._current[t.query_id] for t in self.original]

    @property
    def counts(self) -> dict[str, int]:
        """Bucket -> number of cases, for the current versions."""
        return {row.stage: int(row.count) for row in self.table.itertuples()}

    def set_case(self, query_id: str, **values: Any) -> Diagnosis:
        """Set some inputs of one case from Python, as a reader would type them.

        List fields and claims take text (``"d1, d2"``) or a list; ``correct`` and
        ``query_ok`` take True, False or None; ``refused`` and ``answerable`` a bool.
        Returns the case's diagnosis afterwards (unchanged if the input was rejected).
        """
        if query_id not in self.fields:
            raise KeyError(f"no case {query_id!r}; cases: {', '.join(self.fields)}")
        f = self.fields[query_id]
        for name, value in values.items():
            if name not in f:
                raise KeyError(f"no field {name!r}; fields: {', '.join(f)}")
            if name in LIST_FIELDS:
                value = _ids_text(value) if value is None or isinstance(value, (list, tuple)) else value
            elif name == "claims" and isinstance(value, (list, tuple)):
                value = _claims_text(value)
            elif name in ("correct", "query_ok") and not isinstance(value, str):
                value = _tristate_text(value)
            f[name].value = value
        return self.diagnoses[query_id]

    def reset(self) -> None:
        """Put every case back to the version the editor was built with."""
        self._loading = True
        try:
            for t in self.original:
                self._current[t.query_id] = t
                f = self.fields[t.query_id]
                for name in LIST_FIELDS:
                    f[name].value = _ids_text(getattr(t, name))
                f["claims"].value = _claims_text(t.claims)
                for name in ("correct", "query_ok"):
                    f[name].value = _tristate_text(getattr(t, name))
                for name in ("refused", "answerable"):
                    f[name].value = bool(getattr(t, name))
                self.messages[t.query_id].value = ""
                self._rediagnose(t.query_id)
        finally:
            self._loading = False
        self._refresh_table()

    def save(self, path: str | Path | None = None) -> Path | None:
        """Write the current cases as JSON Lines to ``path`` (default: the path box).

        Returns the path written, or None when there was nothing to write to; the outcome
        is shown in :attr:`status` either way.
        """
        target = str(path) if path is not None else self.path_box.value.strip()
        if not target:
            self.status.value = "<span style='color:#b00'>⚠ type a file path first</span>"
            return None
        try:
            n = write_traces(target, self.traces)
        except OSError as exc:
            self.status.value = f"<span style='color:#b00'>⚠ could not save: {html.escape(str(exc))}</span>"
            return None
        self.status.value = f"saved {n} cases to {html.escape(target)}"
        return Path(target)

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a front end
        _show(self.widget)


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
        warn = ""
        if self.normal[0] < 0 or self.normal[1] > 1:
            warn = " <b>(leaves [0, 1])</b>"
        elif self.normal[1] - self.normal[0] == 0:
            warn = " <b>(zero width)</b>"
        self.text.value = (
            f"{k} of {n} = {k / n:.3f}<br>"
            f"Wilson 95%: {self.wilson[0]:.3f} to {self.wilson[1]:.3f}<br>"
            f"normal 95%: {self.normal[0]:.3f} to {self.normal[1]:.3f}{warn}")
        self._draw()

    def _draw(self) -> None:
        from .plots import interval_plot

        self.figure = interval_plot({f"{self.k} of {self.n}": (self.k, self.n)}, normal=True,
                                    title="95% intervals")
        # Set the Output widget's content directly (a display_data message, as the front end
        # would store it) instead of capturing display() calls: this needs no running kernel,
        # works the same in JupyterLab, Colab and tests, and keeps executed notebooks small.
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=90)
        self.output.outputs = ({
            "output_type": "display_data",
            "data": {"image/png": base64.b64encode(buffer.getvalue()).decode("ascii"),
                     "text/plain": f"<interval plot: {self.k} of {self.n}>"},
            "metadata": {},
        },)

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a front end
        _show(self.widget)
