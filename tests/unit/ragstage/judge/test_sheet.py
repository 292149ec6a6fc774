"""The labelling sheet in JSON Lines: written for the drawn requests in draw order, read back checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragstage.errors import TraceError
from ragstage.fixtures import fixture_path
from ragstage.formats import read_any
from ragstage.judge.passages import read_passages
from ragstage.judge.sheet import read_sheet, sample_tag, write_sheet
from ragstage.judge.silver import candidates
from ragstage.ppi.sample import Request, draw

TRACES = list(read_any(fixture_path("mini_run") / "bm25" / "traces.jsonl"))
PASSAGES = read_passages([fixture_path("mini_scifact") / "corpus.jsonl"])
SAMPLE = draw([Request(t.query_id, t.pipeline, "none") for t in TRACES], 4, seed=3)


def _sheet(tmp_path: Path) -> list[dict]:
    write_sheet(TRACES, SAMPLE, PASSAGES, tmp_path / "sheet.jsonl", depth=2)
    return [json.loads(line) for line in (tmp_path / "sheet.jsonl").read_text().splitlines()]


def test_the_sheet_lists_the_drawn_requests_and_their_candidates_in_rank_order(tmp_path: Path) -> None:
    lines = _sheet(tmp_path)
    by_id = {t.query_id: t for t in TRACES}
    assert [line["query_id"] for line in lines] == list(SAMPLE.query_ids)
    for line in lines:
        assert [c["doc_id"] for c in line["candidates"]] == candidates(by_id[line["query_id"]], 2)
        assert all(c["text"] == PASSAGES[c["doc_id"]] for c in line["candidates"])
        assert line["gold"] is None and line["sample"] == sample_tag(SAMPLE)


def test_a_filled_sheet_reads_back_as_peoples_labels(tmp_path: Path) -> None:
    lines = _sheet(tmp_path)
    lines[0]["gold"] = [lines[0]["candidates"][1]["doc_id"]]
    lines[1]["answerable"] = False
    for line in lines[2:]:
        line["gold"] = ["elsewhere"]
    (tmp_path / "filled.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    labels = read_sheet(tmp_path / "filled.jsonl", SAMPLE)
    assert [label["query_id"] for label in labels] == list(SAMPLE.query_ids)
    assert labels[0]["gold"] == lines[0]["gold"] and labels[1]["answerable"] is False and labels[1]["gold"] == []
    assert all("judge" not in label for label in labels)


def test_an_unfilled_line_or_a_missing_request_is_refused(tmp_path: Path) -> None:
    lines = _sheet(tmp_path)
    (tmp_path / "f.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(TraceError) as err:
        read_sheet(tmp_path / "f.jsonl", SAMPLE)
    assert (err.value.line, err.value.field) == (1, "gold")
    for line in lines:
        line["gold"] = ["x"]
    (tmp_path / "f.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines[:-1]))
    with pytest.raises(ValueError, match="1 drawn but absent"):
        read_sheet(tmp_path / "f.jsonl", SAMPLE)
    lines[0]["gold"] = []
    (tmp_path / "f.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ValueError, match="nothing marked relevant"):
        read_sheet(tmp_path / "f.jsonl", SAMPLE)
