"""The OpenTelemetry GenAI conventions (``gen_ai.*``) read as the neutral span form.

The conventions (status Development) name an operation per span, ``gen_ai.operation.name``:
``chat``, ``text_completion`` and ``generate_content`` are model calls, ``retrieval`` a search
whose documents are ``gen_ai.retrieval.documents`` (JSON text: each with ``id`` and ``score``,
``content`` optional), ``execute_tool`` and ``invoke_agent`` the rest. A model call's prompt is
``gen_ai.system_instructions`` (a list of parts) followed by ``gen_ai.input.messages`` (each a
role and a list of parts, a part ``{"type": "text", "content": ...}``), its answer the text parts
of ``gen_ai.output.messages``, its model ``gen_ai.response.model`` (else ``gen_ai.request.model``).
An instrumentation may record fewer documents than the search returned (OpenLIT writes the first
three and their count, ``gen_ai.retrieval.document_count``): how many are missing is kept as
:data:`UNRECORDED`, so that a gold document among them is not read as a retrieval loss.

The neutral form is the one every reader gives (:mod:`.spans`): a span kind and the flat
OpenInference keys the request reader looks up, so one reader serves every convention.
"""

from __future__ import annotations

from typing import Any, Mapping

from .openinference import json_or_none

__all__ = ["KIND_OF_OPERATION", "UNRECORDED", "is_genai", "read_genai", "message_texts", "genai_documents"]

#: ``gen_ai.operation.name`` -> the span kind it stands for (OpenLLMetry's ``vector_db_retrieve`` too).
KIND_OF_OPERATION = {"chat": "LLM", "text_completion": "LLM", "generate_content": "LLM", "retrieval": "RETRIEVER",
                     "vector_db_retrieve": "RETRIEVER", "embeddings": "EMBEDDING", "execute_tool": "TOOL",
                     "invoke_agent": "AGENT", "create_agent": "AGENT", "execute_task": "CHAIN"}
_UNKNOWN_MODELS = ("", "unknown")
#: The neutral form's key for the documents a retrieval returned beyond those its span records.
UNRECORDED = "ragstage.retrieval.unrecorded"


def is_genai(attrs: Mapping[str, Any]) -> bool:
    return "gen_ai.operation.name" in attrs


def _parts_text(parts: Any) -> str:
    """The text of a message's parts (``[{"type": "text", "content": ...}]``), or a plain content."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return ""
    return "\n".join(str(p.get("content") or "") for p in parts
                     if isinstance(p, Mapping) and p.get("type", "text") == "text")


def message_texts(value: Any) -> list[tuple[str, str]]:
    """``(role, text)`` of each message in a ``gen_ai.*.messages`` value (JSON text or decoded);
    a message may carry ``parts`` or, in older instrumentations, ``content``."""
    decoded = json_or_none(value)
    if not isinstance(decoded, list):
        return []
    out = []
    for message in decoded:
        if isinstance(message, Mapping):
            parts = message.get("parts", message.get("content"))
            out.append((str(message.get("role") or ""), _parts_text(parts)))
    return out


def genai_documents(value: Any) -> list[Mapping[str, Any]] | None:
    """The documents of ``gen_ai.retrieval.documents`` (a JSON list of objects); None if absent."""
    decoded = json_or_none(value)
    if not isinstance(decoded, list):
        return None
    return [d for d in decoded if isinstance(d, Mapping)]


def put_documents(out: dict[str, Any], docs: Any, prefix: str = "retrieval.documents") -> None:
    """Documents (``id``, ``score``, ``content`` or LangChain's ``page_content``, ``metadata``, a
    score in which wins) as flat keys; anything but a list of objects puts none."""
    if not isinstance(docs, list):
        return
    for i, doc in enumerate(docs):
        if not isinstance(doc, Mapping):
            continue
        key = f"{prefix}.{i}.document."
        content = doc.get("page_content", doc.get("content"))
        if content is not None:
            out[key + "content"] = str(content)
        if doc.get("id") not in (None, ""):
            out[key + "id"] = str(doc["id"])
        meta = doc.get("metadata")
        if isinstance(meta, Mapping):
            out[key + "metadata"] = dict(meta)
            score = meta.get("score", doc.get("score"))
        else:
            score = doc.get("score")
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            out[key + "score"] = float(score)


def read_genai(attrs: Mapping[str, Any], out: dict[str, Any]) -> str:
    """Put what a ``gen_ai.*`` span says into ``out`` (flat OpenInference keys); its span kind."""
    operation = str(attrs.get("gen_ai.operation.name") or "")
    kind = KIND_OF_OPERATION.get(operation, "CHAIN")
    if kind == "LLM":
        instructions = attrs.get("gen_ai.system_instructions")
        system = _parts_text(json_or_none(instructions) if instructions is not None else None)
        messages = message_texts(attrs.get("gen_ai.input.messages"))
        if system:
            messages = [("system", system), *messages]
        for i, (role, text) in enumerate(messages):
            out[f"llm.input_messages.{i}.message.role"] = role
            out[f"llm.input_messages.{i}.message.content"] = text
        answers = message_texts(attrs.get("gen_ai.output.messages"))
        if answers:
            out["llm.output_messages.0.message.content"] = answers[-1][1]
        model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
        if model is not None and str(model) not in _UNKNOWN_MODELS:
            out["llm.model_name"] = str(model)
    elif kind == "RETRIEVER":
        docs = genai_documents(attrs.get("gen_ai.retrieval.documents"))
        if docs is not None:
            put_documents(out, docs)
        count = attrs.get("gen_ai.retrieval.document_count")
        if isinstance(count, str) and count.isdecimal():
            count = int(count)
        if isinstance(count, int) and not isinstance(count, bool) and count > len(docs or ()):
            out[UNRECORDED] = count - len(docs or ())
        query = attrs.get("gen_ai.retrieval.query.text")
        if query is not None:
            out["input.value"] = str(query)
    return kind
