"""Reading OpenInference attributes off a span: documents, messages, metadata, input, output.

The names are OpenInference's semantic conventions as the LangChain and LlamaIndex
instrumentors write them (checked against spans those instrumentors really produce, in
``tests/integration/test_ingest_frameworks.py``):

* ``retrieval.documents.N.document.{id,score,content,metadata}`` on RETRIEVER spans (the
  metadata as a JSON object, or flattened into ``document.metadata.<key>`` as Phoenix stores it);
  ``reranker.input_documents.N...`` and ``reranker.output_documents.N...`` on RERANKER spans.
  LangChain's instrumentor writes no ``document.id``: the ids are read from the span's
  ``output.value`` JSON (``{"documents": [{"id": ...}]}``) when it has them.
* ``llm.input_messages.N.message.{role,content}`` (chat models) or ``llm.prompts`` (completion
  models) for the prompt; ``llm.output_messages.N.message.content`` or ``output.value`` for
  the answer; ``llm.model_name``.
* ``metadata`` (a JSON object as a string), ``input.value``, ``output.value``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple

import orjson

from .memo import IngestCache, remember
from .spans import Span, SpanError

__all__ = ["Document", "documents", "metadata", "prompt_text", "answer_text", "json_or_none", "postprocessor_ids",
           "AttributeGroups", "attribute_groups", "LISTS", "indexed_items", "flat_metadata"]


class Document(NamedTuple):
    """One document of a span's list: id may be None (then the caller derives one)."""

    id: str | None
    score: float | None
    content: str
    metadata: dict[str, Any]


def json_or_none(value: Any) -> Any:
    """``value`` decoded when it is a JSON object or array in a string; else None."""
    if isinstance(value, (dict, list)):
        return value
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    return None


def _list_item(key: str, dotted: str) -> tuple[str, str] | None:
    """``(N, suffix)`` of a key ``<prefix>.N.suffix`` (``dotted`` is the prefix and its dot), N
    as the digits written; None for any other key."""
    if key.startswith(dotted):
        index, _, rest = key[len(dotted):].partition(".")
        if rest and index.isdigit():
            return index, rest
    return None


def indexed_items(attrs: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``{N: {suffix: value}}`` for every key ``prefix.N.suffix``: one scan of the attributes, the
    reference that :func:`attribute_groups` (one pass for every list) is tied to by a property test."""
    out: dict[int, dict[str, Any]] = {}
    dotted = prefix + "."
    for key, value in attrs.items():
        found = _list_item(key, dotted)
        if found is not None:
            digits, rest = found
            if not digits.isdecimal():  # digits int() does not read ("²"): the item cannot be placed
                raise SpanError(f"{digits!r} is no list index", field=key)
            index = int(digits)
            item = out.get(index)
            if item is None:
                item = out[index] = {}
            item[rest] = value
    return out


#: The lists OpenInference spreads over indexed keys ``<prefix>.N.<field>``: documents and messages.
LISTS = ("retrieval.documents", "reranker.input_documents", "reranker.output_documents",
         "llm.input_messages", "llm.output_messages")
_FLAT_METADATA = "metadata."  # a frame that flattened the metadata object: ``metadata.<key>``


class AttributeGroups(NamedTuple):
    """A span's attributes sorted, in one pass, into the groups the readers below look for.

    Each reader scanned a span's flat attributes for its own keys, and a request's spans are
    read by several of them (metadata, documents, prompt, answer): a retriever span with ten
    documents had its thirty-odd keys scanned twice, each key split again each time. Read once
    into these groups (each key split once, and its place remembered, since the same keys come
    back span after span), each reader looks its part up. :func:`attribute_groups` gives exactly
    what the scans give (``tests/conformance/test_attribute_groups.py`` checks it on generated keys).
    """

    lists: dict[str, dict[int, dict[str, Any]]]  # prefix -> indexed_items(attributes, prefix), prefixes present
    metadata: list[tuple[str, Any]]  # flat_metadata(attributes)


# Where a key goes: (its list item's slot, the field) or (None, the metadata key); () nowhere. A
# slot is ``(a prefix of LISTS, the index)``, one object for all the keys of one item.
_Place = tuple[Any, ...]
_NO_SLOT = object()
# A NamedTuple made from its values in C: its own __new__ is a Python function, called for every
# span (AttributeGroups) and every document (Document)
_tuple_new = tuple.__new__


def _place(key: str, cache: IngestCache) -> _Place:
    """Where ``key`` goes, by the rules of :func:`indexed_items` and :func:`flat_metadata`; the index
    is -1 for digits that ``int`` refuses (``"²"``), where the scan raises. Kept in ``cache``."""
    slots = cache.slots
    place: _Place = ()
    if key.startswith(_FLAT_METADATA):
        place = (None, key[len(_FLAT_METADATA):])
    for prefix in LISTS:
        found = _list_item(key, prefix + ".")
        if found is not None:
            digits, field = found
            slot = (prefix, int(digits) if digits.isdecimal() else -1)
            place = (slots.get(slot) or remember(slots, slot, slot), field)
    return remember(cache.places, key, place)


def attribute_groups(attributes: Mapping[str, Any], cache: IngestCache | None = None) -> AttributeGroups | None:
    """The :class:`AttributeGroups` of a span's attributes; None when a list index is digits
    that ``int`` refuses: then the readers scan, and raise where the scan raises. ``cache``: the
    ingest's memos (the keys' places are remembered there; a fresh one when not given)."""
    if cache is None:
        cache = IngestCache()
    lists: dict[str, dict[int, dict[str, Any]]] = {}
    flat: list[tuple[str, Any]] = []
    places = cache.places
    last: object = _NO_SLOT  # the slot of the item filled last: an item's keys come one after another
    item: dict[str, Any] = {}
    for key, value in attributes.items():
        place = places.get(key)
        if place is None:
            place = _place(key, cache)
        if not place:
            continue
        slot, field = place
        if slot is last:
            item[field] = value
            continue
        if slot is None:
            flat.append((field, value))
            continue
        prefix, index = slot
        if index < 0:
            return None
        items = lists.get(prefix)
        if items is None:
            items = lists[prefix] = {}
        item = items.get(index)
        if item is None:
            item = items[index] = {}
        item[field] = value
        last = slot
    return _tuple_new(AttributeGroups, (lists, flat))


def _items(span: Span, prefix: str, groups: AttributeGroups | None) -> dict[int, dict[str, Any]]:
    """:func:`indexed_items` of the span's attributes, looked up in its groups when they were read."""
    return indexed_items(span.attributes, prefix) if groups is None else groups.lists.get(prefix, {})


def flat_metadata(attrs: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(key, value)`` of every attribute ``metadata.<key>``, in order: the reference for the
    metadata :func:`attribute_groups` collects."""
    return [(key[len(_FLAT_METADATA):], v) for key, v in attrs.items() if key.startswith(_FLAT_METADATA)]


def _output_ids(span: Span) -> list[str] | None:
    """Document ids from ``output.value`` (``{"documents": [{"id": ...}]}`` or a list of such)."""
    out = json_or_none(span.attributes.get("output.value"))
    if isinstance(out, dict):
        out = out.get("documents")
    if not isinstance(out, list) or not out:
        return None
    ids = [d.get("id") if isinstance(d, dict) else None for d in out]
    return [str(i) for i in ids] if all(isinstance(i, (str, int)) and i != "" for i in ids) else None


def _metadata_object(value: Any, memo: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A document's metadata as a new dict: the object, or the JSON object in a string; {} otherwise.
    ``memo`` keeps decoded texts with only scalar values: a corpus's chunks come back request
    after request, each with the same metadata text."""
    if type(value) is str:
        known = memo.get(value)
        if known is not None:
            return dict(known)
    decoded = value if isinstance(value, dict) else json_or_none(value)
    if not isinstance(decoded, dict):
        return {}
    if type(value) is str and not any(type(v) is dict or type(v) is list for v in decoded.values()):
        remember(memo, value, decoded)  # scalars only: the copy handed out shares nothing mutable
    return dict(decoded)


_DOCUMENT_FIELDS = frozenset({"document.id", "document.score", "document.content", "document.metadata"})


def documents(span: Span, prefix: str = "retrieval.documents", groups: AttributeGroups | None = None,
              cache: IngestCache | None = None) -> list[Document] | None:
    """The span's documents under ``prefix`` in rank order; None when it lists none. ``groups``:
    the span's :func:`attribute_groups`, when read; ``cache``: the ingest's memos."""
    items = _items(span, prefix, groups)
    if not items:
        return None
    memo = (cache or IngestCache()).metadata
    docs = []
    for index in sorted(items):
        item = items[index]
        raw_id = item.get("document.id")
        score = item.get("document.score")
        meta = _metadata_object(item.get("document.metadata"), memo)
        if not _DOCUMENT_FIELDS.issuperset(item):
            for key, value in item.items():  # Phoenix flattens the object: document.metadata.<key>
                if key.startswith("document.metadata."):
                    meta.setdefault(key[len("document.metadata."):], value)
        if score is not None and type(score) is not float:
            score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
        # id, score, content, metadata
        docs.append(_tuple_new(Document, (None if raw_id is None or raw_id == "" else str(raw_id), score,
                                          str(item.get("document.content") or ""), meta)))
    if prefix == "retrieval.documents" and all(d.id is None for d in docs):
        ids = _output_ids(span)
        if ids is not None and len(ids) == len(docs):
            docs = [d._replace(id=i) for d, i in zip(docs, ids)]
    return docs


_NODE_ID = re.compile(r"id_=([^,)\s]+)")


def postprocessor_ids(span: Span) -> list[str] | None:
    """Node ids a LlamaIndex node postprocessor returned (its CHAIN span's ``output.value`` lists
    ``<NodeWithScore(node=TextNode(id_=...), score=...)>``); None if it lists none."""
    out = json_or_none(span.attributes.get("output.value"))
    if not isinstance(out, list):
        return None
    ids = [m.group(1) for item in out if isinstance(item, str) for m in [_NODE_ID.search(item)] if m]
    return ids if len(ids) == len(out) else None


def metadata(span: Span, groups: AttributeGroups | None = None) -> dict[str, Any]:
    """The span's ``metadata`` object (a JSON string in OTLP, an object in Phoenix exports), with
    the keys of a frame that flattened it (``metadata.<key>``) where the object has none."""
    raw = span.attributes.get("metadata")
    value = raw if isinstance(raw, dict) else json_or_none(raw)
    out = dict(value) if isinstance(value, dict) else {}
    for key, v in flat_metadata(span.attributes) if groups is None else groups.metadata:
        out.setdefault(key, v)
    return out


def _strings(value: Any) -> list[str]:
    """Every string leaf of a decoded JSON value, in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def prompt_text(span: Span, groups: AttributeGroups | None = None) -> str | None:
    """What an LLM span was sent: its input messages, else its prompts, else ``input.value``."""
    attrs = span.attributes
    messages = _items(span, "llm.input_messages", groups)
    if messages:
        return "\n".join(str(m.get("message.content") or "") for _, m in sorted(messages.items()))
    prompts = attrs.get("llm.prompts")
    if prompts:
        return "\n".join(_strings(list(prompts) if isinstance(prompts, tuple) else prompts))
    value = attrs.get("input.value")
    if value is None:
        return None
    decoded = json_or_none(value)
    return "\n".join(_strings(decoded)) if decoded is not None else str(value)


def answer_text(span: Span, groups: AttributeGroups | None = None) -> str | None:
    """What an LLM span answered: the last output message, else ``output.value``."""
    messages = _items(span, "llm.output_messages", groups)
    if messages:
        return str(messages[max(messages)].get("message.content") or "")
    value = span.attributes.get("output.value")
    if value is None:
        return None
    return str(value)
