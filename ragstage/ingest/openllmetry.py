"""OpenLLMetry (``traceloop-sdk``, ``opentelemetry-instrumentation-*``) read as the neutral span form.

OpenLLMetry writes the GenAI conventions (:mod:`.genai`) and its own ``traceloop.*`` keys:
``traceloop.span.kind`` (``workflow``, ``task``), ``traceloop.entity.input`` and
``traceloop.entity.output`` (JSON text: a retriever's output is ``{"documents": [{page_content,
metadata}]}``), and the request's metadata as ``traceloop.association.properties.<key>``: both
``Traceloop.set_association_properties({...})`` and LangChain's ``config={"metadata": {...}}``
put a question id there. Retriever spans are ``vector_db_retrieve`` operations; a LangChain
compression retriever and its base retriever are both retriever spans (the wrapper's shorter
list is read as the ranking step), the compressor itself has no span.

OpenLLMetry's LlamaIndex instrumentor writes no operation names: every step is a span
``<Class>.task`` whose ``traceloop.entity.input`` holds the call's arguments and whose
``traceloop.entity.output`` its result, so the step is told by the shapes LlamaIndex's objects
take there (:func:`read_llamaindex_task`): a list of ``NodeWithScore`` (each JSON text
``{"node": {"id_", "text", "metadata"}, "score"}``) returned for a query is a retriever's, and
returned for a list of nodes a postprocessor's (a ranking step); a ``CompletionResponse``
(``{"text", "raw", ...}``) returned for a prompt is a model call (the ``predict`` span around it
carries only ``gen_ai.output.messages``).
"""

from __future__ import annotations

from typing import Any, Mapping

from .genai import message_texts, put_documents, read_genai
from .openinference import json_or_none

__all__ = ["is_openllmetry", "read_openllmetry", "read_llamaindex_task", "ASSOCIATION"]

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


#: The argument names of a LlamaIndex retriever's query (``retrieve``, ``_retrieve``).
_LLAMAINDEX_QUERY_ARGS = ("str_or_query_bundle", "query_bundle")


def _nodes(value: Any) -> list[dict[str, Any]] | None:
    """``NodeWithScore`` objects as documents (``id``, ``content``, ``metadata``, ``score``); None
    unless ``value`` is a list of them (each a JSON text or an object with a ``node``)."""
    if not isinstance(value, list):
        return None
    docs = []
    for item in value:
        item = json_or_none(item) if isinstance(item, str) else item
        node = item.get("node") if isinstance(item, Mapping) else None
        if not isinstance(node, Mapping):
            return None
        docs.append({"id": node.get("id_"), "content": node.get("text"), "metadata": node.get("metadata"),
                     "score": item.get("score")})
    return docs


def _query_text(inputs: Mapping[str, Any]) -> str | None:
    for key in _LLAMAINDEX_QUERY_ARGS:
        query = inputs.get(key)
        if isinstance(query, Mapping):
            query = query.get("query_str")
        if isinstance(query, str):
            return query
    return None


def read_llamaindex_task(attrs: Mapping[str, Any], out: dict[str, Any]) -> str | None:
    """Put what a LlamaIndex step recorded by OpenLLMetry says into ``out``; its span kind, or None
    when its arguments and result have none of the shapes in the module docstring."""
    inputs = json_or_none(attrs.get("traceloop.entity.input"))
    inputs = inputs if isinstance(inputs, Mapping) else {}
    result = json_or_none(attrs.get("traceloop.entity.output"))
    returned = _nodes(result)
    given = _nodes(inputs.get("nodes"))
    if returned is not None and given is not None:  # a node postprocessor: nodes in, nodes out
        put_documents(out, given, "reranker.input_documents")
        put_documents(out, returned, "reranker.output_documents")
        return "RERANKER"
    query = _query_text(inputs)
    if returned is not None and query is not None:
        put_documents(out, returned)
        out["input.value"] = query
        return "RETRIEVER"
    if isinstance(result, Mapping) and "text" in result and "raw" in result:  # a CompletionResponse
        args = inputs.get("args")
        prompt = args[0] if isinstance(args, list) and args else inputs.get("prompt")
        if isinstance(prompt, str):
            out["llm.input_messages.0.message.role"] = "user"
            out["llm.input_messages.0.message.content"] = prompt
        out["llm.output_messages.0.message.content"] = str(result["text"])
        return "LLM"
    if "gen_ai.output.messages" in attrs:  # LlamaIndex's predict: the answer only, around the model call
        answers = message_texts(attrs["gen_ai.output.messages"])
        if answers:
            out["llm.output_messages.0.message.content"] = answers[-1][1]
        return "LLM"
    return None


def read_openllmetry(attrs: Mapping[str, Any], out: dict[str, Any]) -> str:
    """Put what an OpenLLMetry span says into ``out`` (flat OpenInference keys); its span kind."""
    kind = read_genai(attrs, out)
    entity_in, entity_out = attrs.get("traceloop.entity.input"), attrs.get("traceloop.entity.output")
    # LlamaIndex's steps name no operation (a postprocessor may say "rerank")
    unnamed = kind == "CHAIN" and attrs.get("gen_ai.operation.name") in (None, "rerank")
    told = read_llamaindex_task(attrs, out) if unnamed else None
    if told is not None:
        kind = told
    elif kind == "RETRIEVER" and not any(k.startswith("retrieval.documents.") for k in out):
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
