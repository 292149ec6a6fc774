"""Spans from MLflow Tracing: ``Trace`` objects, ``Trace.to_json()``, ``search_traces`` frames.

MLflow writes its own span attributes, each value JSON-encoded as text: ``mlflow.spanType``
(``RETRIEVER``, ``RERANKER``, ``CHAT_MODEL``, ``LLM``, ``CHAIN``...), ``mlflow.spanInputs`` and
``mlflow.spanOutputs``. A RETRIEVER span's outputs are a list of ``{page_content, metadata,
id}``; a CHAT_MODEL or LLM span's inputs hold ``messages`` (or LangChain's message lists) and
its outputs ``choices`` (or LangChain's ``generations``). Each span becomes a :class:`Span` with
the OpenInference keys the rest of the ingest reads; the trace's metadata (``trace_metadata``,
where ``mlflow.update_current_trace(metadata=...)`` puts a ``query_id``), a span's own
attributes and the keys of its ``metadata`` attribute (LangChain's run metadata, passed as
``config={"metadata": {...}}``, which ``mlflow.langchain.autolog()`` records as JSON text on every
span) become its ``metadata``. Ids are base64 in MLflow's JSON and hex here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import orjson

from .genai import put_documents
from .spans import ERROR_STATUS_NAMES, Span, SpanError, hex_id

__all__ = ["from_mlflow", "trace_spans", "span_from_dict", "KIND_OF_SPAN_TYPE"]

#: MLflow span types -> OpenInference span kinds.
KIND_OF_SPAN_TYPE = {"RETRIEVER": "RETRIEVER", "RERANKER": "RERANKER", "CHAT_MODEL": "LLM", "LLM": "LLM",
                     "CHAIN": "CHAIN", "AGENT": "AGENT", "TOOL": "TOOL", "EMBEDDING": "EMBEDDING",
                     "PARSER": "CHAIN", "UNKNOWN": "CHAIN"}
_OWN = ("mlflow.", "openinference.", "gen_ai.")


def _text(value: Any) -> Any:
    """An MLflow attribute value: JSON text decoded; anything else as it is."""
    if isinstance(value, (bytes, str)):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _id(value: Any, digits: int, name: str) -> str:
    """A hex id from MLflow's base64 (or hex; a ``tr-`` request id prefix dropped)."""
    if isinstance(value, str) and value.startswith("tr-"):
        value = value[3:]
    return hex_id(value, digits, name)


def _documents(prefix: str, docs: Any) -> dict[str, Any]:
    """A span's documents (``{page_content, metadata, id}``, the score in the metadata) as flat keys."""
    out: dict[str, Any] = {}
    put_documents(out, docs, prefix)
    return out


def _messages(value: Any) -> list[Mapping[str, Any]]:
    """Chat messages from a model span's inputs: ``{"messages": [...]}``, a list of messages, or
    LangChain's list of message lists."""
    if isinstance(value, Mapping):
        value = value.get("messages", value.get("input"))
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        value = [m for batch in value for m in batch]
    if isinstance(value, list) and all(isinstance(m, Mapping) and "content" in m for m in value):
        return value
    return []


def _answer(value: Any) -> str | None:
    """The answer in a model span's outputs: ``choices``, LangChain ``generations``, a message, or text."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return None
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[-1], Mapping):
        message = choices[-1].get("message") or {}
        return str(message.get("content") if isinstance(message, Mapping) else choices[-1].get("text") or "")
    generations = value.get("generations")
    if isinstance(generations, list) and generations:
        last = generations[-1][-1] if isinstance(generations[-1], list) and generations[-1] else generations[-1]
        if isinstance(last, Mapping):
            return str(last.get("text") or (last.get("message") or {}).get("content") or "")
    if "content" in value:
        return str(value["content"])
    return None


def span_from_dict(raw: Mapping[str, Any], trace_meta: Mapping[str, Any]) -> Span:
    """One span from MLflow's span dict (``Span.to_dict()``), with the trace's metadata for a root."""
    if not isinstance(raw, Mapping):
        raise SpanError(f"an MLflow span must be an object, got {type(raw).__name__}", field="spans")
    attrs_in = raw.get("attributes") or {}
    if not isinstance(attrs_in, Mapping):
        raise SpanError("'attributes' must be an object", field="attributes")
    attrs = {k: _text(v) for k, v in attrs_in.items()}
    span_type = str(attrs.get("mlflow.spanType") or "UNKNOWN").upper()
    kind = KIND_OF_SPAN_TYPE.get(span_type, span_type)
    inputs, outputs = attrs.get("mlflow.spanInputs"), attrs.get("mlflow.spanOutputs")
    out: dict[str, Any] = {"openinference.span.kind": kind, "mlflow.spanType": span_type}
    if inputs is not None:
        out["input.value"] = inputs if isinstance(inputs, str) else orjson.dumps(inputs).decode()
    if outputs is not None:
        out["output.value"] = outputs if isinstance(outputs, str) else orjson.dumps(outputs).decode()
    if kind == "RETRIEVER":
        out.update(_documents("retrieval.documents", outputs))
    elif kind == "RERANKER":
        out.update(_documents("reranker.output_documents", outputs))
        docs_in = inputs.get("documents") if isinstance(inputs, Mapping) else None
        out.update(_documents("reranker.input_documents", docs_in))
    elif kind == "LLM":
        for i, m in enumerate(_messages(inputs)):
            out[f"llm.input_messages.{i}.message.content"] = str(m.get("content") or "")
            out[f"llm.input_messages.{i}.message.role"] = str(m.get("role") or m.get("type") or "")
        answer = _answer(outputs)
        if answer is not None:
            out["llm.output_messages.0.message.content"] = answer
        model = attrs.get("mlflow.llm.model")
        if model is not None:
            out["llm.model_name"] = str(model)
    meta = {k: v for k, v in attrs.items() if not k.startswith(_OWN) and k != "metadata"}
    run_meta = attrs.get("metadata")  # LangChain's run metadata (config={"metadata": ...}), as autolog records it
    if isinstance(run_meta, Mapping):
        meta = {**run_meta, **meta}
    elif run_meta is not None:
        meta["metadata"] = run_meta
    if raw.get("parent_span_id") is None:
        meta = {**{k: v for k, v in trace_meta.items() if not k.startswith("mlflow.")}, **meta}
    if meta:
        out["metadata"] = meta
    status = raw.get("status") or {}
    if not isinstance(status, Mapping):
        raise SpanError(f"a status must be an object, got {status!r:.40}", field="status")
    error = None
    if str(status.get("code") or "").upper() in ERROR_STATUS_NAMES:
        error = str(status.get("message") or "")
        if not error:
            for event in raw.get("events") or ():
                if isinstance(event, Mapping) and event.get("name") == "exception":
                    ev = event.get("attributes") or {}
                    error = str(ev.get("exception.message") or ev.get("exception.type") or "")
                    break
    parent = raw.get("parent_span_id")
    try:
        start, end = int(raw.get("start_time_unix_nano") or 0), int(raw.get("end_time_unix_nano") or 0)
    except (TypeError, ValueError):
        raise SpanError("span times must be integers (Unix nanoseconds)", field="start_time_unix_nano") from None
    return Span(trace_id=_id(raw.get("trace_id"), 32, "trace_id"), span_id=_id(raw.get("span_id"), 16, "span_id"),
                parent_id=_id(parent, 16, "parent_span_id") if parent else None, name=str(raw.get("name") or ""),
                start_ns=start, end_ns=end, attributes=out, error=error)


def trace_spans(trace: Any) -> list[Span]:
    """The spans of one MLflow trace: a ``Trace`` object, its ``to_dict()``, or its JSON text."""
    if hasattr(trace, "to_dict") and hasattr(trace, "info"):
        trace = trace.to_dict()
    elif isinstance(trace, (str, bytes)):
        try:
            trace = orjson.loads(trace)
        except orjson.JSONDecodeError as exc:
            raise SpanError(f"an MLflow trace that is not JSON ({exc})", field="trace") from None
    if not isinstance(trace, Mapping) or not isinstance(trace.get("data"), Mapping):
        raise SpanError('expected an MLflow trace {"info": ..., "data": {"spans": [...]}}', field="data")
    info = trace.get("info") or {}
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    spans = trace["data"].get("spans")
    if not isinstance(spans, list):
        raise SpanError("an MLflow trace's data.spans must be a list", field="data.spans")
    return [span_from_dict(s, meta if isinstance(meta, Mapping) else {}) for s in spans]


def _frame_spans(frame: Any, where: str) -> Iterator[Span]:
    if "trace" in frame.columns:
        for row, value in enumerate(frame["trace"], start=1):
            try:
                yield from trace_spans(value)
            except SpanError as exc:
                raise SpanError(exc.detail, path=where, line=row, field=exc.field or "trace") from None
        return
    if "spans" not in frame.columns:
        raise SpanError("not an MLflow search_traces frame: no 'trace' or 'spans' column", path=where, field="spans")
    metas = frame["trace_metadata"] if "trace_metadata" in frame.columns else [None] * len(frame)
    for row, (spans, meta) in enumerate(zip(frame["spans"], metas), start=1):
        spans = spans.tolist() if hasattr(spans, "tolist") else spans
        try:
            yield from trace_spans({"info": {"trace_metadata": meta or {}}, "data": {"spans": list(spans)}})
        except SpanError as exc:
            raise SpanError(exc.detail, path=where, line=row, field=exc.field) from None


def read_mlflow_json(path: str | Path) -> Iterator[Span]:
    """Spans from ``Trace.to_json()`` lines (or one JSON list of traces); errors name the line."""
    from .export_kinds import read_json_values

    for _, spans in read_json_values(path, trace_spans):
        yield from spans


def from_mlflow(source: Any) -> Iterator[Span]:
    """Spans from MLflow: a ``search_traces`` DataFrame, a list of ``Trace`` objects (or their
    dicts), a path to ``Trace.to_json()`` lines, or a path to a saved frame (``.parquet``)."""
    if isinstance(source, (str, Path)):
        if Path(source).is_dir() or str(source).endswith(".parquet"):
            from .export_kinds import read_frame

            return _frame_spans(read_frame(Path(source)), str(source))
        return read_mlflow_json(source)
    if type(source).__name__ == "DataFrame":
        return _frame_spans(source, "<MLflow DataFrame>")
    return (s for trace in _as_list(source) for s in trace_spans(trace))


def _as_list(source: Iterable[Any] | Any) -> list[Any]:
    return [source] if hasattr(source, "info") else list(source)
