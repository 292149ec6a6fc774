"""Silver traces labelled by a judge, a drawn gold sample and its gold traces, for the report's tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from ragstage import Trace, write_traces

#: The gold id that puts a trace of the shape below in each bucket.
GOLD_ID = {"none": "a", "generation": "b", "prompt_assembly": "c", "reranking": "d", "retrieval": "z"}
JUDGE = {"by": "judge", "judge": "relevance", "model": "stand-in", "prompt": "p1", "prompt_sha256": "0" * 64}


def trace(query_id: str, bucket: str, meta: dict | None = None) -> Trace:
    return Trace(query_id=query_id, gold=[GOLD_ID[bucket]], retrieved=["a", "b", "c", "d"], reranked=["a", "b", "c"],
                 prompt=["a", "b"], answer_ids=["a"], meta=meta or {})


def ppi_reference(ppi_py, y, yhat, unlabelled) -> tuple[float, float, float]:
    """ppi_py's PPI++ point estimate and 95% interval (lam tuned), the interval clipped to [0, 1] as
    `ragstage attribute --gold-sample` prints it."""
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled)))
    low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.05))
    return point, max(low, 0.0), min(high, 1.0)


def ragstage(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True)


def write_gold_run(folder: Path, n: int = 300, drawn: int = 60) -> dict[str, Path]:
    """``n`` requests labelled by a judge right 80% of the time (silver), a uniform sample of ``drawn``
    (``ragstage sample``, seed 7) and the gold traces of the drawn requests."""
    rng = np.random.default_rng(5)
    names = list(GOLD_ID)
    true = rng.choice(names, size=n, p=[0.5, 0.15, 0.1, 0.1, 0.15])
    judged = [t if rng.random() < 0.8 else rng.choice(names) for t in true]
    paths = {"silver": folder / "silver.jsonl", "gold": folder / "gold.jsonl", "sample": folder / "sample.json",
             "tmp": folder}
    write_traces(paths["silver"], [trace(f"q{i:03d}", j, {"labels": JUDGE}) for i, j in enumerate(judged)])
    done = ragstage("sample", paths["silver"], "--n", drawn, "--seed", 7, "--out", paths["sample"])
    assert done.returncode == 0, done.stderr
    ids = set(json.loads(paths["sample"].read_text())["query_ids"])
    write_traces(paths["gold"], [trace(f"q{i:03d}", t) for i, t in enumerate(true) if f"q{i:03d}" in ids])
    return paths
