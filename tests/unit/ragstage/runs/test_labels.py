"""Run labels: one parser, one printer, and the comparisons a run set invites."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstage.runs.labels import RunLabel, default_pairs, parse_label, pipeline_label

CHAPTER_5 = ["bm25", "bm25+ce", "minilm", "minilm+ce", "minilm+ce/revised"]
part = st.text(st.characters(whitelist_categories=("Ll", "Nd"), whitelist_characters="-_."), min_size=1, max_size=8)


@given(part, st.none() | part, st.none() | part, st.none() | st.builds("{} {}".format, part, part))
def test_printing_then_parsing_gives_the_label_back(retriever, reranker, version, oracle):
    label = RunLabel(retriever, reranker, version, oracle)
    assert parse_label(str(label)) == label
    assert str(parse_label(str(label))) == str(label)


def test_parts_of_the_labels_the_chapters_use():
    assert parse_label("minilm+ce/revised") == RunLabel("minilm", "ce", "revised")
    assert parse_label("minilm+ce/revised").pipeline == "minilm+ce"
    assert parse_label("bm25") == RunLabel("bm25") and parse_label("bm25").is_base
    oracle = parse_label("minilm+rrf + gold-context oracle")
    assert oracle == RunLabel("minilm", "rrf", None, "gold-context oracle") and not oracle.is_base
    assert str(oracle.base) == "minilm+rrf"
    assert str(RunLabel("bm25").with_version("revised").with_oracle("gold-context oracle")) == \
        "bm25/revised + gold-context oracle"


@pytest.mark.parametrize("text, part", [("bm25+", "reranker"), ("/revised", "retriever"),
                                        ("minilm+ce/", "prompt version"),
                                        ("bm25 + ", "oracle"), ("", "retriever")])
def test_an_empty_part_is_an_error_naming_the_label(text, part):
    with pytest.raises(ValueError, match=re.escape(f"run label {text!r}: empty {part}")):
        parse_label(text)


def test_pipeline_label():
    assert pipeline_label("bm25", "") == "bm25" and pipeline_label("bm25", None) == "bm25"
    assert pipeline_label("minilm", "ce") == "minilm+ce"
    for bad in ("", "a+b", "a/b"):
        with pytest.raises(ValueError, match="retriever's short name"):
            pipeline_label(bad, "ce")


def test_the_five_pairs_of_chapter_6_in_order():
    assert default_pairs(CHAPTER_5) == [("bm25", "bm25+ce"), ("minilm", "minilm+ce"), ("bm25", "minilm"),
                                        ("bm25+ce", "minilm+ce"), ("minilm+ce", "minilm+ce/revised")]
    # the order of the labels decides the direction of the retriever comparisons, not which pairs
    shuffled = default_pairs(reversed(CHAPTER_5))
    assert {frozenset(p) for p in shuffled} == {frozenset(p) for p in default_pairs(CHAPTER_5)}


def test_pairs_need_both_sides_and_oracles_pair_with_their_origin():
    assert default_pairs(["bm25+ce", "minilm/revised"]) == []
    assert default_pairs(["minilm+ce", "minilm+ce + gold-context oracle", "minilm+ce/revised",
                          "minilm+ce/revised + gold-context oracle"]) == [
        ("minilm+ce", "minilm+ce/revised"), ("minilm+ce", "minilm+ce + gold-context oracle"),
        ("minilm+ce/revised", "minilm+ce/revised + gold-context oracle")]
    # a reranked pipeline is never paired with another retriever's plain one
    assert default_pairs(["bm25", "minilm+ce"]) == []
    # loose logs: two plain pipeline names are two systems to compare
    assert default_pairs(["prod", "v2", "prod"]) == [("prod", "v2")]
