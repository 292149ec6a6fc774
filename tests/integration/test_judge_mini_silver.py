"""The committed silver labels of the mini SciFact runs (a STAND-IN judge's), of the 13-claim run
and of the 113-claim wide one: they are what the committed per-pair replies give, every pair of the
judged depth was judged, the agreement with the real gold that the manual prints is what they give,
and (slow) the stand-in gives the same replies again."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import REPO

from ragstage.fixtures import fixture_path
from ragstage.ingest.gold import read_labels
from ragstage.judge.agreement import bucket_agreement, pair_agreement
from ragstage.judge.apply import apply_labels
from ragstage.judge.passages import read_passages
from ragstage.judge.relevance import RELEVANCE_TEMPLATE, Pair, template_sha256
from ragstage.judge.run import pairs_of
from ragstage.judge.silver import read_judgements, silver_rows
from ragstage.trace_files import read_any

#: The fixtures judged the first DEPTH candidates of each ranked list (their READMEs say so).
DEPTH = 3
DOC = REPO / "docs" / "gold-for-a-few.md"


@dataclass(frozen=True)
class Judged:
    """A committed run, the folder of its silver labels, its corpus, the judge's precision, and the
    heading of the manual's section that prints the judge's agreement."""

    run: str
    silver: str
    data: str
    dtype: str | None
    heading: str

    def section(self) -> str:
        """The manual's text from the heading to the next heading."""
        after = DOC.read_text().split(f"\n{self.heading}\n", 1)[1]
        return re.split(r"\n#{2,3} ", after, maxsplit=1)[0]

    def traces(self) -> list:
        return [t for path in sorted(fixture_path(self.run).glob("*/traces*.jsonl")) for t in read_any(path)]


MINI = Judged("mini_run", "mini_run_silver", "mini_scifact", None,
              "### The mini run's silver labels (a STAND-IN judge)")
WIDE = Judged("wide_run", "wide_run_silver", "mini_scifact_wide", "bfloat16",
              "### The wide mini run: a sample big enough to check (a STAND-IN judge)")
BOTH = pytest.mark.parametrize("judged", [MINI, WIDE], ids=["mini", "wide"])


def _qrels(judged: Judged) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (fixture_path(judged.data) / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            out.setdefault(qid, []).append(doc)
    return out


@BOTH
def test_the_labels_are_what_the_committed_replies_give(judged: Judged) -> None:
    silver = fixture_path(judged.silver)
    labels = read_labels(silver / "labels.jsonl")
    verdicts = read_judgements(silver / "judgements.jsonl")
    judge = labels[0].judge
    assert judge is not None and judge.model.startswith("STAND-IN ")
    assert judge.model.endswith(f" in {judged.dtype}") == (judged.dtype is not None)
    assert (judge.prompt, judge.prompt_sha256) == (RELEVANCE_TEMPLATE.name, template_sha256())
    passages = read_passages([fixture_path(judged.data) / "corpus.jsonl"])
    traces = judged.traces()
    assert {(p.query_id, p.doc_id) for p in pairs_of(traces, passages, DEPTH)} == {
        (v.query_id, v.doc_id) for v in verdicts}
    rows = silver_rows(traces, {(v.query_id, v.doc_id): v for v in verdicts}, judge, DEPTH)
    assert [(r["query_id"], r["gold"]) for r in rows] == [(label.query_id, list(label.gold)) for label in labels]


def _agreement(judged: Judged):
    silver = fixture_path(judged.silver)
    labels = read_labels(silver / "labels.jsonl")
    pairs = pair_agreement(read_judgements(silver / "judgements.jsonl"), _qrels(judged))
    buckets = {}
    for path in sorted(fixture_path(judged.run).glob("*/traces*.jsonl")):
        gold = list(read_any(path))
        buckets[path.parent.name + ("/revised" if "revised" in path.name else "")] = bucket_agreement(
            apply_labels(gold, labels), gold)
    return pairs, buckets


@BOTH
def test_the_manual_prints_the_judges_agreement_with_the_real_gold(judged: Judged) -> None:
    pairs, buckets = _agreement(judged)
    text = judged.section()
    (g_rel, g_not), (n_rel, n_not) = pairs.counts
    assert f"| gold relevant | {g_rel} | {g_not} |" in text and f"| gold not relevant | {n_rel} | {n_not} |" in text
    assert f"pair kappa {pairs.kappa:.3f}" in text
    for name, conf in buckets.items():
        assert re.search(rf"\| `{re.escape(name)}` \| {conf.agree}/{conf.n} \| {conf.kappa:.3f} \|", text), name


@pytest.mark.slow
@BOTH
def test_the_standin_gives_the_committed_replies_again(tmp_path: Path, judged: Judged) -> None:
    from browser_helpers import in_ci

    from ragstage.judge.relevance import judge_pairs
    from ragstage.judge.run import judge_generator
    from ragstage.pipeline.offline import StandInError

    try:
        generator = judge_generator("standin", device="cpu", dtype=judged.dtype)
    except StandInError as exc:  # its packages are not installed (pip install 'ragstage[offline-models]')
        if in_ci():
            pytest.fail(f"CI=true and {exc}")
        pytest.skip(str(exc))

    verdicts = read_judgements(fixture_path(judged.silver) / "judgements.jsonl")
    # two the judge called relevant and one it did not, so both replies are exercised
    chosen = [v for v in verdicts if v.relevant][:2] + [v for v in verdicts if v.relevant is False][:1]
    passages = read_passages([fixture_path(judged.data) / "corpus.jsonl"])
    queries = {t.query_id: t.query for t in judged.traces()}
    pairs = [Pair(v.query_id, v.doc_id, queries[v.query_id], passages[v.doc_id]) for v in chosen]
    again, generated = judge_pairs(generator, pairs, tmp_path)
    assert generated == 3 and [v.reply for v in again] == [v.reply for v in chosen]
