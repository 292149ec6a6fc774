"""OpenLLMetry (``traceloop-sdk``, ``opentelemetry-instrumentation-*``) read as the neutral span form.

OpenLLMetry writes the GenAI conventions (:mod:`.genai`) and its own ``traceloop.*`` keys:
``traceloop.span.kind`` (``workflow``, ``task``), ``traceloop.entity.input`` and
``traceloop.entity.output`` (JSON text: a retriever's output is ``{"documents": [{page_content,
metadata}]}``), and the request's metadata as ``traceloop.association.properties.<key>``: both
``Traceloop.set_association_properties({...})`` and LangChain's ``config={"metadata": {...}}``
put a question id there. Retriever spans are ``vector_db_retrieve`` operations; a LangChain
compression retriever and its base retriever are both retriever spans (the wrapper's shorter
list is read as the ranking step), the compressor itself has no span.
"""

from __future__ import annotations

from typing import Any, Mapping

from .genai import put_documents, read_genai
from .openinference import json_or_none

__all__ = ["is_openllmetry", "read_openllmetry", "ASSOCIATION"]

#: The prefix of the request metadata OpenLLMetry puts on every span of a request.
ASSOCIATION = "traceloop.association.properties."


def is_openllmetry(attrs: Mapping[str, Any]) -> bool:
    return "traceloop.span.kind" in attrs or "traceloop.entity.name" in attrs or any(
        k.startswith(ASSOCIATION) for k in attrs)


def _documents(output: Any) -> list[Mapping[str, Any]] | None:
    decoded = json_or_none(output)
    if isinstance(decoded, Mapping):
        decoded = decoded.get("documents")
    if not isinstance(decoded, list):
        return None
    return [d for d in decoded if isinstance(d, Mapping)]


def read_openllmetry(attrs: Mapping[str, Any], out: dict[str, Any]) -> str:
    """Put what an OpenLLMetry span says into ``out`` (flat OpenInference keys); its span kind."""
    kind = read_genai(attrs, out)
    entity_in, entity_out = attrs.get("traceloop.entity.input"), attrs.get("traceloop.entity.output")
    if kind == "RETRIEVER" and not any(k.startswith("retrieval.documents.") for k in out):
        docs = _documents(entity_out)
        if docs is not None:
            put_documents(out, docs)
        query = json_or_none(entity_in)
        if isinstance(query, Mapping) and isinstance(query.get("query"), str):
            out["input.value"] = query["query"]
    elif kind != "LLM":
        if entity_in is not None:
            decoded = json_or_none(entity_in)
            inputs = decoded.get("inputs") if isinstance(decoded, Mapping) else None
            out["input.value"] = inputs if isinstance(inputs, str) else str(entity_in)
        if entity_out is not None:
            out["output.value"] = str(entity_out)
    meta = {k[len(ASSOCIATION):]: v for k, v in attrs.items() if k.startswith(ASSOCIATION)}
    if meta:
        out["metadata"] = meta
    return kind
