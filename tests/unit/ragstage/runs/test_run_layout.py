"""The run-folder layout: file names, whole-file writes, discovery, copying."""

import json

import pytest

from ragstage import Trace, TraceError
from ragstage.runs.layout import (
    RunFiles,
    copy_runs,
    find_runs,
    folder_for,
    is_run_file,
    settings_folder,
    trace_files,
)
from ragstage.trace import read_traces


def _run(folder, suffix=""):
    files = RunFiles(folder, suffix)
    files.write([Trace(query_id="q1", pipeline="bm25", gold=["a"])], {"pipeline": "bm25", "n": 1})
    return files


def test_names_of_a_run_and_of_a_re_run(tmp_path):
    own, rerun = RunFiles(tmp_path), RunFiles(tmp_path, "revised")
    assert (own.traces.name, own.receipt.name, own.prompts.name) == ("traces.jsonl", "receipt.json", "prompts.jsonl")
    assert (rerun.traces.name, rerun.receipt.name) == ("traces-revised.jsonl", "receipt-revised.json")
    assert rerun.prompts == own.prompts  # a re-run uses the prompts its run saved
    assert RunFiles.from_receipt(rerun.receipt) == rerun and RunFiles.from_receipt(own.receipt) == own


def test_write_then_read(tmp_path):
    files = _run(tmp_path / "bm25")
    assert [t.query_id for t in read_traces(files.traces)] == ["q1"]
    assert files.read_receipt() == {"pipeline": "bm25", "n": 1}
    files.write_prompts([{"query_id": "q1", "context": "[ID a] ..."}, {"query_id": 2, "context": ""}])
    assert files.read_prompts() == {"q1": {"query_id": "q1", "context": "[ID a] ..."},
                                    "2": {"query_id": 2, "context": ""}}
    assert sorted(p.name for p in files.folder.iterdir()) == ["prompts.jsonl", "receipt.json", "traces.jsonl"]


def test_unreadable_files_are_named(tmp_path):
    files = RunFiles(tmp_path)
    with pytest.raises(FileNotFoundError, match="no run receipt at .*receipt.json"):
        files.read_receipt()
    with pytest.raises(FileNotFoundError, match="no saved prompts"):
        files.read_prompts()
    files.receipt.write_text("[1, 2]")
    with pytest.raises(TraceError, match="receipt.json: a receipt must be a JSON object"):
        files.read_receipt()
    files.receipt.write_text("{")
    with pytest.raises(TraceError, match="receipt.json: invalid JSON"):
        files.read_receipt()
    files.prompts.write_text('{"query_id": "a"}\n{"context": "no id"}\n')
    with pytest.raises(TraceError, match="prompts.jsonl, line 2: expected a JSON object with a query_id"):
        files.read_prompts()


def test_find_runs_lists_each_pipeline_before_its_re_runs(tmp_path):
    _run(tmp_path / "b", "revised")
    _run(tmp_path / "b")
    _run(tmp_path / "a", "z")
    _run(tmp_path / "a")
    assert [(f.folder.name, f.suffix) for f in find_runs(tmp_path)] == [("a", ""), ("a", "z"), ("b", ""),
                                                                         ("b", "revised")]


def test_copy_runs_copies_run_files_only_and_replaces_the_target(tmp_path):
    files = _run(tmp_path / "src" / "bm25")
    files.write_prompts([{"query_id": "q1"}])
    (files.folder / ".traces.jsonl.tmp-1").write_text("half")
    (files.folder / "notes.txt").write_text("mine")
    (tmp_path / "dst" / "stale").mkdir(parents=True)
    copied = copy_runs(tmp_path / "src", tmp_path / "dst")
    assert sorted(p.relative_to(tmp_path / "dst").as_posix() for p in copied) == [
        "bm25/prompts.jsonl", "bm25/receipt.json", "bm25/traces.jsonl"]
    assert not (tmp_path / "dst" / "stale").exists()
    assert json.loads((tmp_path / "dst" / "bm25" / "receipt.json").read_text())["n"] == 1
    with pytest.raises(FileNotFoundError, match="no run files"):
        copy_runs(tmp_path / "empty", tmp_path / "dst")


def test_which_files_belong_to_a_run(tmp_path):
    for name in ("traces.jsonl", "traces-revised.jsonl", "prompts.jsonl", "receipt.json", "receipt-x.json",
                 ".receipt.json.tmp-3", "receipts.json", "traces.json", "mine.jsonl"):
        (tmp_path / name).write_text("")
    assert sorted(p.name for p in tmp_path.iterdir() if is_run_file(p)) == [
        "prompts.jsonl", "receipt-x.json", "receipt.json", "traces-revised.jsonl", "traces.jsonl"]
    assert [p.name for p in trace_files(tmp_path)] == ["mine.jsonl", "traces-revised.jsonl", "traces.jsonl"]


def test_folder_for_a_label(tmp_path):
    assert folder_for(tmp_path, "minilm+ce") == tmp_path / "minilm_ce"
    assert folder_for(tmp_path, "minilm+ce + gold-context oracle").name == "minilm_ce_gold-context_oracle"
    with pytest.raises(ValueError, match="cannot make a folder name"):
        folder_for(tmp_path, "+/")


def test_a_run_with_other_settings_gets_a_folder_of_its_own(tmp_path):
    defaults = {"BUDGET": 1024, "RETRIEVERS": ["bm25", "dense"], "LIMIT": None}
    assert settings_folder(tmp_path, "mini", dict(defaults), defaults) == tmp_path / "mini"
    assert settings_folder(tmp_path, "mini", {**defaults, "BUDGET": 2048}, defaults) == tmp_path / "mini-budget-2048"
    assert settings_folder(tmp_path, "mini", {**defaults, "RETRIEVERS": ["bm25"], "LIMIT": 5}, defaults).name == \
        "mini-retrievers-bm25-limit-5"
    assert settings_folder(tmp_path, "mini", {**defaults, "RETRIEVERS": ("bm25", True)}, defaults).name == \
        "mini-retrievers-bm25_true"
    with pytest.raises(ValueError, match="different settings: \\['TOP'\\]"):
        settings_folder(tmp_path, "mini", {**defaults, "TOP": 3}, defaults)
