"""One span, whatever it was read from: the OTLP file, a Phoenix export, or the SDK.

Every reader turns its input into :class:`Span` objects with *flat* OpenInference attribute
keys (``retrieval.documents.0.document.id``), so the rest of the ingest reads one shape. The
SDK adapter here duck-types OpenTelemetry's ``ReadableSpan`` instead of importing it:
``import ragstage`` must not pull in OpenTelemetry.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from ..errors import TraceError

__all__ = ["Span", "SpanError", "new_span", "hex_id", "is_error_code", "ERROR_STATUS_NAMES", "from_sdk_spans",
           "flatten_attributes"]


class SpanError(TraceError):
    """Bad span input. Like :class:`~ragstage.trace.TraceError`, it names file, line and field."""


@dataclass(frozen=True)
class Span:
    """The parts of an OpenTelemetry span the ingest reads.

    Ids are lowercase hex (32 digits for a trace, 16 for a span), times are Unix nanoseconds,
    ``error`` is the status message of a span whose status is ERROR (``""`` when it gave
    none) and None otherwise. ``attributes`` uses flat OpenInference keys.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None

    #: The OpenInference span kind (``RETRIEVER``, ``LLM``, ...), upper case; ``""`` if unset. Read
    #: off the attributes when the span is made: every stage of the ingest asks each span for it.
    kind: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _kind(self.attributes))


def _kind(attributes: Mapping[str, Any]) -> str:
    """The OpenInference span kind in ``attributes``, upper case; ``""`` if unset."""
    return str(attributes.get("openinference.span.kind") or "").upper()


_new = object.__new__


def new_span(trace_id: str, span_id: str, parent_id: str | None, name: str, start_ns: int, end_ns: int,
             attributes: Mapping[str, Any], error: str | None) -> Span:
    """``Span(...)`` for readers that make millions of them: the frozen dataclass's ``__init__``
    sets each field through ``object.__setattr__``, which costs more than reading the span."""
    span = _new(Span)
    fields = span.__dict__
    fields["trace_id"], fields["span_id"], fields["parent_id"], fields["name"] = trace_id, span_id, parent_id, name
    fields["start_ns"], fields["end_ns"], fields["attributes"], fields["error"] = start_ns, end_ns, attributes, error
    fields["kind"] = _kind(attributes)
    return span


def hex_id(value: Any, digits: int, name: str) -> str:
    """A hex id; base64 (protobuf's own JSON mapping of bytes) is accepted and converted."""
    if not isinstance(value, str) or not value:
        raise SpanError(f"expected a {digits}-digit hex id, got {value!r:.40}", field=name)
    if len(value) == digits:
        try:
            int(value, 16)
            return value.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) * 2 != digits:
        raise SpanError(f"not a {digits}-digit hex (or base64) id: {value!r:.40}", field=name)
    return raw.hex()


#: The names of a status code of ERROR (OTLP's enum, its short form, the number as text), upper case.
ERROR_STATUS_NAMES = ("STATUS_CODE_ERROR", "ERROR", "2")


def is_error_code(code: Any) -> bool:
    """An OTLP status code of ERROR: the number 2, or one of :data:`ERROR_STATUS_NAMES` in any case."""
    return code == 2 or (isinstance(code, str) and code.upper() in ERROR_STATUS_NAMES)


def _exception_message(events: Iterable[Any]) -> str:
    """The message of the first ``exception`` event: what failed, when the status says nothing."""
    for event in events or ():
        if getattr(event, "name", None) == "exception":
            attrs = getattr(event, "attributes", None) or {}
            return str(attrs.get("exception.message") or attrs.get("exception.type") or "")
    return ""


def from_sdk_spans(spans: Iterable[Any]) -> Iterator[Span]:
    """Spans from the OpenTelemetry SDK (``ReadableSpan``: e.g. an ``InMemorySpanExporter``'s)."""
    for s in spans:
        ctx = s.context
        status = s.status
        error = None
        if getattr(status.status_code, "name", str(status.status_code)) == "ERROR":
            error = status.description or _exception_message(s.events)
        yield Span(
            trace_id=f"{ctx.trace_id:032x}",
            span_id=f"{ctx.span_id:016x}",
            parent_id=f"{s.parent.span_id:016x}" if s.parent is not None else None,
            name=s.name,
            start_ns=int(s.start_time or 0),
            end_ns=int(s.end_time or 0),
            attributes=dict(s.attributes or {}),
            error=error,
        )


# Nested values whose keys end like this stay whole (they are JSON objects in OpenInference).
_OBJECT_KEYS = ("metadata", "document.metadata", "llm.prompt_template.variables", "tool.parameters")


def flatten_attributes(nested: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flat OpenInference keys from nested attributes (Phoenix's layout).

    ``{"retrieval": {"documents": [{"document": {"id": "a"}}]}}`` becomes
    ``{"retrieval.documents.0.document.id": "a"}``; metadata objects are kept whole, and a
    list of plain values stays a list (``llm.prompts``).
    """
    out: dict[str, Any] = {}
    for key, value in nested.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
            value = value.tolist()  # numpy arrays out of pandas / Parquet
        if isinstance(value, Mapping) and not name.endswith(_OBJECT_KEYS):
            out.update(flatten_attributes(value, name))
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    out.update(flatten_attributes(item, f"{name}.{i}"))
        elif value is not None:
            out[name] = value
    return out
