"""The coverage simulation: seeded, near 95% where the tool prints no warning, below 93% only where it
warns, PPI narrower than gold-only Wilson; and the table in docs/gold-for-a-few.md is the function's."""


import numpy as np
import pandas as pd
import pytest
from repo_paths import REPO

from ragstage.ppi.coverage import (
    SMALL_COUNT,
    SMALL_SAMPLE,
    coverage_table,
    markdown,
    paired_table,
    simulate,
    simulate_paired,
    too_few,
)

DOCS = REPO / "docs" / "gold-for-a-few.md"


def test_the_simulation_is_seeded():
    a = simulate("uniform", sizes=(100,), reps=200, seed=1)
    pd.testing.assert_frame_equal(a, simulate("uniform", sizes=(100,), reps=200, seed=1))
    assert not a.equals(simulate("uniform", sizes=(100,), reps=200, seed=2))
    with pytest.raises(ValueError, match="unknown judge"):
        simulate("oracle")
    with pytest.raises(ValueError, match="design is"):
        simulate(design="quota")
    with pytest.raises(ValueError, match="below the population"):
        simulate(sizes=(100,), population=100)


@pytest.fixture(scope="module", params=["uniform", "stratified"])
def table(request):
    return coverage_table(design=request.param, reps=1000, seed=5, sizes=(50, 150, 500))


def test_coverage_falls_short_only_where_the_tool_warns(table):
    short = table[table.mc_high < 0.93]  # coverage below 93% beyond the simulation's own noise
    assert len(short) >= 4  # the failure is real: rare buckets and small samples
    assert (short.flagged >= 0.9).all(), short
    quiet = table[table.flagged < 0.5]
    assert len(quiet) >= 10
    assert (quiet.mc_high >= 0.93).all(), quiet
    assert (table[(table.n == 50) & (table.rate == 0.02)].ppi_coverage < 0.8).all()
    assert (table[table.n == 500].ppi_coverage > 0.93).sum() >= 8


def test_ppi_is_narrower_than_gold_only_and_wilson_covers(table):
    assert (table.width_ratio < 1).all()
    assert (table.wilson_coverage > 0.93).all()
    assert (table.judge_bias.abs() > 0.01).any()  # the judge-only rate is off: what PPI corrects


def test_the_warning_rule():
    assert too_few(SMALL_SAMPLE - 1, 0.5) and not too_few(SMALL_SAMPLE, 0.5)
    assert too_few(200, (SMALL_COUNT - 1) / 200) and not too_few(200, SMALL_COUNT / 200)
    assert too_few(200, 1 - (SMALL_COUNT - 1) / 200)  # rare the other way round: nearly every request
    assert list(too_few(np.array([50, 500]), np.array([0.5, 0.5]))) == [True, False]
    assert too_few(500, -0.01)  # an estimate below zero is a rare bucket


@pytest.mark.parametrize("make", [coverage_table, lambda: coverage_table(design="stratified"), paired_table])
def test_the_docs_print_the_function_s_tables(make):
    assert markdown(make()) in DOCS.read_text(encoding="utf-8")


def test_the_paired_difference_covers_with_enough_gold_and_a_shared_judge_narrows_it():
    shared = simulate_paired(sizes=(50, 300), reps=600, seed=3)
    assert (shared[shared.n == 300].mc_high >= 0.93).all()
    assert (shared[(shared.n == 50) & (shared.fixed == 0.02)].ppi_coverage < 0.8).all()
    assert (shared.width_ratio < 0.7).all()  # the same verdict on an unchanged answer cancels in the difference
    independent = simulate_paired(sizes=(300,), reps=600, seed=3, errors="independent")
    assert (independent.width_ratio > shared[shared.n == 300].width_ratio.to_numpy()).all()
    with pytest.raises(ValueError, match="do not fit"):
        simulate_paired(changes=((0.5, 0.1),))
    with pytest.raises(ValueError, match="errors is"):
        simulate_paired(errors="some")
