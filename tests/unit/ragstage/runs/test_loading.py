"""Reading run folders back: receipts, prompt versions, loose trace files, bad folders."""

import json

import pytest

from ragstage import Trace, TraceError, write_traces
from ragstage.runs import check_run, diff_runs, load_run


def pipeline_folder(root, name, versions=("",), stand_ins=()):
    folder = root / name.replace("+", "_")
    folder.mkdir(parents=True)
    for version in versions:
        suffix = f"-{version}" if version else ""
        write_traces(folder / f"traces{suffix}.jsonl",
                     [Trace(query_id=f"q{i}", pipeline=name, gold=["g"], retrieved=["g"], prompt=["g"],
                            correct=bool(i % 2), prompt_version=version or "original") for i in range(4)])
        (folder / f"receipt{suffix}.json").write_text(json.dumps({"pipeline": name, "stand_ins": list(stand_ins)}))
    (folder / "prompts.jsonl").write_text('{"query_id": "q0", "context": "..."}\n')
    return folder


def test_receipts_and_prompt_versions_become_labels(tmp_path):
    pipeline_folder(tmp_path, "bm25")
    pipeline_folder(tmp_path, "minilm+ce", versions=("", "revised"), stand_ins=["generator: stand-in"])
    run = load_run(tmp_path)
    assert run.labels == ["bm25", "minilm+ce", "minilm+ce/revised"]
    assert {t.pipeline for t in run.traces["minilm+ce/revised"]} == {"minilm+ce/revised"}
    assert run.stand_ins()["bm25"] == [] and run.stand_ins()["minilm+ce"] == ["generator: stand-in"]
    assert run.uses_stand_ins and len(run.all_traces()) == 12
    assert run.files["minilm+ce/revised"].traces == tmp_path / "minilm_ce" / "traces-revised.jsonl"
    assert run.files["bm25"].folder == tmp_path / "bm25"


def test_loose_trace_files_are_grouped_by_their_pipeline(tmp_path):
    write_traces(tmp_path / "mine.jsonl", [Trace(query_id="a", pipeline="prod"), Trace(query_id="a", pipeline="v2")])
    run = load_run(tmp_path)
    assert sorted(run.labels) == ["prod", "v2"] and not run.uses_stand_ins


def test_bad_folders(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_run(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no traces"):
        load_run(tmp_path)
    folder = pipeline_folder(tmp_path, "bm25")
    (folder / "traces.jsonl").unlink()
    with pytest.raises(TraceError, match="receipt without its traces file"):
        load_run(tmp_path)


def test_a_bad_trace_line_names_its_file(tmp_path):
    folder = pipeline_folder(tmp_path, "bm25")
    with open(folder / "traces.jsonl", "a") as handle:
        handle.write('{"query_id": "x", "promt": []}\n')
    with pytest.raises(TraceError, match=r"traces.jsonl, line 5, field 'promt'"):
        load_run(tmp_path)


def test_check_run_finds_broken_invariants(tmp_path):
    pipeline_folder(tmp_path, "bm25")
    run = load_run(tmp_path)
    assert check_run(run, [f"q{i}" for i in range(4)]) == []
    assert "1 questions missing" in check_run(run, [f"q{i}" for i in range(5)])[0]
    bad = Trace(query_id="x", pipeline="p", gold=["g"], retrieved=["a"], reranked=["a", "b"], prompt=["c"])
    run.traces["p"] = [bad, bad]
    problems = check_run(run)
    assert any("more than one trace" in p for p in problems)
    assert any("reranked ids that were never retrieved" in p for p in problems)
    assert any("prompt ids that did not come out of ranking" in p for p in problems)
    no_rerank = Trace(query_id="y", pipeline="q", gold=["g"], retrieved=["a"], prompt=["a"])
    run.traces = {"q": [no_rerank]}
    assert check_run(run) == []


def test_diff_runs_ignores_provenance_and_reports_outcomes(tmp_path):
    pipeline_folder(tmp_path / "a", "bm25")
    pipeline_folder(tmp_path / "b", "bm25")
    a, b = load_run(tmp_path / "a"), load_run(tmp_path / "b")
    b.traces["bm25"] = [t.replace(timestamp="2030-01-01") for t in b.traces["bm25"]]
    assert diff_runs(a, b) == []
    b.traces["bm25"][0] = b.traces["bm25"][0].replace(correct=True, answer="ID: g")
    assert diff_runs(a, b) == ["bm25 q0: answer differs", "bm25 q0: bucket generation against none"]
    b.traces["extra"] = []
    assert diff_runs(a, b)[0] == "pipelines differ: ['extra']"
