"""The four concept figures carry what they draw: where each case stops, each stage's kept and
lost questions, the paired table's four cells, and each span's stage.

Each figure tags its marks with gids (``stop:<case>:<bucket>``, ``kept:<stage>``,
``cell:<name>``, ``span:<id>:<stage>``); the tests find the marks by gid and read their
positions, sizes, colours and text, so a figure that drew the wrong thing fails here.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.colors import to_hex

from ragstage import funnel_from_counts
from ragstage.fixtures import fixture_path, load_traces
from ragstage.ingest.otlp import read_otlp_json
from ragstage.plots import (
    BUCKET_COLOURS,
    MOVE_COLOURS,
    funnel_diagram,
    paired_table,
    png_bytes,
    span_tree,
    stage_walk,
)
from ragstage.plots.walk import WALK_STAGES


def _by_gid(fig, prefix: str) -> dict[str, object]:
    return {a.get_gid(): a for a in fig.findobj(lambda a: (a.get_gid() or "").startswith(prefix))}


def test_the_stage_walk_stops_each_case_at_its_bucket():
    cases = load_traces("five_cases", "cases.jsonl") + load_traces("five_cases", "not_relevance.jsonl")
    fig = stage_walk(cases)
    stops = _by_gid(fig, "stop:")
    assert set(stops) == {"stop:A:retrieval", "stop:B:reranking", "stop:C:generation", "stop:D:prompt_assembly",
                          "stop:E:none", "stop:F:endpoint_unavailable", "stop:G:label_missing"}
    x = {gid.split(":")[1]: float(m.get_offsets()[0][0]) for gid, m in stops.items()}
    assert x["A"] == WALK_STAGES.index("retrieval") and x["D"] == WALK_STAGES.index("prompt_assembly")
    assert x["E"] == len(WALK_STAGES) and x["F"] < 0 and x["G"] < 0
    colour = to_hex(stops["stop:B:reranking"].get_facecolor()[0])
    assert colour == BUCKET_COLOURS["reranking"]
    assert png_bytes(fig).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="at least one trace"):
        stage_walk([])


def test_the_funnel_diagram_hands_each_stage_the_last_ones_kept():
    counts = {"retrieval": 22, "reranking": 31, "prompt_assembly": 40, "generation": 100, "none": 107}
    fig = funnel_diagram(funnel_from_counts({"x": counts}))
    kept, lost = _by_gid(fig, "kept:"), _by_gid(fig, "lost:")
    assert kept["kept:retrieval"].get_width() == 278 and lost["lost:retrieval"].get_width() == 22
    assert lost["lost:retrieval"].get_x() == 278
    assert kept["kept:reranking"].get_width() + lost["lost:reranking"].get_width() == 278
    assert kept["kept:generation"].get_width() == 107
    assert to_hex(lost["lost:generation"].get_facecolor()) == BUCKET_COLOURS["generation"]
    assert any(t.get_text() == "107/207 = 0.517" for t in fig.axes[0].texts)
    two = funnel_from_counts({"a": counts, "b": counts})
    with pytest.raises(ValueError, match="name one with group="):
        funnel_diagram(two)
    assert _by_gid(funnel_diagram(two, group="b"), "kept:")


def test_the_paired_table_colours_only_the_flipped_cells():
    fig = paired_table({"both_right": 75, "fixed": 32, "broken": 9, "both_wrong": 184}, before="minilm",
                       after="minilm+ce")
    cells = _by_gid(fig, "cell:")
    assert to_hex(cells["cell:fixed"].get_facecolor()) == MOVE_COLOURS["fixed"]
    assert to_hex(cells["cell:broken"].get_facecolor()) == MOVE_COLOURS["broken"]
    assert to_hex(cells["cell:both_right"].get_facecolor()) == to_hex(cells["cell:both_wrong"].get_facecolor())
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert {"32\nfixed", "9\nbroken", "75\nright in both", "184\nwrong in both"} <= set(texts)
    assert cells["cell:fixed"].get_xy() == (0, 0) and cells["cell:broken"].get_xy() == (1, 1)
    with pytest.raises(ValueError, match="paired_counts"):
        paired_table({"fixed": 1, "broken": 2})


def test_the_span_tree_names_each_spans_stage_and_puts_children_under_parents():
    spans = list(read_otlp_json(fixture_path("ingest", "langchain_spans.jsonl")))
    one = [s for s in spans if s.trace_id == spans[0].trace_id]
    fig = span_tree(one)
    boxes = _by_gid(fig, "span:")
    assert len(boxes) == len(one)
    stage = {gid.split(":")[1]: gid.split(":")[2] for gid in boxes}
    kinds = {s.span_id: s.kind for s in one}
    assert {stage[i] for i, k in kinds.items() if k == "RETRIEVER"} == {"retrieval"}
    assert {stage[i] for i, k in kinds.items() if k == "LLM"} == {"generation"}
    assert {stage[i] for i, k in kinds.items() if k == "CHAIN"} == {"other"}
    row = {gid.split(":")[1]: box.get_position()[1] for gid, box in boxes.items()}
    depth_x = {gid.split(":")[1]: box.get_position()[0] for gid, box in boxes.items()}
    for s in one:
        if s.parent_id in row:
            assert row[s.parent_id] < row[s.span_id] and depth_x[s.parent_id] < depth_x[s.span_id]
    with pytest.raises(ValueError, match="more than one trace"):
        span_tree(spans)
