"""What ragstage writes back for each request: computed from the traces alone, no server.

A :class:`Note` is one request's diagnosis as it will appear in a tracing tool: the bucket,
the reason (text and code), severity, flags, recall and retention, the gold ids, and which
span kind lost the evidence. :func:`plan` makes one per trace that ingest read from a tracing
server (its ``meta.ingest.trace_id``); a trace without that id is refused, by query id, never
matched to a server trace by guesswork.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import __version__
from ..attribution import diagnose
from ..trace import Trace

__all__ = ["NAME", "GOLD_NAME", "SOURCE_ID", "Note", "Plan", "plan", "LOSING_KIND"]

#: The annotation name in Phoenix and the feedback name in MLflow; users filter on it.
NAME = "ragstage"
#: MLflow's expectation holding the gold ids and where they sat.
GOLD_NAME = "ragstage_gold"
#: Who wrote it: Phoenix's span-annotation identifier and MLflow's assessment source id. A re-run
#: replaces what carries it and nothing else.
SOURCE_ID = "ragstage"

#: The OpenInference span kind of the stage each bucket blames. Query understanding has no span
#: kind of its own and is written on the root span only.
LOSING_KIND = {"retrieval": "RETRIEVER", "reranking": "RERANKER", "prompt_assembly": "LLM", "generation": "LLM",
               "source_or_label": "LLM", "missing_refusal": "LLM"}


@dataclass(frozen=True)
class Note:
    """One request's diagnosis, as written on its trace."""

    trace_id: str  # the source's trace id, as ingest kept it (hex)
    query_id: str
    pipeline: str
    bucket: str
    code: str
    reason: str
    severity: str | None
    flags: tuple[str, ...]
    recall: float | None
    retention: float | None
    gold: tuple[str, ...]

    @property
    def losing_kind(self) -> str | None:
        """The span kind that lost the evidence; ``"ERROR"`` for a service failure (the failing span)."""
        if self.bucket == "endpoint_unavailable":
            return "ERROR"
        return LOSING_KIND.get(self.bucket)

    @property
    def explanation(self) -> str:
        """The reason text; the bucket itself when the rules gave no text (a right answer)."""
        return self.reason or f"bucket {self.bucket}"

    def metadata(self) -> dict[str, Any]:
        """What Phoenix keeps as the annotation's metadata (MLflow: each value as text)."""
        return {"code": self.code, "severity": self.severity, "flags": list(self.flags), "recall": self.recall,
                "retention": self.retention, "query_id": self.query_id, "pipeline": self.pipeline,
                "ragstage_version": __version__}


@dataclass
class Plan:
    """The notes to write, and the traces refused because they name no source trace."""

    notes: list[Note] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # query ids of traces with no meta.ingest.trace_id


def source_trace_id(trace: Trace) -> str | None:
    """The source trace id ingest kept in ``meta.ingest.trace_id``; None without one."""
    notes = (trace.meta or {}).get("ingest")
    tid = notes.get("trace_id") if isinstance(notes, dict) else None
    return tid if isinstance(tid, str) and tid else None


def plan(traces: Iterable[Trace], require: str = "any") -> Plan:
    """One :class:`Note` per trace that names its source trace; the rest refused by query id."""
    out = Plan()
    for trace in traces:
        tid = source_trace_id(trace)
        if tid is None:
            out.refused.append(trace.query_id)
            continue
        d = diagnose(trace, require=require)
        out.notes.append(Note(trace_id=tid, query_id=trace.query_id, pipeline=trace.pipeline, bucket=d.stage.value,
                              code=d.code, reason=d.reason, severity=d.severity, flags=tuple(d.flags),
                              recall=d.recall, retention=d.retention, gold=tuple(trace.gold or ())))
    return out
