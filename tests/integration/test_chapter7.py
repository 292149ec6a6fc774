"""Chapter 7: its system, its labels, the claims its text makes, and every exercise's outcome.

The demo application (``ragstage.ingest.demo``) runs for real here: LangChain under the
OpenInference instrumentor, spans to an OTLP file, ingested with the chapter's labels. Each
exercise test applies the exercise's edit through the package and checks what the chapter
says the reader should see.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from repo_paths import REPO
from scipy.stats import binomtest

from ragstage import compare, diagnose
from ragstage.fixtures import fixture_path
from ragstage.ingest import Label, ingest_openinference, judge_contains
from ragstage.ingest.demo import (
    NO_ANSWER,
    DemoSettings,
    chunk_corpus,
    chunk_locations,
    extractive_answer,
    load_corpus,
    load_questions,
    overlap_rerank,
    pack_context,
    run_demo,
    words,
)
from ragstage.ingest.doctor import doctor_files
from ragstage.ingest.gold import gold_ids

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("langchain_community")

BASE = DemoSettings(chunk_size=200, k=6, budget=800)
LABELS = fixture_path("own_system", "labels.jsonl")


# -- the labels --------------------------------------------------------------------------------
def test_labels_point_at_spans_that_hold_their_reference_answers():
    docs = {d["_id"]: d["text"] for d in load_corpus()}
    questions = load_questions()
    assert len(questions) == 36 and len({q.query_id for q in questions}) == 36
    assert len({q.query for q in questions}) == 36
    for q in questions:
        assert q.gold == () and len(q.gold_spans) == 1, q.query_id
        doc, start, end = q.gold_spans[0]
        assert end <= len(docs[doc]), q.query_id
        assert q.reference and q.reference in docs[doc][start:end], q.query_id


# -- the scripted model and the budget ---------------------------------------------------------
def test_extractive_rule_picks_the_sentence_sharing_most_question_words():
    text = "Cats sleep a lot. Dogs bark at night and dogs sleep. Birds sing."
    assert extractive_answer("When do dogs bark?", text) == "Dogs bark at night and dogs sleep."
    assert extractive_answer("Do cats or birds sleep?", text) == "Cats sleep a lot."  # tie: the earliest
    assert extractive_answer("What is the price of tea?", text) == NO_ANSWER
    assert extractive_answer("How did the?", text) == NO_ANSWER  # only common words


def test_passages_are_sentence_boundaries_too():
    assert extractive_answer("decline", "a cut fragment with rate\n\nof decline stated here.") == (
        "of decline stated here.")


@given(st.lists(st.text(alphabet="abc .", min_size=1, max_size=30), max_size=6), st.text(alphabet="abc ", max_size=20))
def test_extractive_answer_is_a_sentence_of_the_passages_or_no_answer(passages, question):
    text = "\n\n".join(passages)
    answer = extractive_answer(question, text)
    assert answer == NO_ANSWER or answer in text


@given(st.lists(st.text(max_size=50), max_size=8), st.one_of(st.none(), st.integers(0, 200)))
def test_pack_context_keeps_a_prefix_that_fits(passages, budget):
    kept = pack_context(passages, budget)
    assert kept == passages[: len(kept)]
    if budget is not None:
        assert sum(map(len, kept)) <= budget
        if len(kept) < len(passages):
            assert sum(map(len, kept)) + len(passages[len(kept)]) > budget
    else:
        assert kept == passages


def test_reranker_rule_orders_by_shared_question_words_and_keeps_the_top():
    passages = ["tea and cakes", "dogs bark at night", "night dogs", "dogs"]
    assert overlap_rerank("When do dogs bark at night?", passages, 3) == [1, 2, 3]
    assert overlap_rerank("the how", passages, 2) == [0, 1]  # no shared word: the retriever's order


@given(st.lists(st.text(alphabet="ab c", max_size=12), max_size=8), st.text(alphabet="ab c", max_size=12),
       st.integers(0, 10))
def test_reranker_keeps_distinct_positions_best_first(passages, question, top):
    kept = overlap_rerank(question, passages, top)
    assert len(kept) == min(top, len(passages)) and len(set(kept)) == len(kept)
    asked = set(words(question)) - {"a", "an"}
    shared = [len(asked & set(words(passages[i]))) for i in kept]
    assert shared == sorted(shared, reverse=True)


def test_words_keep_numbers_whole():
    assert words("Lost 3.9 kg, 1,200 words; 21%.") == ["lost", "3.9", "kg", "1,200", "words", "21"]


# -- chunking: ids change, labels hold ---------------------------------------------------------
def test_rechunking_changes_every_id_and_every_label_still_finds_its_chunks():
    docs = {d["_id"]: d["text"] for d in load_corpus()}
    where = {size: chunk_locations(chunk_corpus(size)) for size in (200, 300)}
    assert not set(where[200]) & set(where[300])
    assert list(chunk_locations(chunk_corpus(200))) == list(where[200])  # same settings, same ids
    for size, chunks in where.items():
        for doc, start, end in list(chunks.values())[:40]:
            assert end - start <= size and docs[doc][start:end]
        for q in load_questions():
            assert gold_ids(q, chunks), (size, q.query_id)


def test_chunk_metadata_locates_the_chunk_text():
    docs = {d["_id"]: d["text"] for d in load_corpus()}
    for chunk in chunk_corpus(300):
        start = chunk.metadata["start_index"]
        assert docs[chunk.metadata["source"]][start:start + len(chunk.page_content)] == chunk.page_content


# -- runs --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("ch7")


@lru_cache(maxsize=None)
def _spans(settings: DemoSettings, folder: str) -> Path:
    return run_demo(Path(folder) / f"{settings.name}.jsonl", settings)


def traces_of(settings: DemoSettings, folder: Path, labels=LABELS) -> list:
    return ingest_openinference(_spans(settings, str(folder)), labels=labels, judge=judge_contains).traces


def buckets(traces) -> Counter:
    return Counter(diagnose(t).stage.value for t in traces)


def by_query(traces) -> dict[str, str]:
    return {t.query_id: diagnose(t).stage.value for t in traces}


def test_spans_are_reproducible(run_dir):
    a = run_demo(run_dir / "a.jsonl", BASE, load_questions()[:3])
    b = run_demo(run_dir / "b.jsonl", BASE, load_questions()[:3])
    ta = ingest_openinference(a).traces
    tb = ingest_openinference(b).traces
    assert [t.meta["ingest"]["trace_id"] for t in ta] == [t.meta["ingest"]["trace_id"] for t in tb]
    assert [t.replace(timestamp=None).to_dict() for t in ta] == [t.replace(timestamp=None).to_dict() for t in tb]


def test_baseline_run_is_what_the_chapter_describes(run_dir):
    traces = traces_of(BASE, run_dir)
    assert len(traces) == 36 and all(t.prompt_source == "recovered" for t in traces)
    assert all(t.pipeline == "chunks200-k6-budget800" and t.model.startswith("scripted") for t in traces)
    # q20's gold span ends in "7.4 mmHg", and "mmHg" opens a chunk that was never retrieved: the
    # prompt does not contain the gold span (partial coverage), so it is an assembly loss
    assert buckets(traces) == Counter(none=20, generation=11, retrieval=2, prompt_assembly=3)
    partial = [t.query_id for t in traces if "partial_coverage" in t.meta["ingest"]]
    assert partial == ["q20"]
    answers = {t.query_id: t.answer for t in traces}
    assert answers["q36"] == "either in the morning or at bedtime."  # a fragment cut at a chunk boundary
    # q01's sentence was cut in two: the question's words in one chunk, the number in the next
    assert answers["q01"].startswith("We randomised") and "0.72" not in answers["q01"]


def test_the_reranker_is_a_logged_stage(run_dir):
    settings = replace(BASE, k=10, rerank_top=4)
    assert settings.name == "chunks200-k10-rerank4-budget800"
    traces = traces_of(settings, run_dir)
    assert all(t.reranked is not None and len(t.reranked) == 4 and len(t.retrieved) == 10 for t in traces)
    assert all(set(t.reranked) <= set(t.retrieved) for t in traces)
    # the budget's two cuts leave prompt_assembly (q12 to reranking, q33 to generation); q20 stays: both
    # halves of its gold span are retrieved, the reranker keeps the one without "mmHg"
    assert buckets(traces) == Counter(none=21, generation=10, retrieval=2, reranking=2, prompt_assembly=1)
    q20 = next(t for t in traces if t.query_id == "q20")
    assert set(q20.gold) <= set(q20.retrieved) and not set(q20.gold) <= set(q20.reranked)
    assert "partial_coverage" in q20.meta["ingest"] and diagnose(q20).stage.value == "prompt_assembly"
    c = compare(traces_of(BASE, run_dir), traces)
    assert (c.fixed, c.broken) == (1, 0)


def test_doctor_cli_on_the_raw_export(run_dir):
    spans = _spans(BASE, str(run_dir))

    def doctor(*extra):
        return subprocess.run([sys.executable, "-m", "ragstage.cli", "doctor", str(spans), "--labels", str(LABELS),
                               "--judge", "contains", *extra], capture_output=True, text=True)

    raw = doctor()
    assert raw.returncode == 1 and "attributable: 0 of 36" in raw.stdout and "prompt ids: 36 not logged" in raw.stdout
    recovered = doctor("--recover-prompt")
    assert recovered.returncode == 0 and "attributable: 36 of 36" in recovered.stdout
    assert "never judged" not in recovered.stdout  # --judge reaches the doctor's ingest
    unjudged = subprocess.run([sys.executable, "-m", "ragstage.cli", "doctor", str(spans), "--labels", str(LABELS),
                               "--recover-prompt"], capture_output=True, text=True)
    assert "answer never judged" in unjudged.stdout


def test_bigger_chunks_fix_seven_and_break_one(run_dir):
    before, after = traces_of(BASE, run_dir), traces_of(replace(BASE, chunk_size=300), run_dir)
    c = compare(before, after)
    assert (c.n, c.fixed, c.broken, c.both_right, c.both_wrong) == (36, 7, 1, 19, 9)
    assert c.p_value == pytest.approx(binomtest(1, 8, 0.5).pvalue) == pytest.approx(0.0703125)
    moved = {q: (b, by_query(after)[q]) for q, b in by_query(before).items() if b != by_query(after)[q]}
    assert moved["q14"] == ("none", "prompt_assembly") and moved["q07"] == ("retrieval", "generation")


# -- the exercises ---------------------------------------------------------------------------------
# Each exercise's outcome is declared once, in ragstage/exercises/ch07.py, and checked by
# tests/integration/test_exercises.py from the chapter's own namespace. What the doctor says about a label
# without gold (exercise 4's second half) is the doctor's behaviour, tested here.
def _edited_labels(folder: Path, query_id: str, **change) -> Path:
    out = folder / f"labels-{query_id}.jsonl"
    lines = []
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["query_id"] == query_id:
            record.pop("gold_spans")
            record.update(change)
        lines.append(json.dumps(record))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_a_label_without_gold_blocks_the_doctor(run_dir):
    labels = _edited_labels(run_dir, "q07")
    report = doctor_files([str(_spans(BASE, str(run_dir)))], labels=str(labels), recover_prompt=True,
                          ingest_options={"judge": judge_contains})
    gold = next(f for f in report.fields if f.name == "gold")
    assert report.blocked and report.attributable == 35 and gold.count == 1 and gold.examples == ["q07"]


def test_the_template_checklist_names_every_field_the_doctor_checks():
    import nbformat

    from ragstage.ingest.doctor import FIELD_CHECKS

    intro = nbformat.read(REPO / "notebooks" / "07b_template_your_app.ipynb",
                          as_version=4).cells[0].source.lower()
    checklist = intro[intro.index("| field |"):]
    for check in FIELD_CHECKS:
        assert check.name.split(".")[-1].replace("_", " ") in checklist.replace("_", " "), check.name


def test_unknown_label_query_is_reported(run_dir):
    ghost = Label(query_id="nobody", gold=("1001",))
    result = ingest_openinference(_spans(BASE, str(run_dir)), labels=[*load_questions(), ghost])
    assert [lb.query_id for lb in result.unmatched_labels] == ["nobody"]


# -- recording ---------------------------------------------------------------------------------
def test_seeded_id_generator_repeats_and_never_gives_the_invalid_id():
    from ragstage.ingest import seeded_id_generator

    a, b, c = seeded_id_generator(3), seeded_id_generator(3), seeded_id_generator(4)
    first = [a.generate_trace_id(), a.generate_span_id(), a.generate_span_id()]
    assert first == [b.generate_trace_id(), b.generate_span_id(), b.generate_span_id()]
    assert first[0] != c.generate_trace_id() and all(first)
    assert first[0] < 2**128 and first[1] < 2**64


def test_record_spans_starts_the_file_afresh_and_always_uninstruments(tmp_path):
    from ragstage.ingest import record_spans

    class Instrumentor:
        def __init__(self):
            self.calls = []

        def instrument(self, tracer_provider):
            self.calls.append(("instrument", type(tracer_provider).__name__))

        def uninstrument(self):
            self.calls.append(("uninstrument",))

    path = tmp_path / "spans.jsonl"
    path.write_text("stale\n")
    inst = Instrumentor()
    with pytest.raises(RuntimeError), record_spans(path, inst, seed=1) as out:
        assert out == path and not path.exists()
        raise RuntimeError("the application failed")
    assert inst.calls == [("instrument", "TracerProvider"), ("uninstrument",)]
