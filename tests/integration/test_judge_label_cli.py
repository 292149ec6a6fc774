"""``ragstage judge label`` in a subprocess, on a tiny real causal LM (random weights: its replies
are noise, the plumbing is not): labels for every question with the model named, one verdict per
distinct pair, a second run served from the cache, and a candidate without text refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pipeline_helpers import tiny_models

from ragstage.fixtures import fixture_path
from ragstage.formats import read_any
from ragstage.ingest.gold import read_labels
from ragstage.judge.silver import candidates, read_judgements

RUNS = [fixture_path("mini_run") / "bm25" / "traces.jsonl", fixture_path("mini_run") / "minilm" / "traces.jsonl"]
CORPUS = fixture_path("mini_scifact") / "corpus.jsonl"


def ragstage(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_judge_label_writes_silver_labels_and_reuses_its_cache(tmp_path: Path) -> None:
    model = tiny_models().generator
    args = ["judge", "label", *RUNS, "--corpus", CORPUS, "--model", model, "--device", "cpu", "--depth", "2",
            "--cache-dir", tmp_path / "cache", "--out", "silver.jsonl", "--pairs", "pairs.jsonl"]
    done = ragstage(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    traces = [t for path in RUNS for t in read_any(path)]
    pairs = {(t.query_id, d) for t in traces for d in candidates(t, 2)}
    verdicts = read_judgements(tmp_path / "pairs.jsonl")
    assert {(v.query_id, v.doc_id) for v in verdicts} == pairs and len(verdicts) == len(pairs)
    labels = read_labels(tmp_path / "silver.jsonl")
    assert sorted(label.query_id for label in labels) == sorted({t.query_id for t in traces})
    assert {label.judge.model for label in labels} == {str(model)}
    for label in labels:
        assert list(label.gold) == [v.doc_id for v in verdicts if v.query_id == label.query_id and v.relevant]
    unreadable = sum(v.relevant is None for v in verdicts)
    assert f"judged {len(pairs)} (question, passage) pairs" in done.stderr and f"{unreadable} unreadable" in done.stderr
    again = ragstage(*args, cwd=tmp_path)
    assert again.returncode == 0 and f"(0 generated, {len(pairs)} from the cache" in again.stderr
    assert json.loads((tmp_path / "silver.jsonl").read_text().splitlines()[0])["judge"]["prompt"] == \
        "relevance-judge/1"


def test_a_candidate_without_text_exits_2_before_any_model_loads(tmp_path: Path) -> None:
    corpus = tmp_path / "part.jsonl"
    corpus.write_text("".join(line + "\n" for line in CORPUS.read_text().splitlines()[:3]))
    done = ragstage("judge", "label", RUNS[0], "--corpus", corpus, "--model", tmp_path / "no-such-model",
                    "--out", "silver.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "have no text in the passages given" in done.stderr
    assert not (tmp_path / "silver.jsonl").exists()
