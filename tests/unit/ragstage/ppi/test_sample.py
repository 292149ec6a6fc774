"""The draw and its file, in Python: allocation to strata, seeded draws, the file's checks, and the
pairing and estimate functions behind `ragstage attribute --gold-sample`."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.ppi.estimate import estimate_buckets, pair
from ragstage.ppi.means import ppi_mean
from ragstage.ppi.sample import Request, allocate, draw, ids_digest, read_sample, write_sample


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=8), data=st.data())
def test_allocation_adds_up_and_keeps_two_per_stratum(sizes, data):
    strata = {f"s{i}": v for i, v in enumerate(sizes)}
    floor = sum(min(2, v) for v in sizes)
    n = data.draw(st.integers(floor, sum(sizes)))
    out = allocate(strata, n)
    assert sum(out.values()) == n
    assert all(min(2, strata[k]) <= out[k] <= strata[k] for k in strata)
    # no stratum is more than one label (plus its floor) away from its proportional share
    assert all(out[k] <= max(2, n * strata[k] / sum(sizes) + 1) for k in strata)


def test_allocation_refuses_what_cannot_be_drawn():
    with pytest.raises(ValueError, match="too small for 3 strata"):
        allocate({"a": 10, "b": 10, "c": 10}, 5)
    with pytest.raises(ValueError, match="exceeds"):
        allocate({"a": 3}, 4)


def requests(buckets, pipeline="default"):
    return [Request(f"q{i:03d}", pipeline, b) for i, b in enumerate(buckets)]


def test_draw_is_seeded_and_ignores_the_file_order():
    rs = requests(["retrieval"] * 30 + ["none"] * 70)
    a = draw(rs, 20, seed=4)
    assert a == draw(list(reversed(rs)), 20, seed=4)
    assert a.query_ids != draw(rs, 20, seed=5).query_ids
    assert a.ids_digest == ids_digest(r.query_id for r in rs) and a.population == 100
    strat = draw(rs, 20, seed=4, by_bucket=True)
    assert strat.strata == {"retrieval": {"population": 30, "drawn": 6, "weight": 0.3},
                            "none": {"population": 70, "drawn": 14, "weight": 0.7}}
    with pytest.raises(ValueError, match="2 pipelines"):
        draw([*rs, Request("x", "v2", "none")], 5, seed=1)
    with pytest.raises(ValueError, match="at least 2"):
        draw(rs, 1, seed=1)


def test_the_sample_file_round_trips_and_names_bad_fields(tmp_path):
    sample = draw(requests(["retrieval"] * 30 + ["none"] * 70), 20, seed=4, by_bucket=True)
    path = write_sample(sample, tmp_path / "s.json")
    assert read_sample(path) == sample
    data = json.loads(path.read_text())
    for change, message in [({"format": "x"}, "field 'format'"), ({"seed": True}, "field 'seed'"),
                            ({"query_ids": data["query_ids"][:-1]}, "'n' is 20"),
                            ({"query_ids": [1] * 20}, "'query_ids', item 0"),
                            ({"strata": {"oops": {}}}, "stratum 'oops'"), ({"require": "some"}, "field 'require'")]:
        path.write_text(json.dumps({**data, **change}))
        with pytest.raises(ValueError, match=message):
            read_sample(path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        read_sample(path)


def test_estimate_buckets_is_ppi_mean_per_bucket_and_joint_is_wider():
    silver = requests(["retrieval"] * 40 + ["none"] * 160)
    sample = draw(silver, 50, seed=3)
    drawn = set(sample.query_ids)
    # people disagree with the judge on every fifth drawn request
    gold = {q: ("none" if b == "retrieval" else "retrieval") if i % 5 == 0 else b
            for i, (q, b) in enumerate((r.query_id, r.bucket) for r in silver if r.query_id in drawn)}
    gold_rows = [Request(q, "default", b) for q, b in gold.items()]
    labelled = pair(silver, gold_rows, sample)
    result = estimate_buckets(silver, labelled, sample)
    inside = [r for r in silver if r.query_id in drawn]
    outside = [r for r in silver if r.query_id not in drawn]
    for row in result.rows:
        ref = ppi_mean([gold[r.query_id] == row.stage for r in inside], [r.bucket == row.stage for r in inside],
                       [r.bucket == row.stage for r in outside])
        assert row.estimate == pytest.approx(ref.estimate, abs=1e-12)
        assert (row.low, row.high) == pytest.approx((max(ref.low, 0), min(ref.high, 1)), abs=1e-12)
        assert row.warning  # 50 gold labels: below the simulation's safe region
    joint = estimate_buckets(silver, labelled, sample, joint=True)
    for a, b in zip(result.rows, joint.rows):
        assert b.high - b.low > a.high - a.low
    assert result.agreement.n == 50 and result.agreement.agree == 40


def test_silver_buckets_swapped_since_a_stratified_draw_are_refused():
    silver = requests(["retrieval"] * 30 + ["none"] * 70)
    sample = draw(silver, 20, seed=4, by_bucket=True)
    gold = [Request(q, "default", "none") for q in sample.query_ids]
    pair(silver, gold, sample)
    # two requests trade buckets: the same counts, but a drawn request left its stratum
    inside = next(i for i, r in enumerate(silver) if r.query_id in sample.query_ids and r.bucket == "retrieval")
    outside = next(i for i, r in enumerate(silver) if r.query_id not in sample.query_ids and r.bucket == "none")
    swapped = list(silver)
    swapped[inside] = Request(silver[inside].query_id, "default", "none")
    swapped[outside] = Request(silver[outside].query_id, "default", "retrieval")
    with pytest.raises(ValueError, match=r"retrieval \(30, 6\) then, \(30, 5\) now"):
        pair(swapped, gold, sample)


FEW = ["retrieval", "reranking", "generation", "none"]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_bucket_row_is_ppi_py_on_that_bucket_s_indicator(data):
    ppi_py = pytest.importorskip("ppi_py")
    size = data.draw(st.integers(6, 60))
    judged = data.draw(st.lists(st.sampled_from(FEW), min_size=size, max_size=size))
    truth = data.draw(st.lists(st.sampled_from(FEW), min_size=size, max_size=size))
    silver = requests(judged)
    sample = draw(silver, data.draw(st.integers(2, size - 1)), seed=data.draw(st.integers(0, 99)))
    gold = {r.query_id: t for r, t in zip(silver, truth)}
    labelled = pair(silver, [Request(q, "default", gold[q]) for q in sample.query_ids], sample)
    result = estimate_buckets(silver, labelled, sample)
    inside = [r for r in silver if r.query_id in set(sample.query_ids)]
    outside = [r for r in silver if r.query_id not in set(sample.query_ids)]
    for row in result.rows:
        y = np.array([gold[r.query_id] == row.stage for r in inside], float)
        h = np.array([r.bucket == row.stage for r in inside], float)
        u = np.array([r.bucket == row.stage for r in outside], float)
        if np.var(np.concatenate([h, u])) == 0:
            continue  # ppi_py's NaN: tests/unit/ragstage/ppi/test_means.py covers the constant judge
        point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, h, u)))
        low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(y, h, u, alpha=0.05))
        assert abs(row.estimate - point) <= 1e-9
        assert abs(row.low - max(low, 0.0)) <= 1e-9 and abs(row.high - min(high, 1.0)) <= 1e-9
        assert row.judge_k == int(h.sum() + u.sum()) and row.gold_k == int(y.sum())
