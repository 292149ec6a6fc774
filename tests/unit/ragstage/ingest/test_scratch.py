"""Scratch folders of an ingest read in parts: named with their owner's process id, and those of a
killed ingest (owner dead) removed by the next one, never those whose owner still runs."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile

import orjson
import pytest

from ragstage.ingest import flow, ingest_spans_to, scratch
from ragstage.trace import read_traces


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


@pytest.fixture
def live_pid():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def temp_root(tmp_path, monkeypatch):
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _left(root, pid: int, name: str = "abc"):
    folder = root / f"{scratch.PREFIX}{pid}-{name}"
    folder.mkdir()
    (folder / "1.jsonl").write_bytes(b"a part\n")
    return folder


def test_only_folders_of_dead_owners_are_removed(temp_root, live_pid):
    stale, live, mine = _left(temp_root, _dead_pid()), _left(temp_root, live_pid), _left(temp_root, os.getpid())
    unnamed = temp_root / f"{scratch.PREFIX}x1y2z3"  # no owner in the name: nothing tells it is stale
    unnamed.mkdir()
    a_file = temp_root / f"{scratch.PREFIX}{_dead_pid()}-file"
    a_file.write_text("not a folder")
    assert scratch.remove_stale() == [stale]
    assert not stale.exists() and live.is_dir() and mine.is_dir() and unnamed.is_dir() and a_file.is_file()


def _spans(path, n):
    with open(path, "wb") as handle:
        for r in range(n):
            span = {"traceId": f"{r + 1:032x}", "spanId": f"{r + 1:016x}", "name": "retrieve",
                    "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                                   {"key": "input.value", "value": {"stringValue": f"question {r}"}}]}
            handle.write(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + b"\n")


def test_an_ingest_in_parts_names_its_folder_and_removes_a_killed_ones(tmp_path, temp_root, live_pid, monkeypatch):
    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    used = []
    original = flow.scratch_folder

    def recording():
        with original() as folder:
            used.append(folder)
            yield folder

    monkeypatch.setattr(flow, "scratch_folder", contextlib.contextmanager(recording))
    stale, live = _left(temp_root, _dead_pid()), _left(temp_root, live_pid)
    path = tmp_path / "spans.jsonl"
    _spans(path, 6)
    ingest_spans_to(tmp_path / "out.jsonl", str(path), workers=2)
    assert len(list(read_traces(tmp_path / "out.jsonl"))) == 6
    assert [folder.name.split("-")[2] for folder in used] == [str(os.getpid())]
    assert not stale.exists() and live.is_dir() and not used[0].exists()
