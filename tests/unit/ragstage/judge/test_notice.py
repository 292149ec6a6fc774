"""Who labelled the traces, said without changing what the command reads (ragstage.judge.notice)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from repo_paths import REPO

from ragstage import read_traces, write_traces
from ragstage.judge.notice import judge_of, silver_in_files, silver_note, silver_summary
from ragstage.trace_files import convert

FOUR = REPO / "fixtures" / "incidents" / "four_logs.jsonl"
JUDGE = {"by": "judge", "judge": "relevance", "model": "stand-in", "prompt": "p1", "prompt_sha256": "0" * 64}


def _silver(path: Path, judged: int) -> Path:
    traces = list(read_traces(FOUR))
    out = [t.replace(meta={**(t.meta or {}), "labels": JUDGE}) if i < judged else t for i, t in enumerate(traces)]
    write_traces(path, out)
    return path


def test_judge_of_names_the_judge_its_model_and_prompt_and_nothing_for_people():
    assert judge_of({"labels": JUDGE}) == "relevance, model stand-in, prompt p1"
    for meta in (None, {}, {"labels": {"by": "people"}}, {"labels": "judge"}):
        assert judge_of(meta) is None


def test_the_scan_counts_judged_traces_in_json_lines_and_parquet(tmp_path):
    path = _silver(tmp_path / "s.jsonl", 3)
    assert silver_in_files([path]) == ({"relevance, model stand-in, prompt p1": 3}, 4)
    convert(path, tmp_path / "s.parquet")
    assert silver_in_files([tmp_path / "s.parquet"]) == ({"relevance, model stand-in, prompt p1": 3}, 4)
    assert silver_summary(read_traces(path)) == {"relevance, model stand-in, prompt p1": 3}
    assert "3 of 4 traces" in silver_note(*silver_in_files([path]))


def test_a_file_without_a_judge_is_passed_over_and_says_nothing(tmp_path):
    counts, _ = silver_in_files([FOUR, tmp_path / "absent.jsonl"])
    assert counts == {} and silver_note(counts, 4) is None


def test_a_files_first_trace_decides_whether_it_is_counted(tmp_path):
    """A file is labelled one way (judge apply writes a whole run): a first trace of people's costs one line."""
    traces = list(read_traces(_silver(tmp_path / "s.jsonl", 4)))
    write_traces(tmp_path / "late.jsonl", [traces[0].replace(meta={}), *traces[1:]])
    assert silver_in_files([tmp_path / "late.jsonl"]) == ({}, 1)
    convert(tmp_path / "late.jsonl", tmp_path / "late.parquet")
    assert silver_in_files([tmp_path / "late.parquet"])[0] == {}


def test_a_pipe_is_never_read_by_the_scan(tmp_path):
    """The scan of a pipe would consume it: `attribute <(cat traces)` then printed an empty table, exit 0."""
    fifo = tmp_path / "traces.fifo"
    os.mkfifo(fifo)
    silver = _silver(tmp_path / "s.jsonl", 4).read_bytes()

    def feed():
        with open(fifo, "wb") as out:
            out.write(silver)

    writer = threading.Thread(target=feed)
    writer.start()
    done = subprocess.run([sys.executable, "-m", "ragstage.cli", "attribute", str(fifo), "--by", "none"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    writer.join(timeout=10)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 4 and all(" 4 " in row for row in rows)  # every trace counted, n = 4


def test_an_endless_line_is_left_to_the_reader(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"judge": ' + b" " * (65 << 20))
    assert silver_in_files([path]) == ({}, 0)
