"""Quoted sentences to gold spans: offsets in the document's own text, whitespace forgiven,
nothing guessed (absent or ambiguous quotes are errors naming the document)."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ragstage.fixtures import fixture_path
from ragstage.ingest.gold import gold_ids, parse_label
from ragstage.ingest.quote import quote_label, quote_span
from ragstage.ingest.spans import SpanError

DOC = "Aspirin lowered risk.  Major bleeding was\nmore frequent (1.4% versus 0.9%). Risk fell."


def test_span_points_at_the_quoted_text():
    span = quote_span(DOC, "Major bleeding was more frequent (1.4% versus 0.9%).", "1001")
    assert span == {"id": "1001", "start": 23, "end": 75}
    assert DOC[span["start"]:span["end"]] == "Major bleeding was\nmore frequent (1.4% versus 0.9%)."


def test_whitespace_in_the_copy_is_forgiven_but_nothing_else():
    assert quote_span(DOC, "  Major   bleeding\twas more ", "d")["start"] == 23
    with pytest.raises(SpanError, match="document d: quote 'major bleeding' not found .*ignoring case"):
        quote_span(DOC, "major bleeding", "d")
    with pytest.raises(SpanError, match="not found$"):
        quote_span(DOC, "Minor bleeding", "d")
    with pytest.raises(SpanError, match="empty"):
        quote_span(DOC, " \n", "d")


def test_a_repeated_quote_must_say_which():
    with pytest.raises(SpanError, match="appears 2 times; pass occurrence="):
        quote_span(DOC, "isk", "d")
    first, second = quote_span(DOC, "isk", "d", occurrence=0), quote_span(DOC, "isk", "d", occurrence=1)
    assert (first["start"], second["start"]) == (DOC.index("isk"), DOC.rindex("isk"))
    with pytest.raises(SpanError, match="occurrence 2 asked, the quote appears 2"):
        quote_span(DOC, "isk", "d", occurrence=2)


@given(st.text(alphabet="ab \n\t.", min_size=1, max_size=40), st.data())
def test_any_unique_substring_is_found_where_it_is(document, data):
    start = data.draw(st.integers(0, len(document) - 1))
    end = data.draw(st.integers(start + 1, len(document)))
    quote = document[start:end]
    assume(quote.strip())
    span = quote_span(document, quote, "x", occurrence=0)
    found = document[span["start"]:span["end"]]
    assert " ".join(found.split()) == " ".join(quote.split())
    assert found == found.strip()  # the span starts and ends on text, not on whitespace


def test_label_is_a_valid_labels_line_that_finds_its_chunks():
    docs = {"1001": DOC}
    label = quote_label("q1", "How often was bleeding?", docs, "1001", "Major bleeding was more frequent", "bleeding")
    parsed = parse_label(json.loads(json.dumps(label)))
    assert parsed.gold_spans == (("1001", 23, 55),) and parsed.reference == "bleeding"
    chunks = {"c1": ("1001", 0, 22), "c2": ("1001", 22, 50), "c3": ("1001", 50, 90)}
    assert gold_ids(parsed, chunks) == ("c2", "c3")


def test_label_checks_the_document_and_the_reference():
    with pytest.raises(SpanError, match="no document '9' among 1"):
        quote_label("q1", "?", {"1001": DOC}, "9", "Risk")
    with pytest.raises(SpanError, match="q1: reference '2.0%' is not inside the quoted span of document 1001"):
        quote_label("q1", "?", {"1001": DOC}, "1001", "Major bleeding was more frequent (1.4% versus 0.9%)", "2.0%")


def test_chapter_seven_labels_can_be_rewritten_from_their_quotes():
    """Every stored label of chapter 7 is what quoting its span's text gives back."""
    docs = {}
    for line in fixture_path("mini_scifact", "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        docs[d["_id"]] = d["text"]
    for line in fixture_path("own_system", "labels.jsonl").read_text(encoding="utf-8").splitlines():
        stored = json.loads(line)
        (span,) = stored["gold_spans"]
        text = docs[span["id"]]
        quote = text[span["start"]:span["end"]]
        occurrence = [i for i in range(len(text)) if text.startswith(quote, i)].index(span["start"])
        label = quote_label(stored["query_id"], stored["query"], docs, span["id"], quote, stored["reference"],
                            occurrence=occurrence)
        assert label == stored, stored["query_id"]
