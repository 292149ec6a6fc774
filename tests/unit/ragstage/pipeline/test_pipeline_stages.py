"""Reranking, prompt assembly (the budget rule), answer parsing, templates and the generator."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pipeline_helpers import mini_data, tiny_models

from ragstage.pipeline import (
    TEMPLATES,
    BM25Retriever,
    CrossEncoderReranker,
    HFGenerator,
    NoReranker,
    RankFusionReranker,
    RerankerUnavailable,
    assemble_prompt,
    format_passage,
    parse_answer,
    render_messages,
)
from ragstage.pipeline.generation import GeneratorUnavailable

DATA = mini_data()


CANDIDATES = [(f"10{i}", 10.0 - i) for i in range(61, 67, 1)] + [("1071", 1.0), ("1081", 0.5)]


def test_no_reranker_is_the_retrievers_own_cut():
    assert NoReranker().rerank("q", CANDIDATES, DATA.corpus, 3) == CANDIDATES[:3]


@pytest.mark.parametrize("make", [
    lambda: CrossEncoderReranker(str(tiny_models().cross_encoder), device="cpu"),
    lambda: RankFusionReranker(str(tiny_models().embedder), device="cpu"),
])
def test_model_rerankers_reorder_candidates_and_cut(make, tmp_path):
    reranker = make()
    if isinstance(reranker, RankFusionReranker):
        reranker.embedder.cache_dir = tmp_path
    candidates = [(d, 0.0) for d in ("1061", "1062", "1071", "1072", "1081", "1091")]
    out = reranker.rerank(DATA.queries["7"], candidates, DATA.corpus, 4)
    assert len(out) == 4 and {d for d, _ in out} <= {d for d, _ in candidates}
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
    assert reranker.rerank("q", [], DATA.corpus, 4) == []


def _ranks(scores, positive_only=False):
    """1-based ranks by score, ties in the given order; None for an unranked item (independent of the code)."""
    ranked = sorted((i for i in range(len(scores)) if scores[i] > 0 or not positive_only),
                    key=lambda i: (-round(float(scores[i]), 9), i))
    return {i: r for r, i in enumerate(ranked, start=1)}


def test_rank_fusion_adds_reciprocal_ranks_of_bm25_and_cosine(tmp_path):
    fusion = RankFusionReranker(str(tiny_models().embedder), device="cpu", cache_dir=tmp_path, k=5)
    query = DATA.queries["7"]
    ids = ["1061", "1062", "1071", "1072", "1081", "1091", "1121"]
    lexical = BM25Retriever(DATA.corpus).scores(query, ids)
    vectors = fusion.embedder.corpus_matrix(DATA.corpus)
    row = {d: i for i, d in enumerate(DATA.corpus)}
    dense = vectors[[row[d] for d in ids]] @ fusion.embedder.encode([query])[0]
    by_bm25, by_dense = _ranks(lexical, positive_only=True), _ranks(dense)
    assert len(by_bm25) < len(ids)  # some candidates share no term: BM25 says nothing about them
    expected = [sum(1 / (5 + ranks[i]) for ranks in (by_bm25, by_dense) if i in ranks) for i in range(len(ids))]
    out = fusion.rerank(query, [(d, 0.0) for d in ids], DATA.corpus, len(ids))
    assert dict(out) == pytest.approx(dict(zip(ids, expected)))
    assert [d for d, _ in out] == [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-round(expected[i], 9), i))]
    assert "not a cross-encoder" in fusion.describe()["kind"] and fusion.describe()["k"] == 5
    with pytest.raises(ValueError, match="at least 1"):
        RankFusionReranker(str(tiny_models().embedder), k=0)


def test_bm25_scores_for_given_ids_match_retrieval():
    bm25 = BM25Retriever(DATA.corpus)
    hits = dict(bm25.retrieve({"q": DATA.queries["9"]}, k=100)["q"])
    ids = list(DATA.corpus)
    scores = dict(zip(ids, bm25.scores(DATA.queries["9"], ids)))
    assert {d: s for d, s in scores.items() if s > 0} == pytest.approx(hits)


def test_missing_cross_encoder_is_a_service_failure_not_a_crash(tmp_path):
    reranker = CrossEncoderReranker(str(tmp_path / "gone"), device="cpu")
    for _ in range(2):  # the failure is remembered, and reported on every call
        with pytest.raises(RerankerUnavailable, match="gone"):
            reranker.rerank("q", CANDIDATES, DATA.corpus, 3)


def test_format_passage():
    assert format_passage("7", {"title": "Short title", "text": "Body."}) == "[ID 7] Short title. Body."
    assert format_passage("7", {"title": "Does it work?", "text": "Yes."}) == "[ID 7] Does it work? Yes."
    assert format_passage("7", {"title": "", "text": "Body."}) == "[ID 7] Body."


WORDS = lambda s: len(s.split())  # noqa: E731 - a transparent token counter for the budget rule
CORPUS = {"a": {"title": "", "text": "w " * 10}, "b": {"title": "", "text": "w " * 40},
          "c": {"title": "", "text": "w " * 5}, "d": {"title": "", "text": "w " * 5}}


def test_budget_stops_at_the_first_passage_that_does_not_fit():
    # a = 12 words with "[ID a]", b = 42, c = 7: b does not fit in 30, and c is NOT tried after it
    prompt = assemble_prompt(["a", "b", "c"], CORPUS, WORDS, budget=30)
    assert prompt.ids == ("a",) and prompt.stopped_at == "b" and prompt.tokens == 12
    assert prompt.context == format_passage("a", CORPUS["a"])


def test_budget_counts_the_joined_block_and_an_exact_fit_is_allowed():
    both = assemble_prompt(["a", "c"], CORPUS, WORDS, budget=19)
    assert both.ids == ("a", "c") and both.tokens == 19 and both.stopped_at is None
    assert assemble_prompt(["a", "c"], CORPUS, WORDS, budget=18).ids == ("a",)


def test_top_limits_the_offer_and_a_too_long_first_passage_leaves_it_empty():
    assert assemble_prompt(["c", "d", "a"], CORPUS, WORDS, budget=1000, top=2).ids == ("c", "d")
    empty = assemble_prompt(["b", "c"], CORPUS, WORDS, budget=20)
    assert empty.ids == () and empty.context == "" and empty.stopped_at == "b"


@given(st.permutations(list(CORPUS)), st.integers(0, 80), st.integers(0, 4))
def test_assembled_prompt_is_a_rank_prefix_within_budget(order, budget, top):
    prompt = assemble_prompt(order, CORPUS, WORDS, budget=budget, top=top)
    assert prompt.ids == tuple(order[:len(prompt.ids)]) and len(prompt.ids) <= top
    assert WORDS(prompt.context) == prompt.tokens <= budget


@pytest.mark.parametrize("text, expected", [
    ("ID: 1234", "1234"), ("id 77", "77"), ("[ID 4983]", "4983"), ("**ID: 12**.", "12"),
    ("ID: 12.", "12"), ("ID: NONE", "NONE"), ("id: none of them", "NONE"), ("ID:abc-9", "abc-9"),
    ("The abstract ID: 5 and ID: 6", "5"), ("VALID: 5", None), ("The answer is 12", None), ("", None),
    ("ID: <id>", None),
])
def test_parse_answer(text, expected):
    assert parse_answer(text) == expected


def test_templates_are_versioned_and_differ_as_documented():
    assert set(TEMPLATES) == {"original", "revised"}
    original = render_messages("original", "CLAIM", "[ID 1] CONTEXT")[1]["content"]
    revised = render_messages("revised", "CLAIM", "[ID 1] CONTEXT")[1]["content"]
    for text in (original, revised):
        assert "CLAIM" in text and "[ID 1] CONTEXT" in text and '"ID: NONE"' in text and '"ID: <id>"' in text
    assert "for or against" in original and "without settling it" in revised and "different topic" in revised
    assert "no abstracts fit" in render_messages("original", "c", "")[1]["content"]
    with pytest.raises(ValueError, match="known: original, revised"):
        render_messages("v3", "c", "x")


def test_tiny_generator_greedy_left_padded_batches_match_single_prompts():
    generator = HFGenerator(str(tiny_models().generator), device="cpu", max_new_tokens=16)
    short = generator.chat_text(render_messages("original", "Zinc shortens colds.", "[ID 1041] Zinc trial."))
    long = generator.chat_text(render_messages("revised", "Lithium lowers suicide rates in bipolar disorder.",
                                               "[ID 1091] " + "A nationwide cohort of patients. " * 20))
    assert short.endswith("<|im_start|>assistant\n") and generator.count_tokens(long) > generator.count_tokens(short)
    batched = generator.generate([short, long])
    assert batched == [generator.generate([short])[0], generator.generate([long])[0]]
    assert len(set(batched)) == 2  # the tiny model is random but not constant: the check has teeth
    shorter = HFGenerator(str(tiny_models().generator), device="cpu", max_new_tokens=4).generate([short, long])
    for four, sixteen in zip(shorter, batched):  # greedy: 4 new tokens are the start of 16
        assert sixteen.startswith(four) and len(four) < len(sixteen)
    assert generator.describe()["decoding"] == {"greedy": True, "max_new_tokens": 16}


def test_missing_generator_is_a_one_line_user_error(tmp_path):
    with pytest.raises(GeneratorUnavailable, match="cannot load the tokenizer"):
        HFGenerator(str(tmp_path / "nothing")).count_tokens("x")
