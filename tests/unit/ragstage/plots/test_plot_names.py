"""Names from data (pipelines, groups, files) are drawn as plain text in every figure.

Matplotlib parses text between two ``$`` as math: before, a group named ``$\\frac{$`` stopped
``report`` with a parser error, a deeply nested one with a ``RecursionError``, and control
characters flooded stderr with "Glyph missing" warnings.
"""

from __future__ import annotations

import html
import io
import subprocess
import sys
import warnings

import pandas as pd
import pytest
from matplotlib import rc_context

from ragstage import Trace, plots, write_traces
from ragstage.report import attribution_table, funnel
from ragstage.rows import printable

NAMES = ["$\\frac{$", "cost $5 to $10", "$" + "x^{" * 400 + "}" * 400 + "$", "ctl\x00\x1b[2J\x07", "a\\$b"]


def svg_text(fig) -> str:
    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none"}), warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*Glyph")  # a "Glyph missing" warning fails the test
        fig.savefig(buffer, format="svg")
    return html.unescape(buffer.getvalue())


def traces() -> list[Trace]:
    out = []
    for i, name in enumerate(NAMES):
        out.append(Trace(query_id=f"q{i}a", pipeline=name, gold=["d1"], retrieved=["d1"], prompt=["d1"],
                         answer_ids=["d1"]))
        out.append(Trace(query_id=f"q{i}b", pipeline=name, gold=["d1"], retrieved=["d2"], prompt=["d2"],
                         answer_ids=["d2"]))
    return out


def drawn(name: str) -> str:
    return printable(name)  # what a reader sees: the name, its control characters as escapes


FIGURES = {
    "stage_bars": lambda: plots.stage_bars(attribution_table(traces())),
    "lost_bars": lambda: plots.lost_bars(attribution_table(traces())),
    "funnel_plot": lambda: plots.funnel_plot(funnel(traces())),
    "funnel_counts": lambda: plots.funnel_counts(funnel(traces())),
    "interval_plot": lambda: plots.interval_plot({name: (1, 2) for name in NAMES}),
    "bucket_change": lambda: plots.bucket_change(attribution_table(traces()), NAMES[0], NAMES[1]),
    "prompt_fill_plot": lambda: plots.prompt_fill_plot(pd.DataFrame(
        [{"group": n, "questions": 2, "top": 5, "mean_offered": 5.0, "mean_in_prompt": 3.0, "budget_stopped": 1}
         for n in NAMES])),
    "power_plot": lambda: plots.power_plot({n: pd.DataFrame({"n": [10, 20], "exact": [0.2, 0.4],
                                                             "normal": [0.3, 0.5]}) for n in NAMES}),
    "chunking_plot": lambda: plots.chunking_plot({n: [(0, 10), (10, 20)] for n in NAMES}, (5, 12)),
}


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_name_is_drawn_as_plain_text(name):
    with plots.no_display():
        svg = svg_text(FIGURES[name]())
    expected = {"bucket_change": NAMES[:2], "funnel_counts": []}.get(name, NAMES)  # funnel_counts has no legend
    assert [n for n in NAMES if drawn(n) in svg] == expected


def test_flow_names_are_plain_text():
    from ragstage.report import compare

    before = [Trace(query_id="q", gold=["d1"], retrieved=["d1"], prompt=["d1"], answer_ids=["d1"])]
    after = [Trace(query_id="q", gold=["d1"], retrieved=["d2"], prompt=["d2"], answer_ids=["d2"])]
    with plots.no_display():
        svg = svg_text(plots.migration_flow(compare(before, after), before=NAMES[0], after=NAMES[2]))
    assert drawn(NAMES[0]) in svg and drawn(NAMES[2]) in svg


def test_report_with_math_and_control_names_exits_0_quietly(tmp_path):
    path = tmp_path / "$x$.jsonl"
    write_traces(path, traces())
    command = [sys.executable, "-m", "ragstage.cli", "report", str(path), "--out", str(tmp_path / "r.html")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Glyph" not in done.stderr and "Traceback" not in done.stderr
