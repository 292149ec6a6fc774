"""The case editor: a few traces as inputs, re-diagnosed at every edit.

Every stage list and judgment of a case is a text box, dropdown or checkbox. Change one and
that case is diagnosed again at once, and the bucket table (with a Wilson interval on every
share) is recomputed over all cases. Bad input shows a message next to the case and keeps the
case's last valid version; it never raises. **save** writes the current cases to a trace file.

This module only builds and wires widgets: the text of an input is read by
:mod:`.parsing`, the inputs of a case become a trace in :mod:`.case_form`, and the bucket
names come from :mod:`ragstage.attribution` through :func:`~ragstage.attribution.diagnose`
and :func:`~ragstage.report.table_from_counts`, so a new bucket shows up here by itself.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import ipywidgets as W
import pandas as pd

from ..attribution import Diagnosis, check_require, diagnose
from ..report import table_from_counts
from ..trace import Trace, write_traces
from .case_form import case_inputs, read_case
from .consistency import inconsistencies
from .display import show
from .parsing import INPUT_FIELDS, LIST_FIELDS, TRISTATE, InputField, css_name

__all__ = ["CaseEditor"]

_WIDE = {"ids": "24em", "claims": "24em", "tristate": "14em", "flag": "9em"}
_JUDGMENTS = tuple(n for n, f in INPUT_FIELDS.items() if f.kind in ("tristate", "flag"))


def _warning(text: str) -> str:
    return f"<span style='color:#b00'>⚠ {html.escape(text)}</span>"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _input_widget(field: InputField, value: str | bool) -> W.ValueWidget:
    """The widget for one field of a case, holding ``value`` (from :meth:`InputField.show`)."""
    layout = W.Layout(width=_WIDE[field.kind])
    if field.kind == "tristate":
        return W.Dropdown(options=list(TRISTATE), value=value, description=field.name, layout=layout)
    if field.kind == "flag":
        return W.Checkbox(value=value, description=field.name, indent=False, layout=layout)
    placeholder = "e.g. true, false" if field.kind == "claims" else ""
    return W.Text(value=value, description=field.name, placeholder=placeholder,
                  continuous_update=False, layout=layout)


def _scores_html(trace: Trace) -> str:
    """The retrieval scores of the case's current ``retrieved`` list (empty without scores)."""
    if trace.retrieved_scores is None:
        return ""
    pairs = " · ".join(html.escape(i) + ("" if s is None else f" {s:g}")
                       for i, s in zip(trace.retrieved, trace.retrieved_scores))
    return f"<small>retrieval scores: {pairs}</small>"


def _reason_html(d: Diagnosis) -> str:
    return (f"&nbsp;— {html.escape(d.reason)} <small>(recall {_num(d.recall)}, "
            f"retention {_num(d.retention)}, support {_num(d.support)})</small>")


def _table_html(table: pd.DataFrame) -> str:
    shown = table.drop(columns="group").copy()
    for col in ("share", "low", "high"):
        shown[col] = shown[col].map(lambda x: f"{x:.2f}")
    return shown.to_html(index=False, border=0)


def _title_html(trace: Trace) -> list[W.Widget]:
    """The case's heading: its id and question, and what it teaches when the fixture says."""
    title = f"<b>case {html.escape(trace.query_id)}</b>"
    if trace.query:
        title += f" — {html.escape(trace.query)}"
    teaches = trace.meta.get("teaches") if isinstance(trace.meta, dict) else None
    return [W.HTML(title)] + ([W.HTML(f"<i>{html.escape(str(teaches))}</i>")] if teaches else [])


def _checked_cases(cases: Iterable[Trace], require: str) -> list[Trace]:
    out = list(cases)
    if not out:
        raise ValueError("the case editor needs at least one case")
    ids = [t.query_id for t in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"case query_ids must be distinct, got {ids}")
    check_require(require)
    return out


class CaseEditor:
    """Edit the stage lists and judgments of a few traces; see the diagnosis move at once.

    ``cases`` are :class:`~ragstage.trace.Trace` objects (e.g. from
    :func:`ragstage.fixtures.load_traces`); their ``query_id`` values must be distinct.
    ``require`` is passed to :func:`~ragstage.attribution.diagnose`. ``path`` pre-fills the
    file box that :meth:`save` writes to. ``corpus`` (the ids of every document) lets the
    editor say when an id is not in the corpus; without it, the editor still says when an id
    appears at a stage that no earlier stage passed on (:mod:`.consistency`).

    State for code and tests: :attr:`traces` (the current valid traces),
    :attr:`diagnoses` (``query_id -> Diagnosis``), :attr:`table` (the bucket table with
    Wilson intervals), :attr:`fields` (``query_id -> {field: widget}``), and the label
    widgets :attr:`stage_labels`, :attr:`reason_labels`, :attr:`messages` (input errors),
    :attr:`warnings` (what makes the current trace inconsistent), :attr:`score_labels`,
    :attr:`status`.
    """

    def __init__(self, cases: Iterable[Trace], require: str = "any", path: str | Path | None = None,
                 corpus: Iterable[str] | None = None) -> None:
        self.original: list[Trace] = _checked_cases(cases, require)
        self.require = require
        self.corpus: frozenset[str] | None = None if corpus is None else frozenset(corpus)
        self._original: dict[str, Trace] = {t.query_id: t for t in self.original}
        self._current: dict[str, Trace] = dict(self._original)
        self.diagnoses: dict[str, Diagnosis] = {}
        self.fields: dict[str, dict[str, W.ValueWidget]] = {}
        self.stage_labels: dict[str, W.Label] = {}
        self.reason_labels: dict[str, W.HTML] = {}
        self.messages: dict[str, W.HTML] = {}
        self.warnings: dict[str, W.HTML] = {}
        self.score_labels: dict[str, W.HTML] = {}
        self.table: pd.DataFrame = pd.DataFrame()
        self._loading = False
        self._build_controls(path)
        boxes = [self._case_box(t) for t in self.original]
        for t in self.original:
            self._rediagnose(t.query_id)
        self._refresh_table()
        self.widget = W.VBox(
            boxes + [W.HTML("<b>Buckets over all cases</b> (share with its 95% Wilson interval)"),
                     self.table_html, W.HBox([self.path_box, self.save_button, self.reset_button]),
                     self.status]).add_class("ragstage-case-editor")

    # -- building ---------------------------------------------------------------------------
    def _build_controls(self, path: str | Path | None) -> None:
        """The table, the file box and the save/reset buttons shared by all cases."""
        self.table_html = W.HTML().add_class("ragstage-table")
        self.path_box = W.Text(value="" if path is None else str(path), description="save to",
                               placeholder="fixtures/five_cases/my_cases.jsonl",
                               layout=W.Layout(width="28em")).add_class("ragstage-save-path")
        self.save_button = W.Button(description="save cases", icon="save").add_class("ragstage-save")
        self.status = W.HTML().add_class("ragstage-save-status")
        self.save_button.on_click(lambda _: self.save())
        self.reset_button = W.Button(description="reset all").add_class("ragstage-reset")
        self.reset_button.on_click(lambda _: self.reset())

    def _make_inputs(self, trace: Trace) -> dict[str, W.ValueWidget]:
        """One widget per editable field, classed and wired to re-diagnose the case."""
        qid, css = trace.query_id, css_name(trace.query_id)
        inputs = case_inputs(trace)
        fields = {name: _input_widget(field, inputs[name]) for name, field in INPUT_FIELDS.items()}
        for name, widget in fields.items():
            widget.add_class(f"ragstage-field-{css}-{name}")
            widget.observe(lambda change, q=qid: self._on_edit(q), names="value")
        return fields

    def _make_labels(self, qid: str) -> None:
        """The diagnosis, reason, message and score labels of one case."""
        css = css_name(qid)
        self.stage_labels[qid] = W.Label(style={"font_weight": "bold"}).add_class(f"ragstage-stage-{css}")
        self.reason_labels[qid] = W.HTML().add_class(f"ragstage-reason-{css}")
        self.messages[qid] = W.HTML().add_class(f"ragstage-message-{css}")
        self.warnings[qid] = W.HTML().add_class(f"ragstage-warning-{css}")
        self.score_labels[qid] = W.HTML().add_class(f"ragstage-scores-{css}")

    def _case_box(self, trace: Trace) -> W.Widget:
        """Lay out one case: heading, id lists in two columns, judgments, scores, verdict."""
        qid = trace.query_id
        fields = self.fields[qid] = self._make_inputs(trace)
        self._make_labels(qid)
        lists = [fields[n] for n in LIST_FIELDS]
        grid = W.HBox([W.VBox(lists[:3]), W.VBox(lists[3:] + [fields["claims"]])])
        judgment = W.HBox([fields[n] for n in _JUDGMENTS])
        verdict = W.HBox([W.HTML("diagnosis:&nbsp;"), self.stage_labels[qid], self.reason_labels[qid]])
        return W.VBox(_title_html(trace) + [grid, judgment, self.score_labels[qid], verdict, self.messages[qid],
                                             self.warnings[qid]],
                      layout=W.Layout(border="1px solid #ddd", padding="4px", margin="2px 0")
                      ).add_class(f"ragstage-case-{css_name(qid)}")

    # -- reacting ---------------------------------------------------------------------------
    def _on_edit(self, qid: str) -> None:
        if self._loading:
            return
        inputs = {name: widget.value for name, widget in self.fields[qid].items()}
        try:
            trace = read_case(inputs, self._current[qid], self._original[qid])
        except ValueError as exc:
            self.messages[qid].value = _warning(str(exc)) + " — the diagnosis below is for the last valid input"
            return
        except Exception as exc:  # noqa: BLE001 - a widget must never show a traceback
            self.messages[qid].value = _warning(f"unexpected: {exc!r}")
            return
        self.messages[qid].value = ""
        self._current[qid] = trace
        self._rediagnose(qid)
        self._refresh_table()

    def _rediagnose(self, qid: str) -> None:
        trace = self._current[qid]
        self.score_labels[qid].value = _scores_html(trace)
        d = self.diagnoses[qid] = diagnose(trace, self.require)
        problems = inconsistencies(trace, self.corpus)
        self.warnings[qid].value = "<br>".join(
            _warning(f"inconsistent trace: {p}; the diagnosis reads the trace as typed") for p in problems)
        self.stage_labels[qid].value = d.stage.value
        self.reason_labels[qid].value = _reason_html(d)

    def _refresh_table(self) -> None:
        counts = Counter(d.stage.value for d in self.diagnoses.values())
        self.table = table_from_counts({"all": counts})
        self.table_html.value = _table_html(self.table)

    # -- public -----------------------------------------------------------------------------
    @property
    def traces(self) -> list[Trace]:
        """The current (last valid) version of every case, in the original order."""
        return [self._current[t.query_id] for t in self.original]

    @property
    def counts(self) -> dict[str, int]:
        """Bucket -> number of cases, for the current versions (in bucket order)."""
        return {row.stage: int(row.count) for row in self.table.itertuples()}

    def set_case(self, query_id: str, **values: Any) -> Diagnosis:
        """Set some inputs of one case from Python, as a reader would type them.

        List fields and claims take text (``"d1, d2"``) or a list; ``correct``,
        ``query_ok`` and ``complete`` take True, False or None; ``refused`` and
        ``answerable`` a bool. Returns the case's diagnosis afterwards (unchanged if the
        input was rejected).
        """
        if query_id not in self.fields:
            raise KeyError(f"no case {query_id!r}; cases: {', '.join(self.fields)}")
        fields = self.fields[query_id]
        for name, value in values.items():
            if name not in fields:
                raise KeyError(f"no field {name!r}; fields: {', '.join(fields)}")
            fields[name].value = INPUT_FIELDS[name].coerce(value)
        return self.diagnoses[query_id]

    def reset(self) -> None:
        """Put every case back to the version the editor was built with."""
        self._loading = True
        try:
            for t in self.original:
                self._current[t.query_id] = t
                for name, value in case_inputs(t).items():
                    self.fields[t.query_id][name].value = value
                self.messages[t.query_id].value = ""
                self._rediagnose(t.query_id)
        finally:
            self._loading = False
        self._refresh_table()

    def save(self, path: str | Path | None = None) -> Path | None:
        """Write the current cases as JSON Lines to ``path`` (default: the path box).

        Returns the path written, or None when there was nothing to write to; the outcome
        is shown in :attr:`status` either way. Fields the editor does not show are written
        as they were loaded (see :mod:`.case_form`).
        """
        target = str(path) if path is not None else self.path_box.value.strip()
        if not target:
            self.status.value = _warning("type a file path first")
            return None
        try:
            n = write_traces(target, self.traces)
        except OSError as exc:
            self.status.value = _warning(f"could not save: {exc}")
            return None
        self.status.value = f"saved {n} cases to {html.escape(target)}"
        return Path(target)

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a front end
        show(self.widget)
