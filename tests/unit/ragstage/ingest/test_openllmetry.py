"""OpenLLMetry's LlamaIndex spans read by the shapes of LlamaIndex's objects (``read_llamaindex_task``)."""

from __future__ import annotations

import orjson

from ragstage.ingest.openllmetry import read_llamaindex_task


def _node(node_id: str, text: str, score: float) -> str:
    """A ``NodeWithScore`` as the instrumentor writes one: JSON text inside the JSON list."""
    return orjson.dumps({"node": {"id_": node_id, "text": text, "metadata": {"ref_doc_id": "doc"}},
                         "score": score}).decode()


def _attrs(inputs: object, output: object) -> dict[str, str]:
    return {"traceloop.span.kind": "task", "traceloop.entity.input": orjson.dumps(inputs).decode(),
            "traceloop.entity.output": orjson.dumps(output).decode()}


NODES = [_node("n1", "First passage.", 2.0), _node("n2", "Second passage.", 1.0)]


def test_a_query_returning_nodes_is_a_retriever() -> None:
    out: dict = {}
    kind = read_llamaindex_task(_attrs({"query_bundle": {"query_str": "Which?"}}, NODES), out)
    assert kind == "RETRIEVER" and out["input.value"] == "Which?"
    assert out["retrieval.documents.1.document.id"] == "n2" and out["retrieval.documents.0.document.score"] == 2.0
    assert out["retrieval.documents.0.document.content"] == "First passage."


def test_nodes_in_and_nodes_out_is_a_ranking_step_even_when_it_keeps_none() -> None:
    out: dict = {}
    assert read_llamaindex_task(_attrs({"nodes": NODES, "query_bundle": None}, NODES[1:]), out) == "RERANKER"
    assert out["reranker.output_documents.0.document.id"] == "n2" and "reranker.input_documents.1.document.id" in out
    assert read_llamaindex_task(_attrs({"nodes": NODES}, []), {}) == "RERANKER"


def test_a_completion_is_a_model_call_with_its_prompt_and_text() -> None:
    out: dict = {}
    completion = {"text": "Fourteen weeks.", "additional_kwargs": {}, "raw": None, "logprobs": None, "delta": None}
    assert read_llamaindex_task(_attrs({"args": ["Context: ...\nQuery: q"], "kwargs": {}}, completion), out) == "LLM"
    assert out["llm.input_messages.0.message.content"] == "Context: ...\nQuery: q"
    assert out["llm.output_messages.0.message.content"] == "Fourteen weeks."
    predict: dict = {}
    messages = [{"role": "assistant", "parts": [{"type": "text", "content": "Fourteen weeks."}]}]
    assert read_llamaindex_task({"gen_ai.output.messages": orjson.dumps(messages).decode()}, predict) == "LLM"
    assert predict == {"llm.output_messages.0.message.content": "Fourteen weeks."}


def test_other_steps_have_no_kind() -> None:
    # a text splitter returns a list of strings; a query engine a response object; an empty list for no query
    assert read_llamaindex_task(_attrs({"text": "a b"}, ["a", "b"]), {}) is None
    assert read_llamaindex_task(_attrs({"query_bundle": {"query_str": "q"}}, {"response": "r"}), {}) is None
    assert read_llamaindex_task(_attrs({"text": "a"}, []), {}) is None
    assert read_llamaindex_task({"traceloop.entity.output": "not json"}, {}) is None
