"""Receipts name no one's home folder: cache paths are written relative to the cache root."""

from __future__ import annotations

import json

from repo_paths import REPO

from ragstage.pipeline.receipt import CACHE, local_path, portable


def test_cache_and_home_paths_become_portable(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "home" / ".cache" / "ragstage"
    monkeypatch.setenv("RAGSTAGE_CACHE", str(root))
    receipt = {"cache_dir": str(root / "stages"),
               "generator": {"model": {"source": str(root / "models"), "name": "m"}},
               "retriever": {"model": {"source": str(tmp_path / "home" / "models" / "mine")}},
               "data": {"source": "/srv/data/scifact", "corpus_hash": str(root)},
               "reranker": {"model": {"source": "cross-encoder/ms-marco-MiniLM-L-6-v2"}}}
    out = portable(receipt)
    assert out["cache_dir"] == f"{CACHE}/stages" and out["generator"]["model"]["source"] == f"{CACHE}/models"
    assert out["retriever"]["model"]["source"] == "~/models/mine"
    assert out["data"]["source"] == "/srv/data/scifact"  # neither cache nor home: kept
    assert out["data"]["corpus_hash"] == str(root)  # only path entries are rewritten
    assert out["reranker"] == receipt["reranker"]  # a hub id is not a path
    assert local_path(out["cache_dir"]) == str(root / "stages")
    assert local_path(out["retriever"]["model"]["source"]) == str(tmp_path / "home" / "models" / "mine")
    assert local_path("cross-encoder/x") == "cross-encoder/x"
    assert local_path(f"{CACHE}/stages", tmp_path / "elsewhere") == str(tmp_path / "elsewhere" / "stages")


def test_committed_receipts_hold_no_home_folder_path():
    receipts = sorted((REPO / "fixtures").rglob("receipt*.json"))
    assert receipts
    for path in receipts:
        text = path.read_text()
        assert "/root/" not in text and "/home/" not in text, path
        receipt = json.loads(text)
        assert receipt["cache_dir"] == f"{CACHE}/stages"
