"""Two runs of the same questions labelled by a judge with set error rates, and people's gold for a sample.

Each question is right or wrong before and after a change (the true outcome, drawn with set
shares fixed and broken); a judge calls each run's answer right or wrong, erring with a set
probability. ``shared`` errors: an answer that did not change gets the same call in both runs,
as a judge reading the same answer twice would; ``lenient_after``: the share of the after run's
wrong answers the judge calls right (a judge that likes the new run's answers). A trace is right
when its gold id ``a`` is among the passages the answer used, wrong (a retrieval loss) when its
gold is ``z``, which no stage holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragstage import Trace, write_traces
from ragstage.attribution import diagnose
from ragstage.ppi.sample import Request, Sample, draw

JUDGE = {"by": "judge", "judge": "stand-in", "model": "labelled-stand-in", "prompt": "evidence-v1",
         "prompt_sha256": "0" * 64}
PIPELINES = {"before": "base", "after": "fix"}


def trace(query_id: str, right: bool, pipeline: str, judge: dict | None = None) -> Trace:
    return Trace(query_id=query_id, pipeline=pipeline, gold=["a" if right else "z"], retrieved=["a", "b", "c", "d"],
                 reranked=["a", "b", "c"], prompt=["a", "b"], answer_ids=["a"],
                 meta={} if judge is None else {"labels": judge})


def requests(traces: list[Trace]) -> list[Request]:
    return [Request(t.query_id, t.pipeline, diagnose(t).stage.value) for t in traces]


@dataclass
class Judged:
    """True outcomes and the judge's calls per question, the traces built from them, and (once written) the files."""

    ids: list[str]
    truth: dict[str, np.ndarray]
    judge: dict[str, np.ndarray]
    silver: dict[str, list[Trace]]
    samples: dict[str, Sample]
    gold: dict[str, list[Trace]]
    paths: dict[str, Path] = field(default_factory=dict)

    @property
    def drawn(self) -> tuple[str, ...]:
        return self.samples["before"].query_ids


def judged(*, questions: int = 600, fixed: float = 0.10, broken: float = 0.05, accuracy: float = 0.85,
           lenient_after: float = 0.0, n: int = 200, seed: int = 3, judge: dict = JUDGE) -> Judged:
    """Both runs in memory, each with its uniform sample of ``n`` (seed 7: the same questions in both)."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:04d}" for i in range(questions)]
    before = rng.random(questions) < 0.6
    flip = rng.random(questions)
    after = np.where(before, flip >= broken / 0.6, flip < fixed / 0.4)
    judge_before = before ^ (rng.random(questions) >= accuracy)
    judge_after = np.where(after == before, judge_before, after ^ (rng.random(questions) >= accuracy))
    judge_after = np.where(~after & (rng.random(questions) < lenient_after), True, judge_after)
    truth, calls = {"before": before, "after": after}, {"before": judge_before, "after": judge_after}
    silver = {side: [trace(q, r, PIPELINES[side], judge) for q, r in zip(ids, calls[side])] for side in truth}
    samples = {side: draw(requests(silver[side]), n, 7) for side in truth}
    drawn = set(samples["before"].query_ids)
    gold = {side: [trace(q, r, PIPELINES[side]) for q, r in zip(ids, truth[side]) if q in drawn] for side in truth}
    return Judged(ids, truth, calls, silver, samples, gold)


def ragstage(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True)


def write_runs(tmp: Path, runs: Judged) -> Judged:
    """Write ``before.jsonl``, ``after.jsonl`` and each run's gold traces, and draw each run's sample with
    ``ragstage sample`` (seed 7), as a user does; the command's draw must be the one made in memory."""
    for side in ("before", "after"):
        runs.paths[side] = tmp / f"{side}.jsonl"
        runs.paths[f"gold_{side}"] = tmp / f"gold_{side}.jsonl"
        runs.paths[f"sample_{side}"] = tmp / f"sample_{side}.json"
        write_traces(runs.paths[side], runs.silver[side])
        write_traces(runs.paths[f"gold_{side}"], runs.gold[side])
        done = ragstage("sample", runs.paths[side], "--n", runs.samples[side].n, "--seed", 7,
                        "--out", runs.paths[f"sample_{side}"])
        assert done.returncode == 0, done.stderr
        assert json.loads(runs.paths[f"sample_{side}"].read_text())["query_ids"] == list(runs.samples[side].query_ids)
    return runs


def gold_options(runs: Judged) -> list[str]:
    p = runs.paths
    return ["--gold-sample-before", str(p["gold_before"]), "--sample-before", str(p["sample_before"]),
            "--gold-sample-after", str(p["gold_after"]), "--sample-after", str(p["sample_after"])]
