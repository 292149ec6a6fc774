"""Which tracing convention a span is written in, and its reading into the neutral span form.

Every reader gives spans with flat OpenInference keys and a span kind (:mod:`.spans`); a span
that has no OpenInference kind is read by the adapter of the convention its attributes show,
tried in this order: MLflow's own spans sent as OpenTelemetry (``mlflow.spanType``), OpenLLMetry
(``traceloop.*``, :mod:`.openllmetry`), the OpenTelemetry GenAI conventions (``gen_ai.*``,
:mod:`.genai`). A span in none of them keeps no kind; the prefixes of :data:`FOREIGN_CONVENTIONS`
name what it was written in, so that the summary can say so.
"""

from __future__ import annotations

from .spans import Span, new_span

__all__ = ["OPENINFERENCE", "MLFLOW", "OPENLLMETRY", "GENAI", "NO_CONVENTION", "CANNOT_SHOW", "FOREIGN_CONVENTIONS",
           "adapt", "foreign_convention"]

OPENINFERENCE = "OpenInference"
MLFLOW = "MLflow (mlflow.spanType)"
OPENLLMETRY = "OpenLLMetry (traceloop.*)"
GENAI = "OpenTelemetry GenAI (gen_ai.*)"
#: Spans with no attribute of any convention: the application's own (a span around a request).
NO_CONVENTION = "no convention (the application's own spans)"

#: What an export in each convention cannot show, for the doctor: the stages a reader cannot check there.
CANNOT_SHOW = {
    OPENINFERENCE: "a reranker recorded as a plain CHAIN span, unless its framework's table names it "
                   "(LlamaIndex postprocessors, DSPy modules returning passages)",
    MLFLOW: "a reranker that is neither a RETRIEVER nor a RERANKER span",
    OPENLLMETRY: "document ids and scores from LangChain (documents are named by a digest of their text), a "
                 "compressor with no retriever span around it, a LlamaIndex request that raised (its spans are "
                 "never ended, so never exported)",
    GENAI: "document content when the instrumentation leaves it out (then prompt recovery finds nothing), "
           "documents past the ones recorded",
}

#: Attribute prefixes of span conventions no adapter reads, and what they are.
FOREIGN_CONVENTIONS = {"llm.": "OpenInference-like llm.* without a span kind", "langsmith.": "LangSmith",
                       "traceloop.": OPENLLMETRY, "gen_ai.": GENAI}


def _mlflow_otel(span: Span) -> Span:
    """An MLflow span that reached us as OpenTelemetry (its attributes JSON text), read as MLflow's."""
    from .mlflow import span_from_dict

    return span_from_dict({"trace_id": span.trace_id, "span_id": span.span_id, "parent_span_id": span.parent_id,
                           "name": span.name, "start_time_unix_nano": span.start_ns,
                           "end_time_unix_nano": span.end_ns, "attributes": dict(span.attributes),
                           "status": {"code": "ERROR" if span.error is not None else "OK",
                                      "message": span.error or ""}}, {})


def adapt(span: Span) -> tuple[Span, str | None]:
    """A span with no OpenInference kind read by its convention's adapter, and the convention's
    name; the span as it is and None when no adapter reads it."""
    attrs = span.attributes
    if "mlflow.spanType" in attrs:
        return _mlflow_otel(span), MLFLOW
    from .genai import is_genai, read_genai
    from .openllmetry import is_openllmetry, read_openllmetry

    if is_openllmetry(attrs):
        reader, name = read_openllmetry, OPENLLMETRY
    elif is_genai(attrs):
        reader, name = read_genai, GENAI
    else:
        return span, None
    out: dict = {}
    kind = reader(attrs, out)
    out["openinference.span.kind"] = kind
    return new_span(span.trace_id, span.span_id, span.parent_id, span.name, span.start_ns, span.end_ns, out,
                    span.error), name


def foreign_convention(span: Span) -> str | None:
    """The convention a span no adapter reads is written in, if its attributes show one."""
    for key in span.attributes:
        for prefix, name in FOREIGN_CONVENTIONS.items():
            if key.startswith(prefix):
                return name
    return None
