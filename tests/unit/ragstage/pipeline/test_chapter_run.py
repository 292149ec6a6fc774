"""Chapter 5's run folder and run check (``ragstage.pipeline.chapter_run``), on the committed mini run.

No model runs here: the committed copy of chapter 5's offline run (``fixtures/mini_run``) is
copied to where the chapter's own run would be, then checked, damaged and checked again.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from ragstage.fixtures import fixture_path, fixtures_dir
from ragstage.pipeline import load_beir
from ragstage.pipeline.chapter_run import run_folder, verify_run

SETTINGS = dict(LIMIT=None, OFFLINE_MODELS=True, RETRIEVERS=["bm25", "dense"], RERANK=[False, True], BUDGET=1024,
                REVISED_ON=("dense", True))


@pytest.fixture(scope="module")
def data():
    return load_beir(fixture_path("mini_scifact"))


@pytest.fixture
def own_run(tmp_path) -> Path:
    """The committed mini run where the chapter's own offline run goes: ``runs/mini``."""
    folder = tmp_path / "runs" / "mini"
    shutil.copytree(fixtures_dir() / "mini_run", folder)
    return folder


def test_the_chapters_own_settings_write_to_runs_data():
    assert run_folder("mini", in_colab=False, **SETTINGS) == Path("runs/mini")
    assert run_folder("scifact", in_colab=True, **{**SETTINGS, "OFFLINE_MODELS": False}) == Path("runs/scifact")


def test_a_changed_setting_gets_a_folder_named_after_it():
    assert run_folder("mini", in_colab=False, **{**SETTINGS, "BUDGET": 2048}) == Path("runs/mini-budget-2048")
    assert run_folder("scifact", in_colab=True, **{**SETTINGS, "OFFLINE_MODELS": False, "LIMIT": 50}) == Path(
        "runs/scifact-limit-50")
    # the stand-ins in Colab are a change of their own
    assert run_folder("mini", in_colab=True, **SETTINGS) == Path("runs/mini-offline_models-true")
    one = {**SETTINGS, "RETRIEVERS": ["bm25"], "RERANK": [False]}
    assert run_folder("mini", in_colab=False, **one) == Path("runs/mini-retrievers-bm25-rerank-false")


def test_a_list_and_a_tuple_are_the_same_setting():
    assert run_folder("mini", in_colab=False, **{**SETTINGS, "RETRIEVERS": ("bm25", "dense")}) == Path("runs/mini")


def test_a_missing_or_misspelt_setting_is_an_error():
    with pytest.raises(ValueError, match="BUGDET"):
        run_folder("mini", in_colab=False, **{**{k: v for k, v in SETTINGS.items() if k != "BUDGET"}, "BUGDET": 1})


def test_the_chapters_own_run_matches_the_committed_copy(own_run, data):
    text = verify_run(own_run, data)
    assert "5 runs, 13 traces each; invariants hold; receipts match the data" in text
    assert "no difference from the committed copy" in text


def test_a_changed_answer_fails_the_comparison(own_run, data):
    traces = own_run / "bm25" / "traces.jsonl"
    lines = traces.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["answer"] = "ID: 9999"
    lines[0] = json.dumps(record)
    traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="bm25"):
        verify_run(own_run, data)


def test_a_run_under_another_name_is_not_compared(tmp_path, data):
    folder = tmp_path / "runs" / "mini-budget-2048"
    shutil.copytree(fixtures_dir() / "mini_run", folder)
    assert "a run of your own" in verify_run(folder, data)


def test_receipts_must_name_the_data_read(own_run, data):
    edited = dataclasses.replace(data, corpus={**data.corpus, "9999": {"title": "new", "text": "an added abstract"}})
    with pytest.raises(AssertionError, match="corpus hash"):
        verify_run(own_run, edited)
    archived = dataclasses.replace(data, meta={**data.meta, "md5": "0" * 32})
    with pytest.raises(AssertionError, match="md5"):
        verify_run(own_run, archived)


def test_a_run_missing_claims_fails_the_invariants(own_run, data):
    with pytest.raises(AssertionError):
        verify_run(own_run, data.limit(5))


def test_refresh_replaces_the_committed_copy(own_run, data, tmp_path):
    committed = tmp_path / "committed"
    text = verify_run(own_run, data, committed=committed, refresh=True)
    assert "no difference" in text
    names = sorted(p.name for p in (fixtures_dir() / "mini_run").iterdir())
    assert sorted(p.name for p in committed.iterdir()) == names
