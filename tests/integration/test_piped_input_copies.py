"""Input read from a pipe (``-``, ``/dev/stdin``) is copied once into ``$TMPDIR/ragstage-input-<pid>-*``:
removed when the command ends, however it ends; after a ``SIGKILL``, removed by the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from ragstage.trace import read_traces


def spans(n: int) -> bytes:
    lines = []
    for r in range(n):
        span = {"traceId": f"{r + 1:032x}", "spanId": f"{r + 1:016x}", "name": "retrieve",
                "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                               {"key": "input.value", "value": {"stringValue": f"question {r}"}}]}
        lines.append(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + b"\n")
    return b"".join(lines)


@pytest.fixture
def tmpdir_env(tmp_path):
    root = tmp_path / "tmp"
    root.mkdir()
    return root, {**os.environ, "TMPDIR": str(root)}


def copies(root):
    return sorted(p.name for p in root.iterdir() if p.name.startswith("ragstage-input-"))


def ingest(tmp_path, env, source: str, data: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", source, "--out",
                           str(tmp_path / "out.jsonl")], input=data, capture_output=True, env=env)


@pytest.mark.parametrize("source", ["-", "/dev/stdin"])
def test_a_piped_ingest_leaves_no_copy(tmp_path, tmpdir_env, source):
    root, env = tmpdir_env
    done = ingest(tmp_path, env, source, spans(5))
    assert done.returncode == 0, done.stderr
    assert len(list(read_traces(tmp_path / "out.jsonl"))) == 5
    assert copies(root) == []
    bad = ingest(tmp_path, env, source, b"{not json\n")
    assert bad.returncode == 2 and copies(root) == []


def test_a_killed_ingest_s_copy_is_removed_by_the_next_run_and_a_running_one_s_kept(tmp_path, tmpdir_env):
    root, env = tmpdir_env
    proc = subprocess.Popen([sys.executable, "-m", "ragstage.cli", "ingest", "spans", "-", "--out",
                             str(tmp_path / "killed.jsonl")], stdin=subprocess.PIPE, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(spans(3))  # the pipe stays open: the command waits, copying
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not copies(root) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert copies(root) and copies(root)[0].startswith(f"ragstage-input-{proc.pid}-")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
        proc.wait()
    left = copies(root)
    assert len(left) == 1  # killed: nothing could remove it
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        running = root / f"ragstage-input-{sleeper.pid}-running.jsonl"
        running.write_bytes(b"a live run's copy\n")
        done = ingest(tmp_path, env, "-", spans(2))
        assert done.returncode == 0, done.stderr
        assert copies(root) == [running.name]
    finally:
        sleeper.kill()
        sleeper.wait()
