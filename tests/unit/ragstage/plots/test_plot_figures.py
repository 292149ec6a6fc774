"""The comparison, prompt-fill and chunking figures carry their numbers: band widths, cell counts, boxes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from ragstage import attribution_table, compare, table_from_counts
from ragstage.fixtures import fixtures_dir, load_traces
from ragstage.plots import (
    BUCKET_COLOURS,
    MOVE_COLOURS,
    STAGE_LABELS,
    bucket_change,
    chunking_plot,
    document_chunks,
    migration_flow,
    migration_heatmap,
    migration_matrix,
    move_kind,
    png_bytes,
    prompt_fill_plot,
    stage_bars,
)
from ragstage.runs import load_run
from ragstage.runs.summary import prompt_fill


@pytest.fixture(scope="module")
def incidents():
    """Chapter 3's stored incidents before and after the fix."""
    return compare(load_traces("incidents", "batch.jsonl"), load_traces("incidents", "after_fix.jsonl"),
                   intersect=True)


@pytest.fixture(scope="module")
def mini_run():
    return load_run(fixtures_dir() / "mini_run")


def test_move_kinds():
    assert move_kind("prompt_assembly", "none") == "fixed"
    assert move_kind("none", "generation") == "broken"
    assert move_kind("retrieval", "generation") == "moved"
    assert move_kind("retrieval", "retrieval") == "stayed"
    assert move_kind("not_logged", "none") == "undecided"
    assert move_kind("none", "unjudged") == "undecided"


def test_migration_matrix_is_square_in_walk_order(incidents):
    square = migration_matrix(incidents)
    assert list(square.index) == list(square.columns)
    assert int(square.to_numpy().sum()) == incidents.n
    assert square.equals(migration_matrix(incidents.migration))
    with pytest.raises(TypeError):
        migration_matrix([1, 2])
    with pytest.raises(ValueError, match="unknown bucket"):
        migration_matrix(pd.DataFrame({"nope": [1]}, index=["none"]))


def test_heatmap_writes_every_nonzero_count_and_frames_fixed_and_broken(incidents):
    ax = migration_heatmap(incidents).axes[0]
    square = migration_matrix(incidents)
    counts = sorted(int(t.get_text()) for t in ax.texts)
    assert counts == sorted(int(v) for v in square.to_numpy().ravel() if v)
    frames = [p.get_gid() for p in ax.patches if p.get_gid() in ("fixed", "broken")]
    assert frames.count("fixed") == int((square.loc[[b for b in square.index if b not in ("none",)], "none"] > 0).sum())
    assert "broken" in frames
    assert [t.get_text() for t in ax.get_yticklabels()] == [STAGE_LABELS[b] for b in square.index]
    assert ax.get_xlabel() == "after" and ax.get_ylabel() == "before"


def test_flow_bands_are_as_wide_as_the_moves(incidents):
    fig = migration_flow(incidents, before="old", after="new")
    ax = fig.axes[0]
    square = migration_matrix(incidents)
    bands = {p.get_gid(): p for p in ax.patches if p.get_gid() and "->" in p.get_gid()}
    want = {f"{s}->{d}": int(square.loc[s, d]) for s in square.index for d in square.columns if square.loc[s, d]}
    assert set(bands) == set(want)
    for gid, patch in bands.items():
        ys = patch.get_path().vertices[:, 1]
        assert ys[-2] - ys[0] == pytest.approx(want[gid])  # the band's left edge spans its count
        src, dst = gid.split("->")
        colour = matplotlib.colors.to_hex(patch.get_facecolor())
        assert colour == MOVE_COLOURS[move_kind(src, dst)]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"fixed (wrong -> right): {incidents.fixed}" in legend
    assert f"broken (right -> wrong): {incidents.broken}" in legend
    texts = [t.get_text() for t in ax.texts]
    assert "old" in texts and "new" in texts
    nodes = {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith("node:")}
    assert matplotlib.colors.to_hex(nodes["node:retrieval"].get_facecolor()) == BUCKET_COLOURS["retrieval"]
    with pytest.raises(ValueError):
        migration_flow(pd.DataFrame(0, index=["none"], columns=["none"]))


def test_flow_on_chapter_6_runs(mini_run):
    c = compare(mini_run.traces["bm25"], mini_run.traces["minilm+rrf"])
    ax = migration_flow(c).axes[0]
    total = sum(p.get_path().vertices[-2, 1] - p.get_path().vertices[0, 1]
                for p in ax.patches if "->" in (p.get_gid() or ""))
    assert total == pytest.approx(c.n)


def test_bucket_change_points_are_the_two_runs_counts():
    table = table_from_counts({"200": {"prompt_assembly": 5, "generation": 6, "none": 25},
                               "300": {"prompt_assembly": 1, "generation": 7, "none": 28}})
    ax = bucket_change(table, "200", "300", title="t").axes[0]
    lines = {line.get_label(): list(line.get_xdata()) for line in ax.lines}
    assert lines == {"200": [5, 6, 25], "300": [1, 7, 28]}
    assert "5 -> 1" in [t.get_text() for t in ax.texts]
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    colours = [matplotlib.colors.to_hex(a.arrow_patch.get_edgecolor()) for a in arrows]
    assert colours == [MOVE_COLOURS["fixed"], MOVE_COLOURS["broken"], MOVE_COLOURS["fixed"]]


def test_prompt_fill_plot_on_the_mini_run(mini_run):
    fill = prompt_fill(mini_run.all_traces(), top=5)
    ax = prompt_fill_plot(fill, title="t").axes[0]
    bars = {c.get_label(): [p.get_width() for p in c.patches] for c in ax.containers}
    assert bars["offered"] == pytest.approx(fill["mean_offered"].tolist())
    assert bars["in the prompt"] == pytest.approx(fill["mean_in_prompt"].tolist())
    assert [t.get_text() for t in ax.get_yticklabels()] == fill["group"].tolist()
    first = fill.iloc[0]
    assert any(f"cut by the budget: {int(first.budget_stopped)} of {int(first.questions)}" in t.get_text()
               for t in ax.texts)
    with pytest.raises(ValueError):
        prompt_fill_plot(pd.DataFrame({"group": []}))


def test_lost_claims_of_the_mini_run(mini_run):
    from ragstage.plots import lost_bars

    table = attribution_table(mini_run.all_traces())
    ax = lost_bars(table).axes[0]
    got = {c.get_label(): [p.get_width() for p in c.patches] for c in ax.containers}
    want = table[table.stage == "prompt_assembly"].set_index("group")["count"]
    assert got["prompt_assembly"] == [want.get(g, 0) for g in mini_run.labels]


def test_document_chunks_and_chunking_plot():
    where = {"a": ("d1", 0, 200), "b": ("d1", 200, 380), "c": ("d2", 0, 50), "e": ("d1", 380, 500)}
    assert document_chunks(where, "d1") == [(0, 200), (200, 380), (380, 500)]
    with pytest.raises(ValueError):
        document_chunks(where, "zz")
    fig = chunking_plot({"200": document_chunks(where, "d1"), "300": [(0, 300), (300, 500)]}, (350, 420),
                        length=500, title="a document")
    ax = fig.axes[0]
    gids = sorted(p.get_gid() for p in ax.patches if p.get_gid())
    assert gids == ["200:0", "200:1:gold", "200:2:gold", "300:0", "300:1:gold"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["200\n2 gold chunks", "300\n1 gold chunk"]
    assert ax.get_legend().get_texts()[0].get_text() == "gold span, characters 350-420"
    assert ax.get_xlim() == (0, 500)
    with pytest.raises(ValueError):
        chunking_plot({}, (1, 2))
    with pytest.raises(ValueError):
        chunking_plot({"x": [(0, 5)]}, (3, 3))


def test_chapter_7_span_straddles_a_boundary_at_200_only():
    pytest.importorskip("langchain_text_splitters")
    from ragstage.ingest.demo import chunk_corpus, chunk_locations, load_questions

    label = next(q for q in load_questions() if q.query_id == "q03")
    doc, start, end = label.gold_spans[0]
    rows = {f"{size} characters": document_chunks(chunk_locations(chunk_corpus(size)), doc) for size in (200, 300)}
    ax = chunking_plot(rows, (start, end)).axes[0]
    gold = [p.get_gid() for p in ax.patches if (p.get_gid() or "").endswith(":gold")]
    assert sum(g.startswith("200") for g in gold) == 2 and sum(g.startswith("300") for g in gold) == 1


def test_png_bytes_are_reproducible():
    table = table_from_counts({"x": {"retrieval": 1, "none": 4}})
    first, second = png_bytes(stage_bars(table)), png_bytes(stage_bars(table))
    assert first == second and first.startswith(b"\x89PNG")
    assert b"Matplotlib" not in first
