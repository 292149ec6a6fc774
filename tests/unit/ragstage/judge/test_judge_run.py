"""The model judge's plumbing, on a scripted generator: pairs judged once and cached, every
candidate judged or an error, one silver label per question with its judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstage.fixtures import fixture_path
from ragstage.formats import read_any
from ragstage.ingest.gold import NO_RELEVANT, read_labels
from ragstage.judge.passages import read_passages
from ragstage.judge.relevance import RELEVANCE_TEMPLATE, Pair, judge_pairs, template_sha256
from ragstage.judge.run import judge_traces, pairs_of
from ragstage.judge.silver import candidates, write_labels


class ScriptedJudge:
    """A generator that says YES when the passage holds ``word``; counts the texts it was asked."""

    name = "scripted judge"
    batch_size = 3

    def __init__(self, word: str = "aspirin", reply: str = "YES") -> None:
        self.word, self.reply, self.asked = word, reply, []

    def describe(self) -> dict:
        return {"model": {"name": self.name, "word": self.word}}

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat_text(self, messages: list[dict[str, str]]) -> str:
        return "\n".join(m["content"] for m in messages)

    def generate(self, texts):
        self.asked.extend(texts)
        return [self.reply if self.word in t.lower() else " no." for t in texts]


@pytest.fixture()
def mini():
    root = fixture_path("mini_run")
    traces = [t for name in ("bm25", "minilm") for t in read_any(root / name / "traces.jsonl")]
    return traces, read_passages([fixture_path("mini_scifact") / "corpus.jsonl"])


def test_each_pair_is_judged_once_across_pipelines_and_cached(tmp_path: Path, mini) -> None:
    traces, passages = mini
    judge = ScriptedJudge()
    run = judge_traces(traces, passages, judge, tmp_path, depth=5)
    pairs = {(t.query_id, d) for t in traces for d in candidates(t, 5)}
    assert len(run.verdicts) == len(pairs) == run.generated == len(judge.asked)
    again = ScriptedJudge()
    assert judge_traces(traces, passages, again, tmp_path, depth=5).generated == 0 and again.asked == []


def test_silver_rows_hold_the_yes_candidates_and_the_judge(tmp_path: Path, mini) -> None:
    traces, passages = mini
    run = judge_traces(traces, passages, ScriptedJudge(), tmp_path, depth=5)
    by_q = {row["query_id"]: row for row in run.rows}
    assert len(by_q) == 13
    for row in run.rows:
        assert row["gold"] == [d for d in dict.fromkeys(d for t in traces if t.query_id == row["query_id"]
                                                         for d in candidates(t, 5))
                               if "aspirin" in passages[d].lower()]
        assert row["judge"] == {"name": "ragstage-relevance", "model": "scripted judge",
                                "prompt": RELEVANCE_TEMPLATE.name, "prompt_sha256": template_sha256()}
    write_labels(run.rows, tmp_path / "silver.jsonl")
    labels = read_labels(tmp_path / "silver.jsonl")
    empty = [label for label in labels if not label.gold]
    assert empty and all(label.targets == (NO_RELEVANT,) for label in empty)


def test_an_unreadable_reply_is_counted_not_relevant(tmp_path: Path, mini) -> None:
    traces, passages = mini
    run = judge_traces(traces[:1], passages, ScriptedJudge(word="", reply="maybe"), tmp_path, depth=3)
    assert run.unreadable == len(candidates(traces[0], 3)) == 3
    assert run.rows[0]["gold"] == []


def test_a_candidate_without_text_is_an_error_naming_it(mini) -> None:
    traces, passages = mini
    del passages[candidates(traces[0], 1)[0]]
    with pytest.raises(ValueError, match=f"1 candidate.*{candidates(traces[0], 1)[0]}"):
        pairs_of(traces, passages)


def test_judge_pairs_keeps_the_order_given_and_parses_one_word(tmp_path: Path) -> None:
    pairs = [Pair("q", "b", "claim", "no match here"), Pair("q", "a", "claim", "aspirin trial")]
    verdicts, generated = judge_pairs(ScriptedJudge(), pairs, tmp_path)
    assert [(v.doc_id, v.relevant) for v in verdicts] == [("b", False), ("a", True)] and generated == 2
