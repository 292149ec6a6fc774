"""The labelling sheet: the drawn requests, their candidates' text, and where a person writes the gold.

``ragstage sample --sheet`` writes it beside the sample file; the person fills it; reading it back
(:func:`read_sheet`) gives a gold labels file of exactly the drawn requests, checked against the
sample (the sheet carries the sample's seed, size and ids digest on every row, so a sheet of
another draw, or one with a request added or left out, is refused by name).

* **CSV** (opens in a spreadsheet): one row per candidate of a drawn request, in rank order:
  ``query_id, pipeline, query, rank, doc_id, text, relevant, sample``. The person writes ``yes``
  or ``no`` in ``relevant`` on every row; a request whose evidence is not among its candidates
  gets an extra row with the evidence's ``doc_id`` and ``yes``; an unanswerable request gets a row
  with ``relevant`` = ``unanswerable`` (``doc_id`` empty).
* **JSON Lines**: one object per drawn request with its ``candidates`` (``rank``, ``doc_id``,
  ``text``) and ``gold: null`` for the person to replace by the list of relevant ids, or
  ``answerable: false`` for an unanswerable request.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

import orjson

from ..errors import TraceError
from ..trace import Trace, read_json_lines
from .silver import candidates, relevance_value

__all__ = ["SHEET_COLUMNS", "sheet_requests", "write_sheet", "read_sheet", "sample_tag"]

SHEET_COLUMNS = ("query_id", "pipeline", "query", "rank", "doc_id", "text", "relevant", "sample")
_UNANSWERABLE = "unanswerable"


class Sample(Protocol):
    """What the sheet reads of a :class:`ragstage.ppi.sample.Sample` (that module writes sheets
    through this one, so it is not imported here)."""

    seed: int
    n: int
    pipeline: str
    ids_digest: str
    query_ids: Sequence[str]


def sample_tag(sample: Sample) -> str:
    """The sample's identity as the sheet records it on every row."""
    return f"seed={sample.seed} n={sample.n} {sample.ids_digest}"


def sheet_requests(traces: Iterable[Trace], sample: Sample) -> list[Trace]:
    """The drawn requests' traces, in the order drawn; a drawn id without a trace is an error."""
    by_id = {t.query_id: t for t in traces if t.pipeline == sample.pipeline}
    missing = [q for q in sample.query_ids if q not in by_id]
    if missing:
        raise ValueError(f"{len(missing)} drawn request(s) have no trace of pipeline {sample.pipeline!r} "
                         f"(first: {missing[0]!r}): give the traces the sample was drawn from")
    return [by_id[q] for q in sample.query_ids]


def write_sheet(traces: Iterable[Trace], sample: Sample, passages: Mapping[str, str], path: str | Path,
                depth: int | None = None) -> Path:
    """Write the sheet (``.csv``, else JSON Lines), whole or not at all. A candidate without text is
    an error (a person cannot judge an empty cell)."""
    from ..atomic import atomic_write_bytes

    requests = sheet_requests(traces, sample)
    missing = sorted({d for t in requests for d in candidates(t, depth) if d not in passages})
    if missing:
        raise ValueError(f"{len(missing)} candidate(s) have no text in the passages given (first: "
                         f"{', '.join(missing[:5])})")
    tag = sample_tag(sample)
    if Path(path).suffix.lower() == ".csv":
        import io

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(SHEET_COLUMNS)
        for t in requests:
            for rank, doc_id in enumerate(candidates(t, depth), start=1):
                writer.writerow([t.query_id, t.pipeline, t.query, rank, doc_id, passages[doc_id], "", tag])
        return atomic_write_bytes(path, buffer.getvalue())
    lines = [orjson.dumps({"query_id": t.query_id, "pipeline": t.pipeline, "query": t.query,
                           "candidates": [{"rank": r, "doc_id": d, "text": passages[d]}
                                          for r, d in enumerate(candidates(t, depth), start=1)],
                           "gold": None, "answerable": None, "sample": tag}) + b"\n" for t in requests]
    return atomic_write_bytes(path, b"".join(lines))


def _csv_labels(path: Path, tag: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:  # a spreadsheet may add a byte-order mark
        reader = csv.DictReader(handle)
        for name in ("query_id", "doc_id", "relevant", "sample"):
            if name not in (reader.fieldnames or ()):
                raise TraceError(f"no column {name!r}", path=str(path), line=1, field=name, unit="row")
        for row_no, row in enumerate(reader, start=2):
            def fail(msg: str, name: str, row_no: int = row_no) -> TraceError:
                return TraceError(msg, path=str(path), line=row_no, field=name, unit="row")

            if (row.get("sample") or "").strip() != tag:
                raise fail(f"this row is of the sample {row.get('sample')!r}, not {tag!r}", "sample")
            qid, doc_id, value = ((row.get(k) or "").strip() for k in ("query_id", "doc_id", "relevant"))
            label = out.setdefault(qid, {"query_id": qid, "query": row.get("query") or None, "gold": [],
                                         "answerable": True})
            if value.lower() == _UNANSWERABLE:
                label["answerable"] = False
                continue
            if not value:
                raise fail("not filled in: write yes or no (or 'unanswerable')", "relevant")
            try:
                relevant = relevance_value(value)
            except ValueError as exc:
                raise fail(str(exc), "relevant") from None
            if not doc_id:
                raise fail("a row marked yes or no names its candidate", "doc_id")
            if relevant and doc_id not in label["gold"]:
                label["gold"].append(doc_id)
    return out


def _jsonl_labels(path: Path, tag: str) -> dict[str, dict[str, Any]]:
    def parse(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict) or not isinstance(value.get("query_id"), str):
            raise TraceError("expected an object with a query_id", field="query_id")
        if value.get("sample") != tag:
            raise TraceError(f"this line is of the sample {value.get('sample')!r}, not {tag!r}", field="sample")
        gold, answerable = value.get("gold"), value.get("answerable")
        if answerable is False:
            gold = gold or []
        elif gold is None:
            raise TraceError("not filled in: the list of relevant ids (or answerable: false)", field="gold")
        if not isinstance(gold, list) or not all(isinstance(g, str) and g for g in gold):
            raise TraceError(f"expected a list of ids, got {gold!r:.40}", field="gold")
        return {"query_id": value["query_id"], "query": value.get("query") or None, "gold": gold,
                "answerable": answerable is not False}

    out: dict[str, dict[str, Any]] = {}
    for lineno, label in read_json_lines(path, parse, TraceError):
        if label["query_id"] in out:
            raise TraceError("this request is on the sheet twice", path=str(path), line=lineno, field="query_id")
        out[label["query_id"]] = label
    return out


def read_sheet(path: str | Path, sample: Sample) -> list[dict[str, Any]]:
    """A filled sheet as gold label lines (people's: no ``judge``), one per drawn request in the order drawn.

    Refused with the file, the row (or line) and the field: a row of another sample, a blank verdict,
    a request not drawn, a drawn request missing, an answerable request with nothing marked relevant
    (it would be ``label_missing``: mark the evidence, or ``unanswerable``), and a request marked
    both unanswerable and with gold.
    """
    path = Path(path)
    tag = sample_tag(sample)
    labels = _csv_labels(path, tag) if path.suffix.lower() == ".csv" else _jsonl_labels(path, tag)
    drawn = set(sample.query_ids)
    extra = [q for q in labels if q not in drawn]
    missing = [q for q in sample.query_ids if q not in labels]
    if extra or missing:
        raise ValueError(f"{path}: field 'query_id': the sheet's requests are not the drawn ones "
                         f"({len(extra)} not drawn, first {extra[:1]}; {len(missing)} drawn but absent, first "
                         f"{missing[:1]})")
    for qid in sample.query_ids:
        label = labels[qid]
        if label["answerable"] and not label["gold"]:
            raise ValueError(f"{path}: query_id {qid!r}, field 'relevant': nothing marked relevant: mark the "
                             "evidence (add its doc_id if it is not a candidate) or mark it unanswerable")
        if not label["answerable"] and label["gold"]:
            raise ValueError(f"{path}: query_id {qid!r}, field 'relevant': marked unanswerable and given gold")
    return [{k: v for k, v in labels[q].items() if v is not None} for q in sample.query_ids]
