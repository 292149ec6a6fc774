"""The resumable run cache keeps every intact line, reports torn ones, and takes concurrent writers."""

from __future__ import annotations

import multiprocessing

import orjson
import pytest

from ragstage.pipeline.store import JsonlStore, TornLinesWarning


def _line(key: str, value: object) -> bytes:
    return orjson.dumps({"key": key, "value": value}) + b"\n"


def test_a_torn_line_in_the_middle_keeps_every_intact_line(tmp_path):
    """Two processes sharing a cache, one killed mid-write: before, 2 of 9 entries survived."""
    path = tmp_path / "cache.jsonl"
    lines = [_line(f"k{i}", i) for i in range(9)]
    path.write_bytes(b"".join(lines[:2]) + b'{"key": "k-torn", "val' + b"".join(lines[2:]))
    with pytest.warns(TornLinesWarning, match="1 torn line"):
        store = JsonlStore(path)
    assert len(store) == 8 and store.torn_lines == 1  # k2 was glued onto the fragment: the only one lost
    assert {f"k{i}" for i in (0, 1, *range(3, 9))} <= set(dict(store.items()))
    assert path.read_bytes().startswith(b"".join(lines[:2]))  # opening never truncates
    store.put("k2", 2)
    again = JsonlStore(path)
    assert len(again) == 9 and again["k2"] == 2


def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path):
    path = tmp_path / "cache.jsonl"
    path.write_bytes(_line("a", 1) + b'{"key": "b", "va')
    with pytest.warns(TornLinesWarning):
        store = JsonlStore(path)
    assert store.torn_lines == 1 and len(store) == 1
    store.put("c", 3)
    assert path.read_bytes() == _line("a", 1) + _line("c", 3)
    assert JsonlStore(path).torn_lines == 0


def test_later_line_wins_and_blank_lines_are_not_torn(tmp_path):
    path = tmp_path / "cache.jsonl"
    path.write_bytes(_line("a", 1) + b"\n" + _line("a", 2))
    store = JsonlStore(path)
    assert store["a"] == 2 and store.torn_lines == 0 and len(store) == 1


def _writer(path: str, worker: int, n: int) -> None:
    store = JsonlStore(path)
    for i in range(n):
        store.put(f"{worker}-{i}", "x" * (20_000 + worker * 977 + i))  # far beyond PIPE_BUF


def test_concurrent_processes_append_whole_lines(tmp_path):
    path = tmp_path / "cache.jsonl"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_writer, args=(str(path), k, 40)) for k in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
        assert p.exitcode == 0
    store = JsonlStore(path)
    assert store.torn_lines == 0 and len(store) == 160
    assert all(store[f"{k}-{i}"] == "x" * (20_000 + k * 977 + i) for k in range(4) for i in range(40))
