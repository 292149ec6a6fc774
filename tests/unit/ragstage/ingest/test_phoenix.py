"""Phoenix span frames and Parquet read as spans (ragstage.ingest.phoenix)."""

from __future__ import annotations

import pandas as pd
import pytest

from ragstage.ingest import (
    Label,
    SpanError,
    from_phoenix,
    ingest_openinference,
)


def test_phoenix_frame_and_parquet(tmp_path):
    docs = [{"document": {"id": "a", "content": "alpha text " * 6, "score": 0.9, "metadata": {"source": "A"}}},
            {"document": {"id": "b", "content": "beta text " * 6, "score": 0.1}}]
    frame = pd.DataFrame([
        {"context.trace_id": "t", "context.span_id": "r", "parent_id": None, "name": "retrieve",
         "span_kind": "RETRIEVER", "start_time": pd.Timestamp("2025-01-01T00:00:00Z"),
         "end_time": pd.Timestamp("2025-01-01T00:00:01Z"), "status_code": "OK", "status_message": "",
         "attributes.retrieval.documents": docs, "attributes.input.value": "q?",
         "attributes.metadata": {"query_id": "q1"}, "attributes.llm.input_messages": None},
        {"context.trace_id": "t", "context.span_id": "l", "parent_id": None, "name": "llm", "span_kind": "LLM",
         "start_time": pd.Timestamp("2025-01-01T00:00:02Z"), "end_time": pd.Timestamp("2025-01-01T00:00:03Z"),
         "status_code": "OK", "status_message": "", "attributes.retrieval.documents": None,
         "attributes.input.value": None, "attributes.metadata": None,
         "attributes.llm.input_messages": [{"message": {"role": "user", "content": "alpha text " * 6}}]},
    ])
    traces = ingest_openinference(frame, labels=[Label(query_id="q1", gold=("A",))]).traces
    assert traces[0].prompt == ("a",) and traces[0].gold == ("a",) and traces[0].timestamp.startswith("2025-01-01")
    path = tmp_path / "spans.parquet"
    frame.to_parquet(path)
    assert [t.to_dict() for t in ingest_openinference(str(path), labels=[Label(query_id="q1", gold=("A",))]).traces] \
        == [t.to_dict() for t in traces]
    with pytest.raises(SpanError, match="missing column"):
        list(from_phoenix(frame.drop(columns=["context.trace_id"])))
