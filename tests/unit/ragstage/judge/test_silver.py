"""Silver labels from another tool's per-pair verdicts, the passages' sources, and the per-pair file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstage.errors import TraceError
from ragstage.fixtures import fixture_path
from ragstage.ingest.gold import JudgeInfo
from ragstage.judge.passages import read_corpus, read_passages, read_prompt_passages
from ragstage.judge.relevance import PairVerdict
from ragstage.judge.silver import (
    read_judgements,
    read_silver_labels,
    relevance_value,
    rows_from_relevance,
    write_judgements,
    write_labels,
)

JUDGE = JudgeInfo("phoenix-relevance", "gpt-x", "RAG_RELEVANCY_PROMPT", "abc")


def test_csv_rows_become_one_label_per_question_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "rel.csv"
    path.write_text("query_id,doc_id,relevant,query\n1,d2,relevant,first\n1,d1,relevant,first\n1,d3,unrelated,first\n"
                    "2,d1,unrelated,second\n")
    rows = rows_from_relevance(path, JUDGE)
    assert rows == [{"query_id": "1", "query": "first", "gold": ["d2", "d1"], "answerable": True,
                     "judge": JUDGE.to_json()},
                    {"query_id": "2", "query": "second", "gold": [], "answerable": True, "judge": JUDGE.to_json()}]
    write_labels(rows, tmp_path / "silver.jsonl")
    assert [label.targets for label in read_silver_labels(tmp_path / "silver.jsonl")] == [
        ("d2", "d1"), ("judge:no-relevant-candidate",)]


def test_jsonl_rows_with_booleans_and_question_texts_from_traces(tmp_path: Path) -> None:
    path = tmp_path / "rel.jsonl"
    path.write_text('{"query_id": "1", "doc_id": "d1", "relevant": true}\n'
                    '{"query_id": 2, "doc_id": "d1", "relevant": 0}\n')
    rows = rows_from_relevance(path, JUDGE, queries={"1": "q one"})
    assert [(r["query_id"], r.get("query"), r["gold"]) for r in rows] == [("1", "q one", ["d1"]), ("2", None, [])]


@pytest.mark.parametrize(("text", "row", "field"), [
    ("query_id,doc_id,relevant\n1,d1,\n", 2, "relevant"),
    ("query_id,doc_id,relevant\n1,d1,yes\n1,,no\n", 3, "doc_id"),
    ("query_id,doc_id,relevant\n1,d1,yes\n1,d1,no\n", 3, "doc_id"),
    ("query_id,doc_id,relevant\n1,d1,0.7\n", 2, "relevant"),
    ("query_id,doc,relevant\n1,d1,yes\n", 1, "doc_id"),
])
def test_a_bad_row_names_the_file_the_row_and_the_field(tmp_path: Path, text: str, row: int, field: str) -> None:
    path = tmp_path / "rel.csv"
    path.write_text(text)
    with pytest.raises(TraceError) as err:
        rows_from_relevance(path, JUDGE)
    assert (err.value.path, err.value.line, err.value.field, err.value.unit) == (str(path), row, field, "row")


@given(st.one_of(st.booleans(), st.sampled_from(["YES", " no ", "Relevant", "unrelated", "1", "0", "True"]),
                 st.sampled_from([0, 1])))
def test_relevance_values_read_as_their_truth(value) -> None:
    expected = value if isinstance(value, bool) else (
        str(value).strip().lower() in {"yes", "relevant", "1", "true"})
    assert relevance_value(value) is expected


@given(st.one_of(st.text().filter(lambda s: s.strip().lower() not in {
        "1", "true", "yes", "y", "relevant", "0", "false", "no", "n", "irrelevant", "unrelated", "not relevant"}),
        st.floats().filter(lambda f: f not in (0, 1)), st.none()))
def test_anything_else_is_no_verdict(value) -> None:
    with pytest.raises(ValueError):
        relevance_value(value)


def test_corpus_and_prompts_give_the_same_text_for_the_same_passage() -> None:
    corpus = read_corpus(fixture_path("mini_scifact") / "corpus.jsonl")
    prompts = read_prompt_passages(fixture_path("mini_run") / "bm25" / "prompts.jsonl")
    assert len(corpus) == 46 and prompts and all(corpus[d] == text for d, text in prompts.items())
    both = read_passages([fixture_path("mini_scifact") / "corpus.jsonl"],
                         [fixture_path("mini_run") / "bm25" / "prompts.jsonl"])
    assert both == corpus


def test_a_passage_with_two_texts_or_a_bad_line_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"_id": "1", "text": "a"}\n{"_id": "2"}\n')
    with pytest.raises(TraceError) as err:
        read_corpus(bad)
    assert (err.value.line, err.value.field) == (2, "text")
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text('{"_id": "1", "text": "a"}\n')
    two.write_text('{"id": "1", "text": "b"}\n')
    with pytest.raises(ValueError, match="another text"):
        read_passages([one, two])
    with pytest.raises(ValueError, match="no passage texts"):
        read_passages()


def test_judgements_round_trip(tmp_path: Path) -> None:
    verdicts = [PairVerdict("1", "d", True, "YES"), PairVerdict("1", "e", None, "maybe")]
    write_judgements(verdicts, tmp_path / "pairs.jsonl")
    assert read_judgements(tmp_path / "pairs.jsonl") == verdicts
    (tmp_path / "bad.jsonl").write_text(json.dumps({"query_id": "1", "doc_id": "d", "relevant": "yes",
                                                    "reply": "YES"}) + "\n")
    with pytest.raises(TraceError) as err:
        read_judgements(tmp_path / "bad.jsonl")
    assert err.value.field == "relevant"
