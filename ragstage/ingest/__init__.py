"""Your own system's logs as traces: spans (OpenInference, Phoenix, MLflow), evaluation datasets, labels.

Nothing here imports OpenTelemetry, LangChain or LlamaIndex at import time: span objects
from the SDK are read by duck typing, and the one piece that needs the SDK
(:func:`otlp_file_exporter`, :func:`record_spans`) imports it when called; the ``tracing``
extra installs it. ``ragstage.ingest.demo`` (chapter 7's LangChain application) is a separate
import and needs the ``frameworks`` extra.
"""

from .build import IngestOptions, judge_contains, looks_like_refusal, text_query_id
from .flow import ingest_openinference, ingest_spans, ingest_spans_to
from .gold import ChunkKeys, Label, locate_llamaindex_nodes, read_labels
from .mlflow import from_mlflow
from .otlp import otlp_file_exporter, read_otlp_json, write_otlp_json
from .phoenix import from_phoenix
from .ragas import ragas_to_traces
from .record import record_spans, seeded_id_generator
from .recover import normalise, recover_prompt_ids
from .result import IngestResult
from .sources import load_spans
from .spans import Span, SpanError, from_sdk_spans

__all__ = [
    "ChunkKeys",
    "IngestOptions",
    "IngestResult",
    "Label",
    "Span",
    "SpanError",
    "from_mlflow",
    "from_phoenix",
    "from_sdk_spans",
    "ingest_openinference",
    "ingest_spans",
    "ingest_spans_to",
    "judge_contains",
    "load_spans",
    "locate_llamaindex_nodes",
    "looks_like_refusal",
    "normalise",
    "otlp_file_exporter",
    "ragas_to_traces",
    "read_labels",
    "read_otlp_json",
    "record_spans",
    "recover_prompt_ids",
    "seeded_id_generator",
    "text_query_id",
    "write_otlp_json",
]
