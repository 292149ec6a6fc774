"""Write each request's diagnosis into MLflow 3 as assessments on its trace.

The bucket is a ``ragstage`` feedback (``Feedback``, source ``CODE`` / ``ragstage``) with the
reason as rationale and the code, severity, flags, recall, retention and version as metadata,
on the span of the stage that lost the evidence when the trace has one; the gold ids and where
they sat in each retriever's and reranker's list are a ``ragstage_gold`` expectation. Spans are
read back with ``get_trace`` and matched as for Phoenix (:mod:`.targets`).

A re-run logs the new assessments first, then deletes the assessments of ours that the trace
held before (name ``ragstage`` or ``ragstage_gold``, source ``CODE`` with source id
``ragstage``): nothing else on the trace is touched, and a failed run leaves the earlier ones.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..ingest.sources import load_spans
from ..trace import Trace
from .outcome import Outcome, retry, why
from .plan import GOLD_NAME, NAME, SOURCE_ID, Note, plan
from .targets import Targets, match

__all__ = ["annotate_mlflow", "mlflow_trace_id"]


def mlflow_trace_id(hex_id: str) -> str:
    """MLflow 3's id of the trace whose OpenTelemetry trace id is ``hex_id`` (what ingest keeps)."""
    return hex_id if hex_id.startswith("tr-") else "tr-" + hex_id


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _assessments(note: Note, targets: Targets) -> list[Any]:
    from mlflow.entities import AssessmentSource, Expectation, Feedback

    source = AssessmentSource(source_type="CODE", source_id=SOURCE_ID)
    meta = {k: _text(v) for k, v in note.metadata().items()}
    losing = next((s for s in targets.losing if s != targets.root), None)
    out = [Feedback(name=NAME, value=note.bucket, source=source, rationale=note.explanation, metadata=meta,
                    span_id=losing)]
    if note.gold:
        where = [{"span_id": sid, "kind": kind, "rank": pos + 1, "document_id": cid}
                 for sid, kind, pos, cid in targets.gold_positions]
        out.append(Expectation(name=GOLD_NAME, value={"gold": list(note.gold), "positions": where}, source=source,
                               metadata={"query_id": note.query_id, "ragstage_version": meta["ragstage_version"]}))
    return out


def _ours(assessment: Any) -> bool:
    src = assessment.source
    return (assessment.name in (NAME, GOLD_NAME) and src is not None and src.source_type == "CODE"
            and src.source_id == SOURCE_ID)


def _unknown(exc: BaseException) -> bool:
    return getattr(exc, "error_code", None) == "RESOURCE_DOES_NOT_EXIST"


def annotate_mlflow(traces: Iterable[Trace], client: Any = None, *, tracking_uri: str | None = None,
                    dry_run: bool = False, require: str = "any", attempts: int = 3, pause: float = 0.5) -> Outcome:
    """Write each trace's diagnosis as assessments through ``client`` (an
    ``mlflow.tracing.client.TracingClient``; made for ``tracking_uri`` when None)."""
    if client is None:
        from mlflow.tracing.client import TracingClient

        client = TracingClient(tracking_uri)
    todo = plan(traces, require)
    outcome = Outcome(target=f"MLflow at {getattr(client, 'tracking_uri', tracking_uri)}", dry_run=dry_run,
                      refused=list(todo.refused))
    for note in todo.notes:
        tid = mlflow_trace_id(note.trace_id)
        try:
            trace = retry(client.get_trace, tid, attempts=attempts, pause=pause)
        except Exception as exc:  # noqa: BLE001 - unknown id, or counted as not written with why
            if _unknown(exc):
                outcome.unknown.append(note.query_id)
            else:
                outcome.failed[note.query_id] = why(exc)
            continue
        targets = match(note, list(load_spans([trace]))) if trace is not None else None
        if targets is None:
            outcome.unknown.append(note.query_id)
            continue
        new = _assessments(note, targets)
        outcome.lines.append(f"{note.query_id} (trace {tid}): {note.bucket} - {note.explanation} | feedback on "
                             f"{new[0].span_id or 'the trace'}, {len(targets.gold_positions)} gold position(s)")
        if dry_run:
            outcome.written.append(note.query_id)
            continue
        earlier = [a.assessment_id for a in (trace.info.assessments or []) if _ours(a)]
        try:
            for assessment in new:
                retry(client.log_assessment, tid, assessment, attempts=attempts, pause=pause)
            for aid in earlier:
                retry(client.delete_assessment, tid, aid, attempts=attempts, pause=pause)
        except Exception as exc:  # noqa: BLE001 - counted as not written, with why
            outcome.failed[note.query_id] = why(exc)
            continue
        outcome.written.append(note.query_id)
    return outcome
