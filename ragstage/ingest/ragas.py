"""Evaluation datasets in the Ragas sample shape, as traces.

A Ragas single-turn sample has ``user_input``, ``retrieved_contexts``, ``reference_contexts``,
``response`` and ``reference``. Contexts carry no ids, so each gets a stable one from its
normalised text (the same text gives the same id in every sample and every run). A sample
carries no prompt either; Ragas defines ``retrieved_contexts`` as the contexts the answer was
generated from, so the conversion takes them as both the retrieved list and the prompt, and
says so in each trace's ``meta``: such a trace cannot show an assembly loss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..trace import Trace, TraceError, iter_json_lines, open_text
from .recover import normalise
from .requests import content_id
from .spans import SpanError

__all__ = ["ragas_to_traces", "ASSUMPTION"]

ASSUMPTION = ("every retrieved context reached the prompt intact (a Ragas sample has no prompt): "
              "retrieval and assembly losses cannot be told apart")
_KEYS = ("user_input", "retrieved_contexts", "reference_contexts", "response", "reference")


def _contexts(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpanError(f"expected a list of strings, got {value!r:.60}", field=name)
    return value


def _gold(retrieved: list[str], reference: list[str]) -> list[str]:
    """Retrieved contexts that hold a reference context or lie inside one, then the references
    that no retrieved context covers (so an unretrieved reference still counts as gold)."""
    refs = [normalise(r) for r in reference if r.strip()]
    gold, covered = [], set()
    for ctx in retrieved:
        c = normalise(ctx)
        hits = [i for i, r in enumerate(refs) if r in c or (c and c in r)]
        if hits:
            gold.append(content_id(ctx))
            covered.update(hits)
    gold += [content_id(r) for i, r in enumerate(refs) if i not in covered]
    return list(dict.fromkeys(gold))


def sample_to_trace(sample: Mapping[str, Any], index: int, pipeline: str = "default") -> Trace:
    """One trace from one Ragas sample (``index`` gives a query id when the sample has none)."""
    if not isinstance(sample, Mapping):
        raise SpanError(f"a sample must be an object, got {type(sample).__name__}")
    if not isinstance(sample.get("user_input"), str):
        raise SpanError("missing or not a string (every sample needs its question)", field="user_input")
    retrieved = _contexts(sample.get("retrieved_contexts"), "retrieved_contexts")
    reference = _contexts(sample.get("reference_contexts"), "reference_contexts")
    ids = list(dict.fromkeys(content_id(c) for c in retrieved))
    qid = sample.get("query_id", sample.get("id"))
    meta: dict[str, Any] = {"ingest": {"source": "ragas", "prompt": ASSUMPTION}}
    if isinstance(sample.get("reference"), str):
        meta["reference"] = sample["reference"]
    correct = sample.get("correct")
    return Trace.from_dict({
        "query_id": str(qid) if qid is not None else f"sample-{index}",
        "pipeline": pipeline,
        "query": sample["user_input"],
        "retrieved": ids,
        "prompt": ids,
        "prompt_source": "logged",
        "gold": _gold(retrieved, reference),
        "answer": sample.get("response") or "",
        "correct": correct if isinstance(correct, bool) else None,
        "meta": meta,
    })


def _samples(source: Any) -> Iterator[tuple[int, Mapping[str, Any], str | None]]:
    if isinstance(source, (str, Path)):
        with open_text(source) as handle:
            for lineno, obj in iter_json_lines(handle, lambda msg, n: SpanError(msg, path=str(source), line=n)):
                yield lineno, obj, str(source)
        return
    if type(source).__name__ == "DataFrame":
        source = source.to_dict("records")
    for i, obj in enumerate(source, start=1):
        yield i, obj, None


def ragas_to_traces(source: str | Path | Iterable[Mapping[str, Any]] | Any, pipeline: str = "default") -> list[Trace]:
    """Traces from Ragas samples: a JSON Lines file, a DataFrame (``EvaluationDataset.to_pandas()``)
    or dicts. Errors name the file (when there is one), the line or row, and the field."""
    traces = []
    for n, sample, path in _samples(source):
        try:
            traces.append(sample_to_trace(sample, n, pipeline))
        except TraceError as exc:
            raise SpanError(exc.detail, path=path, line=n, field=exc.field) from None
    return traces
