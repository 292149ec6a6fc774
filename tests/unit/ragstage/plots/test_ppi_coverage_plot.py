"""The PPI coverage figure draws the simulation's own numbers: each line's points are the table's
coverage and width ratios, for the judge asked for, and a table it cannot draw is refused."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from ragstage.plots import png_bytes, ppi_coverage_plot
from ragstage.ppi.coverage import coverage_table, simulate


@pytest.fixture(scope="module")
def table():
    return coverage_table(reps=60, population=800, sizes=(50, 200), seed=3)


def _line(fig, gid):
    (line,) = fig.findobj(lambda a: a.get_gid() == gid)
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def test_every_rate_is_drawn_from_its_rows_of_the_table(table):
    fig = ppi_coverage_plot(table, judge="bucket_dependent")
    part = table[table.judge == "bucket_dependent"]
    for rate in sorted(set(part.rate)):
        rows = part[part.rate == rate].sort_values("n")
        for gid, column in ((f"ppi:{rate:g}", "ppi_coverage"), (f"wilson:{rate:g}", "wilson_coverage"),
                            (f"ratio:{rate:g}", "width_ratio")):
            x, y = _line(fig, gid)
            assert list(x) == list(rows.n) and np.allclose(y, rows[column]), gid
    uniform = ppi_coverage_plot(table, judge="uniform")
    rows = table[(table.judge == "uniform") & (table.rate == 0.02)].sort_values("n")
    assert np.allclose(_line(uniform, "ppi:0.02")[1], rows.ppi_coverage)
    assert not np.allclose(rows.ppi_coverage, part[part.rate == 0.02].sort_values("n").ppi_coverage)
    assert png_bytes(fig).startswith(b"\x89PNG")


def test_the_nominal_level_and_the_warning_floor_are_drawn(table):
    fig = ppi_coverage_plot(table, judge="uniform", nominal=0.95, floor=0.93)
    levels = {round(float(line.get_ydata()[0]), 3) for line in fig.axes[0].get_lines()
              if line.get_gid() is None and len(line.get_ydata()) == 2}
    assert {0.95, 0.93} <= levels


def test_one_judge_needs_no_name_and_two_do():
    one = simulate("uniform", sizes=(50,), population=400, reps=20, seed=1)
    assert ppi_coverage_plot(one).axes[0].get_title().endswith("(judge: uniform)")
    two = coverage_table(reps=20, population=400, sizes=(50,), seed=1)
    with pytest.raises(ValueError, match="name one with judge="):
        ppi_coverage_plot(two)
    with pytest.raises(ValueError, match="no rows for judge 'nobody'"):
        ppi_coverage_plot(two, judge="nobody")
    with pytest.raises(ValueError, match="lacks column"):
        ppi_coverage_plot(two.drop(columns=["mc_low"]), judge="uniform")
