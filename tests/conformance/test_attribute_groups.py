"""A span's attributes read once into groups, against the scans each reader makes of them.

:func:`ragstage.ingest.openinference.attribute_groups` is a second way to find a span's indexed
lists (``retrieval.documents.N.<field>``...) and flattened metadata (``metadata.<key>``), kept
only because it is faster: one pass over the keys instead of one per reader. Attributes are
generated from the keys the conventions use and from near misses (an index of ``01``, ``٣`` or
``²``, a prefix without its dot, a missing field, any text); for each, the groups must hold
exactly what the scans find, in the same order, or be None (then the readers scan), and every
reader must give the same result (or raise the same error) with the groups as without.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.ingest import openinference as oi
from ragstage.ingest.memo import MEMO_SIZE, IngestCache, remember
from ragstage.ingest.spans import Span

prefixes = st.sampled_from([*oi.LISTS, "metadata", "llm.prompts", "retrieval", "retrieval.documentsX", "llm", ""])
indexes = st.sampled_from(["0", "1", "2", "01", "10", "٣", "²", "x", "", "-1"])
fields = st.sampled_from(["document.id", "document.score", "document.content", "document.metadata",
                          "document.metadata.source", "document.metadata.start_index", "message.content",
                          "message.role", "source", "a.b", ""])


@st.composite
def keys(draw: Any) -> str:
    """A key as the conventions write it, or a near miss."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=12))
    parts = [draw(prefixes), draw(indexes), draw(fields)]
    return ".".join(parts[:draw(st.integers(1, 3))])


values = st.one_of(st.text(max_size=6), st.integers(-3, 3), st.floats(allow_nan=False), st.booleans(), st.none(),
                   st.just('{"source": "a", "start_index": 3}'), st.just('["x"]'),
                   st.just({"source": "b"}), st.just([{"id": "d1"}]))


@st.composite
def attributes(draw: Any) -> dict[str, Any]:
    """Attributes of generated keys; some keys get a twin naming the same item and field
    (``.01.`` beside ``.1.``), which the scan reads as one (the later value wins)."""
    attrs = draw(st.dictionaries(keys(), values, max_size=12))
    for key in list(attrs):
        parts = key.split(".")
        digits = [i for i, part in enumerate(parts) if part.isdecimal()]
        if digits and draw(st.booleans()):
            parts[digits[0]] = "0" + parts[digits[0]]
            attrs[".".join(parts)] = draw(values)
    return attrs


def _outcome(read: Any, *args: Any) -> Any:
    """What ``read(*args)`` gives, or the error it raises (type and message)."""
    try:
        return ("ok", read(*args))
    except Exception as exc:  # noqa: BLE001 -- whatever the scan raises, the groups must raise alike
        return ("raised", type(exc), str(exc))


def _ordered(lists: dict[int, dict[str, Any]]) -> list[tuple[int, list[tuple[str, Any]]]]:
    """An indexed list with the order of its items and fields (dict equality ignores order)."""
    return [(n, list(item.items())) for n, item in lists.items()]


_WARM = IngestCache()  # one ingest's memos, kept across examples as across a file's spans


@settings(max_examples=1500, deadline=None)
@given(attributes(), st.booleans())
def test_the_groups_hold_what_the_scans_find(attrs, warm):
    # a key's place worked out afresh, or remembered from an earlier span
    groups = oi.attribute_groups(attrs, _WARM if warm else IngestCache())
    scans = {prefix: _outcome(lambda p: _ordered(oi.indexed_items(attrs, p)), prefix) for prefix in oi.LISTS}
    if groups is None:  # only when some scan raises (an index of digits int() refuses)
        assert any(outcome[0] == "raised" for outcome in scans.values())
        return
    for prefix in oi.LISTS:
        assert scans[prefix] == ("ok", _ordered(groups.lists.get(prefix, {})))
    assert groups.metadata == oi.flat_metadata(attrs)


@settings(max_examples=1000, deadline=None)
@given(attributes(), st.sampled_from(["RETRIEVER", "RERANKER", "LLM", "CHAIN"]))
def test_every_reader_reads_the_same_from_the_groups(attrs, kind):
    span = Span("t" * 32, "s" * 16, None, "span", 0, 1, {"openinference.span.kind": kind, **attrs})
    groups = oi.attribute_groups(span.attributes)
    readers = [lambda g, prefix=prefix: oi.documents(span, prefix, g) for prefix in
               ("retrieval.documents", "reranker.input_documents", "reranker.output_documents")]
    readers += [lambda g: oi.metadata(span, g), lambda g: oi.prompt_text(span, g), lambda g: oi.answer_text(span, g)]
    for read in readers:
        assert _outcome(read, groups) == _outcome(read, None)


def test_the_places_remembered_stay_bounded():
    cache = IngestCache()
    oi.attribute_groups({f"metadata.k{i}": i for i in range(MEMO_SIZE + 10)}, cache)
    assert 0 < len(cache.places) <= MEMO_SIZE


def test_an_ingest_keeps_its_memos_to_itself():
    """Two ingests in one process share no memo: what one learned is not in the other's cache."""
    from ragstage.ingest.requests import read_request

    span = Span("t" * 32, "s" * 16, None, "retrieve", 0, 1, {
        "openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.content": "some passage text",
        "retrieval.documents.0.document.metadata": '{"source": "a"}'})
    first, second = IngestCache(), IngestCache()
    read_request("t" * 32, [span], cache=first)
    assert first.places and first.passages and first.metadata
    assert not (second.places or second.passages or second.metadata)


def test_a_memo_keeps_what_it_is_given_and_is_emptied_when_full():
    memo: dict[int, str] = {}
    assert [remember(memo, k, str(k), size=3) for k in range(3)] == ["0", "1", "2"]
    assert memo == {0: "0", 1: "1", 2: "2"}
    assert remember(memo, 3, "3", size=3) == "3" and memo == {3: "3"}  # full: emptied, then kept
