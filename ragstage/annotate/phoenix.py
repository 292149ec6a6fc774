"""Write each request's diagnosis into Phoenix as span and document annotations.

Through ``arize-phoenix-client``: the trace's spans are read back by trace id
(``client.spans.get_spans``), a ``ragstage`` span annotation goes on the root span and on the
span of the stage that lost the evidence (``log_span_annotations_dataframe``, label = bucket,
explanation = reason, metadata = code, severity, flags, recall, retention, version), and a
``ragstage`` document annotation (label ``gold``) on every position of a retriever's or
reranker's list that held a gold document (``log_document_annotations_dataframe``).

Span annotations carry the identifier ``ragstage``: Phoenix keys them by (name, span,
identifier), so a re-run updates them in place, and a ``ragstage`` span annotation of ours left
on a span that no longer lost the evidence is deleted (GraphQL ``deleteSpanAnnotations``, by
id). Document annotations are keyed by (name, span, position) and take no identifier: a re-run
updates the positions it writes and deletes our ``CODE`` ones at positions that no longer hold
gold (GraphQL ``deleteDocumentAnnotations``).
"""

from __future__ import annotations

from typing import Any, Iterable

from ..ingest.sources import load_spans
from ..trace import Trace
from .outcome import Outcome, retry, why
from .plan import NAME, SOURCE_ID, Note, plan
from .targets import Targets, match

__all__ = ["annotate_phoenix", "phoenix_rows"]

_DELETE = ("mutation($ids: [ID!]!) { deleteSpanAnnotations(input: {annotationIds: $ids}) "
           "{ spanAnnotations { id } } }")
_DOCUMENTS = ("query($id: ID!) { node(id: $id) { ... on Span { documentEvaluations "
              "{ id name annotatorKind documentPosition } } } }")
_DELETE_DOCUMENTS = ("mutation($ids: [ID!]!) { deleteDocumentAnnotations(input: {annotationIds: $ids}) "
                     "{ query { __typename } } }")


def phoenix_rows(note: Note, targets: Targets) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The span-annotation rows and the document-annotation rows of one request."""
    meta = note.metadata()
    spans = [targets.root] + [s for s in targets.losing if s != targets.root]
    span_rows = [{"span_id": sid, "label": note.bucket, "explanation": note.explanation,
                  "metadata": {**meta, "on": "request" if sid == targets.root else "losing stage"},
                  "identifier": SOURCE_ID} for sid in spans]
    doc_rows = [{"span_id": sid, "document_position": pos, "label": "gold",
                 "explanation": f"gold document {cid} at rank {pos + 1} of this {kind.lower()}'s list",
                 "metadata": {"document_id": cid, "rank": pos + 1, "query_id": note.query_id,
                              "ragstage_version": meta["ragstage_version"]}}
                for sid, kind, pos, cid in targets.gold_positions]
    return span_rows, doc_rows


def _describe(note: Note, targets: Targets, span_rows: list[dict], doc_rows: list[dict]) -> str:
    losing = ", ".join(targets.losing) if targets.losing else "none of that kind on the trace"
    if note.losing_kind is None:
        losing = "none (no stage lost it)"
    gold = ", ".join(f"{r['span_id']}#{r['document_position']}" for r in doc_rows) or "none listed"
    return (f"{note.query_id} (trace {note.trace_id}): {note.bucket} - {note.explanation} | root span {targets.root}, "
            f"losing span(s) {losing}, {len(span_rows)} span and {len(doc_rows)} document annotation(s), "
            f"gold at {gold}")


def _write(client: Any, span_rows: list[dict], doc_rows: list[dict]) -> None:
    import pandas as pd

    client.spans.log_span_annotations_dataframe(dataframe=pd.DataFrame(span_rows), annotation_name=NAME,
                                                annotator_kind="CODE", sync=True)
    if doc_rows:
        client.spans.log_document_annotations_dataframe(dataframe=pd.DataFrame(doc_rows), annotation_name=NAME,
                                                        annotator_kind="CODE", sync=True)


def _graphql(client: Any, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    reply = client._client.post("graphql", json={"query": query, "variables": variables})
    reply.raise_for_status()
    body = reply.json()
    if body.get("errors"):
        raise RuntimeError(f"Phoenix GraphQL refused: {body['errors'][0].get('message')}")
    return body["data"]


def _drop_stale(client: Any, project: str, raw: list[dict], kept: set[str], kept_docs: set[tuple[str, int]]) -> None:
    """Delete ragstage's own annotations on this trace's spans that this run did not write: span
    annotations with our identifier on other spans, and our CODE document annotations at other
    positions (read per ranked span through GraphQL: the REST API lists no document annotations)."""
    found = client.spans.get_span_annotations(span_ids=[r["context"]["span_id"] for r in raw],
                                              project_identifier=project, include_annotation_names=[NAME])
    stale = [a["id"] for a in found if a.get("identifier") == SOURCE_ID and a["span_id"] not in kept]
    if stale:
        _graphql(client, _DELETE, {"ids": stale})
    stale_docs = []
    for r in raw:
        if r.get("span_kind") not in ("RETRIEVER", "RERANKER") or not r.get("id"):
            continue
        node = _graphql(client, _DOCUMENTS, {"id": r["id"]}).get("node") or {}
        stale_docs += [d["id"] for d in node.get("documentEvaluations", ())
                       if d["name"] == NAME and d["annotatorKind"] == "CODE"
                       and (r["context"]["span_id"], d["documentPosition"]) not in kept_docs]
    if stale_docs:
        _graphql(client, _DELETE_DOCUMENTS, {"ids": stale_docs})


def annotate_phoenix(client: Any, traces: Iterable[Trace], project: str, *, dry_run: bool = False,
                     require: str = "any", attempts: int = 3, pause: float = 0.5) -> Outcome:
    """Write each trace's diagnosis into ``project`` through a ``phoenix.client.Client``.

    ``dry_run``: read the spans, work out every annotation, write nothing (``Outcome.lines``
    says what would be written). Network errors are retried ``attempts`` times per call.
    """
    todo = plan(traces, require)
    base = getattr(getattr(client, "_client", None), "base_url", "")
    outcome = Outcome(target=f"Phoenix project {project!r}" + (f" at {base}" if base else ""), dry_run=dry_run,
                      refused=list(todo.refused))
    for note in todo.notes:
        try:
            raw = retry(client.spans.get_spans, project_identifier=project, trace_ids=[note.trace_id],
                        limit=1_000_000, attempts=attempts, pause=pause)
        except Exception as exc:  # noqa: BLE001 - counted as not written, with why
            outcome.failed[note.query_id] = why(exc)
            continue
        spans = list(load_spans(raw)) if raw else []
        targets = match(note, spans)
        if targets is None:
            outcome.unknown.append(note.query_id)
            continue
        span_rows, doc_rows = phoenix_rows(note, targets)
        outcome.lines.append(_describe(note, targets, span_rows, doc_rows))
        if not dry_run:
            kept = {r["span_id"] for r in span_rows}
            kept_docs = {(r["span_id"], r["document_position"]) for r in doc_rows}
            try:
                retry(_write, client, span_rows, doc_rows, attempts=attempts, pause=pause)
                retry(_drop_stale, client, project, raw, kept, kept_docs, attempts=attempts, pause=pause)
            except Exception as exc:  # noqa: BLE001 - counted as not written, with why
                outcome.failed[note.query_id] = why(exc)
                continue
        outcome.written.append(note.query_id)
    return outcome
