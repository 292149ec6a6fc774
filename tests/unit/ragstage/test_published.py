"""ragstage.published: the published SciFact counts read once, checked against each other."""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage import Trace, holm, load_published, mcnemar, wilson
from ragstage.fixtures import load_json
from ragstage.published import CORRECT_COLUMNS, PAIR_COLUMNS
from ragstage.report import comparison_table

RAW = load_json("published", "scifact_run.json")


def write(tmp_path, data, name="run.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_correct_counts_stated_and_from_buckets():
    run = load_published()
    assert run.n == RAW["n"] == 300
    for name, spec in RAW["pipelines"].items():
        assert run.correct[name] == spec.get("correct", spec.get("buckets", {}).get("none"))
    assert set(run.buckets) == {name for name, spec in RAW["pipelines"].items() if "buckets" in spec}
    assert run.facts == RAW["other_facts"]


def test_pairs_table_has_exact_and_holm_p():
    pairs = load_published().pairs
    assert list(pairs.columns) == PAIR_COLUMNS and len(pairs) == len(RAW["pairs"])
    for row, raw in zip(pairs.itertuples(), RAW["pairs"]):
        assert (row.before, row.after, row.fixed, row.broken) == (raw["before"], raw["after"], raw["fixed"],
                                                                  raw["broken"])
        assert row.p_value == mcnemar(raw["fixed"], raw["broken"])
        assert row.published_p == (raw["published_p"] or "")
        assert row.right_before + row.fixed - row.broken == row.right_after
    assert list(pairs.p_holm) == holm(list(pairs.p_value))


def test_published_p_values_survive_holm_as_the_chapter_says():
    pairs = load_published().pairs.set_index(["before", "after"])
    assert pairs.loc[("minilm", "bm25"), "p_value"] < 0.05 < pairs.loc[("minilm", "bm25"), "p_holm"]
    assert pairs.loc[("minilm", "minilm+ce"), "p_holm"] < 0.05
    assert pairs.loc[("minilm+ce", "minilm+ce/revised-prompt"), "p_holm"] < 0.05


def test_pairs_have_the_columns_of_a_comparison_table():
    runs = {"a": [Trace(query_id="q", gold=["g"], retrieved=["g"], prompt=["g"], correct=True)],
            "b": [Trace(query_id="q", gold=["g"], retrieved=["g"], prompt=["g"], correct=False)]}
    table = comparison_table(runs, [("a", "b")], adjust="holm")
    assert list(table.columns) + ["published_p"] == PAIR_COLUMNS


def test_correct_table_in_order_with_wilson():
    run = load_published()
    table = run.correct_table(["minilm", "bm25+ce"])
    assert list(table.columns) == CORRECT_COLUMNS and list(table.pipeline) == ["minilm", "bm25+ce"]
    assert tuple(table.iloc[0][["low", "high"]]) == wilson(run.correct["minilm"], 300)
    assert list(run.correct_table().pipeline) == list(RAW["pipelines"])
    with pytest.raises(ValueError, match="no published pipeline 'colbert'"):
        run.correct_table(["colbert"])


def broken_copy(edit):
    data = copy.deepcopy(RAW)
    edit(data)
    return data


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.update(n=0), r"run\.json: n: expected a positive"),
    (lambda d: d.update(pipelines={}), "'pipelines' must be a non-empty"),
    (lambda d: d["pipelines"].update(bm25={}), "pipelines.bm25: needs 'correct', 'buckets'"),
    (lambda d: d["pipelines"]["bm25"].update(correct=301), r"pipelines\.bm25\.correct: expected a whole number"),
    (lambda d: d["pipelines"]["bm25"].update(correct="99"), r"pipelines\.bm25\.correct"),
    (lambda d: d["pipelines"]["minilm+ce"]["buckets"].update(retrieval=23), "add up to 301, not n = 300"),
    (lambda d: d["pipelines"]["minilm+ce"]["buckets"].update(retreival=1), r"unknown bucket\(s\) \['retreival'\]"),
    (lambda d: d["pipelines"]["minilm+ce"].update(correct=106), "'correct' is 106 but the right buckets add up to 107"),
    (lambda d: d["pairs"][2].update(fixed=30), r"pairs\[2\]: minilm 84 \+ fixed 30 - broken 16 = 98, but bm25 has 99"),
    (lambda d: d["pairs"][0].update(after="colbert"), r"pairs\[0\]\.after: 'colbert' is not a published"),
    (lambda d: d["pairs"][1].update(broken=100), r"pairs\[1\]\.broken: expected a whole number from 0 to 99"),
    (lambda d: d["pairs"][1].update(published_p=0.23), r"pairs\[1\]\.published_p: expected the printed text"),
    (lambda d: d.update(pairs={}), "'pairs' must be a list"),
])
def test_bad_counts_name_the_file_and_field(tmp_path, edit, match):
    with pytest.raises(ValueError, match=match):
        load_published(write(tmp_path, broken_copy(edit)))


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "n": 300,\n  "pipelines": {,}\n}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: line 3: not valid JSON"):
        load_published(path)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n), min_size=2,
                                                                               max_size=5))),
       st.data())
def test_any_consistent_run_loads_and_any_broken_link_is_caught(tmp_path_factory, nk, data):
    n, totals = nk
    names = [f"p{i}" for i in range(len(totals))]
    pairs = []
    for i in range(1, len(totals)):
        before, after = totals[i - 1], totals[i]
        # fixed - broken must equal after - before; pick broken within what both runs allow.
        low, high = max(0, before - after), min(before, n - after)
        broken = data.draw(st.integers(low, high))
        pairs.append({"before": names[i - 1], "after": names[i], "fixed": broken + after - before,
                      "broken": broken, "published_p": None})
    raw = {"n": n, "pipelines": {name: {"correct": k} for name, k in zip(names, totals)}, "pairs": pairs}
    path = write(tmp_path_factory.mktemp("pub"), raw)
    run = load_published(path)
    assert run.correct == dict(zip(names, totals))
    assert list(run.pairs.p_value) == [mcnemar(p["fixed"], p["broken"]) for p in pairs]
    i = data.draw(st.integers(0, len(pairs) - 1))
    if pairs[i]["fixed"] < n - totals[i]:
        pairs[i]["fixed"] += 1
        with pytest.raises(ValueError, match=rf"pairs\[{i}\]"):
            load_published(write(tmp_path_factory.mktemp("pub"), raw))
