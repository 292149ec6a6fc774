"""Prompt assembly under a token budget: a rank prefix that fits (ragstage.pipeline.assembly)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragstage.pipeline import (
    assemble_prompt,
    format_passage,
)


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
