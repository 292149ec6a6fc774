"""The committed silver labels of the mini SciFact run (a STAND-IN judge's): they are what the
committed per-pair replies give, every pair of the judged depth was judged, the agreement with the
real gold that the manual prints is what they give, and (slow) the stand-in gives the same replies
again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragstage.fixtures import fixture_path
from ragstage.formats import read_any
from ragstage.ingest.gold import read_labels
from ragstage.judge.agreement import bucket_agreement, pair_agreement
from ragstage.judge.apply import apply_labels
from ragstage.judge.passages import read_passages
from ragstage.judge.relevance import RELEVANCE_TEMPLATE, Pair, template_sha256
from ragstage.judge.run import pairs_of
from ragstage.judge.silver import read_judgements, silver_rows

#: The fixture judged the first DEPTH candidates of each ranked list (its README says so).
DEPTH = 3
SILVER = fixture_path("mini_run_silver")
TRACE_FILES = sorted(fixture_path("mini_run").glob("*/traces*.jsonl"))
DOC = Path(__file__).resolve().parents[2] / "docs" / "gold-for-a-few.md"


def _traces():
    return [t for path in TRACE_FILES for t in read_any(path)]


def _qrels() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (fixture_path("mini_scifact") / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            out.setdefault(qid, []).append(doc)
    return out


def test_the_labels_are_what_the_committed_replies_give() -> None:
    labels = read_labels(SILVER / "labels.jsonl")
    verdicts = read_judgements(SILVER / "judgements.jsonl")
    judge = labels[0].judge
    assert judge is not None and judge.model.startswith("STAND-IN ")
    assert (judge.prompt, judge.prompt_sha256) == (RELEVANCE_TEMPLATE.name, template_sha256())
    passages = read_passages([fixture_path("mini_scifact") / "corpus.jsonl"])
    traces = _traces()
    assert {(p.query_id, p.doc_id) for p in pairs_of(traces, passages, DEPTH)} == {
        (v.query_id, v.doc_id) for v in verdicts}
    rows = silver_rows(traces, {(v.query_id, v.doc_id): v for v in verdicts}, judge, DEPTH)
    assert [(r["query_id"], r["gold"]) for r in rows] == [(label.query_id, list(label.gold)) for label in labels]


def _agreement():
    labels = read_labels(SILVER / "labels.jsonl")
    pairs = pair_agreement(read_judgements(SILVER / "judgements.jsonl"), _qrels())
    buckets = {}
    for path in TRACE_FILES:
        gold = list(read_any(path))
        buckets[path.parent.name + ("/revised" if "revised" in path.name else "")] = bucket_agreement(
            apply_labels(gold, labels), gold)
    return pairs, buckets


def test_the_manual_prints_the_judges_agreement_with_the_real_gold() -> None:
    pairs, buckets = _agreement()
    text = DOC.read_text()
    (g_rel, g_not), (n_rel, n_not) = pairs.counts
    assert f"| gold relevant | {g_rel} | {g_not} |" in text and f"| gold not relevant | {n_rel} | {n_not} |" in text
    assert f"pair kappa {pairs.kappa:.3f}" in text
    for name, conf in buckets.items():
        assert re.search(rf"\| `{re.escape(name)}` \| {conf.agree}/{conf.n} \| {conf.kappa:.3f} \|", text), name


@pytest.mark.slow
def test_the_standin_gives_the_committed_replies_again(tmp_path: Path) -> None:
    from browser_helpers import in_ci

    from ragstage.judge.relevance import judge_pairs
    from ragstage.judge.run import judge_generator
    from ragstage.pipeline.offline import StandInError

    try:
        generator = judge_generator("standin", device="cpu")
    except StandInError as exc:  # its packages are not installed (pip install 'ragstage[offline-models]')
        if in_ci():
            pytest.fail(f"CI=true and {exc}")
        pytest.skip(str(exc))

    verdicts = read_judgements(SILVER / "judgements.jsonl")
    # two the judge called relevant and one it did not, so both replies are exercised
    chosen = [v for v in verdicts if v.relevant][:2] + [v for v in verdicts if v.relevant is False][:1]
    passages = read_passages([fixture_path("mini_scifact") / "corpus.jsonl"])
    queries = {t.query_id: t.query for t in _traces()}
    pairs = [Pair(v.query_id, v.doc_id, queries[v.query_id], passages[v.doc_id]) for v in chosen]
    again, generated = judge_pairs(generator, pairs, tmp_path)
    assert generated == 3 and [v.reply for v in again] == [v.reply for v in chosen]
