"""`ragstage sample` and `ragstage attribute --gold-sample`, run in a subprocess as a user runs them;
every estimate against ppi_py to 1e-9, every refusal with exit 2 and a message naming what differs."""

import json
import subprocess
import sys

import numpy as np
import pytest
from gold_sample_sets import ppi_reference
from repo_paths import REPO

from ragstage import Trace, read_traces, write_traces
from ragstage.ppi.means import stratified_mean
from ragstage.stats import wilson

#: The gold id that puts a trace of the shape below in each bucket (retrieved a-d, reranked a-c,
#: prompt a-b, the answer names a).
GOLD_ID = {"none": "a", "generation": "b", "prompt_assembly": "c", "reranking": "d", "retrieval": "z"}
NAMES = list(GOLD_ID)


def trace(query_id, bucket, pipeline="default", gold=None):
    return Trace(query_id=query_id, pipeline=pipeline, gold=[GOLD_ID[bucket]] if gold is None else gold,
                 retrieved=["a", "b", "c", "d"], reranked=["a", "b", "c"], prompt=["a", "b"], answer_ids=["a"])


def ragstage(*args):
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """800 requests: true buckets, a judge right 80% of the time, a uniform sample of 150 and its gold rows."""
    tmp = tmp_path_factory.mktemp("gold")
    rng = np.random.default_rng(2)
    true = rng.choice(NAMES, size=800, p=[0.5, 0.15, 0.1, 0.1, 0.15])
    judge = [t if rng.random() < 0.8 else rng.choice(NAMES) for t in true]
    paths = {"silver": tmp / "silver.jsonl", "all_gold": tmp / "all_gold.jsonl", "sample": tmp / "sample.json",
             "gold": tmp / "gold.jsonl", "tmp": tmp}
    write_traces(paths["silver"], [trace(f"q{i:03d}", j) for i, j in enumerate(judge)])
    write_traces(paths["all_gold"], [trace(f"q{i:03d}", t) for i, t in enumerate(true)])
    done = ragstage("sample", paths["silver"], "--n", 150, "--seed", 7, "--out", paths["sample"])
    assert done.returncode == 0, done.stderr
    drawn = set(json.loads(paths["sample"].read_text())["query_ids"])
    write_traces(paths["gold"], [t for t in read_traces(paths["all_gold"]) if t.query_id in drawn])
    return paths


def test_the_sample_file_records_the_draw(run):
    sample = json.loads(run["sample"].read_text())
    assert sample["seed"] == 7 and sample["n"] == 150 == len(set(sample["query_ids"]))
    assert sample["population"] == 800 and sample["pipeline"] == "default" and not sample["by_bucket"]
    assert sample["ids_digest"].startswith("sha256:")
    # the same seed draws the same requests from the same traces in another order
    shuffled = run["tmp"] / "shuffled.jsonl"
    write_traces(shuffled, list(read_traces(run["silver"]))[::-1])
    again = run["tmp"] / "again.json"
    assert ragstage("sample", shuffled, "--n", 150, "--seed", 7, "--out", again).returncode == 0
    assert json.loads(again.read_text())["query_ids"] == sample["query_ids"]
    other = run["tmp"] / "other.json"
    assert ragstage("sample", shuffled, "--n", 150, "--seed", 8, "--out", other).returncode == 0
    assert json.loads(other.read_text())["query_ids"] != sample["query_ids"]


def test_the_estimate_per_bucket_is_ppi_py_s(run):
    ppi_py = pytest.importorskip("ppi_py")
    done = ragstage("attribute", run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"],
                    "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = {r["stage"]: r for r in json.loads(done.stdout)}
    assert set(rows) == set(NAMES)
    silver = {t.query_id: t.gold[0] for t in read_traces(run["silver"])}
    gold = {t.query_id: t.gold[0] for t in read_traces(run["gold"])}
    drawn = json.loads(run["sample"].read_text())["query_ids"]
    rest = [q for q in silver if q not in set(drawn)]
    for stage, row in rows.items():
        g = GOLD_ID[stage]
        y = np.array([gold[q] == g for q in drawn], float)
        h = np.array([silver[q] == g for q in drawn], float)
        u = np.array([silver[q] == g for q in rest], float)
        point, low, high = ppi_reference(ppi_py, y, h, u)
        assert abs(row["estimate"] - point) <= 1e-9 and abs(row["low"] - low) <= 1e-9
        assert abs(row["high"] - high) <= 1e-9
        assert row["n"] == 800 and row["gold_n"] == 150 and row["gold_k"] == int(y.sum())
        assert row["judge_k"] == int(h.sum() + u.sum())
        assert (row["gold_low"], row["gold_high"]) == pytest.approx(wilson(int(y.sum()), 150))
        assert row["method"] == "ppi++"
    assert "Cohen's kappa" in done.stderr


def test_the_table_shows_three_columns_and_flags_small_counts(run):
    done = ragstage("attribute", run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"])
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    for column in ("judge rate", "gold-only Wilson", "estimate", "95% interval"):
        assert column in head
    rows = json.loads(ragstage("attribute", run["silver"], "--gold-sample", run["gold"], "--sample", run["sample"],
                               "--format", "json").stdout)
    flagged = [r["stage"] for r in rows if r["warning"]]
    assert flagged and all(150 * min(r["estimate"], 1 - r["estimate"]) < 20 for r in rows if r["warning"])
    for stage in flagged:
        assert f"! {stage}: expected count" in done.stdout
    assert "Cohen's kappa" in done.stdout and "biased" in done.stdout


def refused(*args):
    done = ragstage(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    return done.stderr


def test_gold_rows_that_were_not_drawn_are_refused(run):
    drawn = set(json.loads(run["sample"].read_text())["query_ids"])
    picked = run["tmp"] / "picked.jsonl"
    rows = list(read_traces(run["gold"]))
    outsider = next(t for t in read_traces(run["all_gold"]) if t.query_id not in drawn)
    write_traces(picked, [*rows[1:], outsider])
    err = refused("attribute", run["silver"], "--gold-sample", picked, "--sample", run["sample"])
    assert "1 row(s) that were not drawn" in err and repr(outsider.query_id) in err
    write_traces(picked, rows[1:])
    err = refused("attribute", run["silver"], "--gold-sample", picked, "--sample", run["sample"])
    assert "1 drawn request(s) have no row" in err and repr(rows[0].query_id) in err
    write_traces(picked, [trace(rows[0].query_id, "none", gold=[]), *rows[1:]])
    err = refused("attribute", run["silver"], "--gold-sample", picked, "--sample", run["sample"])
    assert "no gold label" in err and repr(rows[0].query_id) in err
    write_traces(picked, [trace(rows[0].query_id, "none", pipeline="other"), *rows[1:]])
    assert "pipeline 'other'" in refused("attribute", run["silver"], "--gold-sample", picked, "--sample", run["sample"])


def test_a_sample_drawn_from_other_traces_is_refused(run):
    fewer = run["tmp"] / "fewer.jsonl"
    write_traces(fewer, list(read_traces(run["silver"]))[:-1])
    err = refused("attribute", fewer, "--gold-sample", run["gold"], "--sample", run["sample"])
    assert "drawn from other traces" in err and "800 requests" in err and "799 now" in err
    renamed = run["tmp"] / "renamed.jsonl"
    write_traces(renamed, [trace(t.query_id, "none", pipeline="v2") for t in read_traces(run["silver"])])
    assert "pipeline 'default'" in refused("attribute", renamed, "--gold-sample", run["gold"], "--sample",
                                           run["sample"])


def test_a_bad_sample_file_names_the_field(run):
    bad = run["tmp"] / "bad.json"
    data = json.loads(run["sample"].read_text())
    bad.write_text(json.dumps({**data, "n": "150"}))
    err = refused("attribute", run["silver"], "--gold-sample", run["gold"], "--sample", bad)
    assert str(bad) in err and "field 'n'" in err
    bad.write_text(json.dumps({k: v for k, v in data.items() if k != "query_ids"}))
    assert "field 'query_ids': missing" in refused("attribute", run["silver"], "--gold-sample", run["gold"],
                                                   "--sample", bad)
    assert "go together" in refused("attribute", run["silver"], "--gold-sample", run["gold"])
    assert "--by does not combine" in refused("attribute", run["silver"], "--gold-sample", run["gold"], "--sample",
                                              run["sample"], "--by", "model")


def test_a_failed_draw_leaves_the_old_sample_file(run):
    keep = run["tmp"] / "keep.json"
    keep.write_text("old")
    assert "exceeds the 800 requests" in refused("sample", run["silver"], "--n", 801, "--seed", 1, "--out", keep)
    assert keep.read_text() == "old"
    assert "must not be the input" in refused("sample", run["silver"], "--n", 5, "--seed", 1, "--out", run["silver"])
    two = run["tmp"] / "two.jsonl"
    write_traces(two, [trace("a", "none"), trace("b", "none", pipeline="v2"), trace("c", "none")])
    assert "2 pipelines" in refused("sample", two, "--n", 2, "--seed", 1, "--out", keep)


def test_a_stratified_sample_records_weights_and_gives_the_stratified_estimate(run):
    strat = run["tmp"] / "strat.json"
    done = ragstage("sample", run["silver"], "--n", 60, "--seed", 3, "--by-bucket", "--out", strat)
    assert done.returncode == 0, done.stderr
    sample = json.loads(strat.read_text())
    strata = sample["strata"]
    silver = {t.query_id: t.gold[0] for t in read_traces(run["silver"])}
    assert sum(s["drawn"] for s in strata.values()) == 60 == len(sample["query_ids"])
    assert sum(s["weight"] for s in strata.values()) == pytest.approx(1)
    for stage, s in strata.items():
        assert s["population"] == sum(v == GOLD_ID[stage] for v in silver.values()) and s["drawn"] >= 2
        assert sum(silver[q] == GOLD_ID[stage] for q in sample["query_ids"]) == s["drawn"]
    gold_path = run["tmp"] / "strat_gold.jsonl"
    write_traces(gold_path, [t for t in read_traces(run["all_gold"]) if t.query_id in set(sample["query_ids"])])
    done = ragstage("attribute", run["silver"], "--gold-sample", gold_path, "--sample", strat, "--format", "json")
    assert done.returncode == 0, done.stderr
    gold = {t.query_id: t.gold[0] for t in read_traces(gold_path)}
    for row in json.loads(done.stdout):
        g = GOLD_ID[row["stage"]]
        by_hand = stratified_mean([(s["population"], [gold[q] == g for q in sample["query_ids"]
                                                      if silver[q] == GOLD_ID[name]])
                                   for name, s in strata.items()])
        assert row["estimate"] == pytest.approx(by_hand.estimate, abs=1e-12)
        assert row["high"] == pytest.approx(min(by_hand.high, 1.0), abs=1e-12)
        assert row["method"] == "stratified" and row["gold_low"] is None and row["lam"] is None
    # silver buckets that changed since the draw break the strata: refused
    changed = run["tmp"] / "changed.jsonl"
    rows = list(read_traces(run["silver"]))
    write_traces(changed, [trace(rows[0].query_id, "retrieval" if rows[0].gold != ["z"] else "none"), *rows[1:]])
    assert "silver buckets changed" in refused("attribute", changed, "--gold-sample", gold_path, "--sample", strat)


def test_the_docs_example_is_what_the_commands_print(tmp_path):
    """The synthetic example of docs/gold-for-a-few.md, rebuilt and re-run."""

    rng = np.random.default_rng(1)
    true = rng.choice(NAMES, size=1000, p=[0.5, 0.15, 0.1, 0.1, 0.15])
    judge = [t if rng.random() < 0.8 else rng.choice(NAMES) for t in true]
    silver, sample, gold = tmp_path / "silver.jsonl", tmp_path / "sample.json", tmp_path / "gold.jsonl"
    write_traces(silver, [trace(f"q{i:04d}", j) for i, j in enumerate(judge)])
    assert ragstage("sample", silver, "--n", 150, "--seed", 7, "--out", sample).returncode == 0
    drawn = set(json.loads(sample.read_text())["query_ids"])
    write_traces(gold, [trace(f"q{i:04d}", t) for i, t in enumerate(true) if f"q{i:04d}" in drawn])
    done = ragstage("attribute", silver, "--gold-sample", gold, "--sample", sample)
    docs = (REPO / "docs" / "gold-for-a-few.md").read_text(encoding="utf-8")
    assert f"```text\n{done.stdout}```" in docs
    shares = {name: float(np.mean(true == name)) for name in NAMES}
    assert shares == pytest.approx({"retrieval": 0.154, "reranking": 0.116, "prompt_assembly": 0.080,
                                    "generation": 0.143, "none": 0.507})
