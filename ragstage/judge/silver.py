"""Silver labels: the labels-file lines a judge writes, and the ones other tools' judges give.

A silver labels file is the gold labels format (:func:`ragstage.ingest.gold.read_labels`) with a
``judge`` object on every line (which judge, which model, which prompt template and its sha256),
so every reader can tell a judge's labels from people's. One line per question: ``gold`` lists
the candidates the judge found relevant, in rank order, over every trace of that question (the
candidates of all pipelines given, so the label holds for each of them, as gold does).

A question where the judge found no relevant candidate gets ``gold: []``, ``answerable: true``
and its ``judge``: :attr:`ragstage.ingest.gold.Label.targets` then points it at
:data:`~ragstage.ingest.gold.NO_RELEVANT`, an id no candidate has, so under the attribution rules
it is a silver ``retrieval`` loss (the evidence, if any, was not among what was retrieved), not
``label_missing``. That is the judge's claim, biased like the rest: the gold sample corrects it.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import orjson

from ..errors import TraceError
from ..ingest.gold import JudgeInfo, Label, read_labels
from ..trace import Trace, read_json_lines
from .relevance import PairVerdict

__all__ = ["JudgeInfo", "candidates", "silver_rows", "write_labels", "read_silver_labels", "rows_from_relevance",
           "write_judgements", "read_judgements", "relevance_value"]


def candidates(trace: Trace, depth: int | None = None) -> list[str]:
    """The candidate ids a judge looks at: the first ``depth`` (all when None) of the retrieved list,
    then of the reranked list and of the prompt, each id once, in that order."""
    out: dict[str, None] = {}
    for ranked in (trace.retrieved, trace.reranked or (), trace.prompt or ()):
        out.update(dict.fromkeys(list(ranked)[:depth] if depth is not None else ranked))
    return list(out)


def silver_rows(traces: Iterable[Trace], verdicts: Mapping[tuple[str, str], PairVerdict], judge: JudgeInfo,
                depth: int | None = None) -> list[dict[str, Any]]:
    """One silver label line per question (in first-seen order): the candidates judged relevant.

    A candidate without a verdict is an error (judge it first): a label built on part of the
    candidates would call the rest irrelevant without anyone having read them.
    """
    queries: dict[str, str] = {}
    seen: dict[str, dict[str, None]] = {}
    for trace in traces:
        queries.setdefault(trace.query_id, trace.query)
        seen.setdefault(trace.query_id, {}).update(dict.fromkeys(candidates(trace, depth)))
    rows = []
    for qid, ids in seen.items():
        missing = [d for d in ids if (qid, d) not in verdicts]
        if missing:
            raise ValueError(f"query_id {qid!r}: {len(missing)} candidate(s) without a verdict "
                             f"({', '.join(missing[:5])}): judge every candidate first")
        gold = [d for d in ids if verdicts[(qid, d)].relevant]
        rows.append({"query_id": qid, "query": queries[qid], "gold": gold, "answerable": True,
                     "judge": judge.to_json()})
    return rows


def write_labels(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """A labels file written whole or not at all (a failed write leaves an earlier file as it was)."""
    from ..atomic import atomic_write_bytes

    return atomic_write_bytes(path, b"".join(orjson.dumps(row) + b"\n" for row in rows))


def read_silver_labels(path: str | Path) -> list[Label]:
    """A silver labels file: every line must carry its judge (a person's line is an error naming it)."""
    labels = read_labels(path)
    for label in labels:
        if label.judge is None:
            raise TraceError("a silver label names its judge ('judge': name, model, prompt, prompt_sha256)",
                             path=str(path), line=label.line, field="judge")
    return labels


_TRUE = {"1", "true", "yes", "y", "relevant"}
_FALSE = {"0", "false", "no", "n", "irrelevant", "unrelated", "not relevant"}


def relevance_value(value: Any) -> bool:
    """A relevance verdict as another tool writes it: true/false, 1/0, yes/no, or Phoenix's
    ``relevant``/``unrelated`` labels; ValueError for anything else (a blank is not "no")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected true/false, 1/0, yes/no or relevant/unrelated, got {value!r:.40}")


def _relevance_rows(path: Path) -> Iterable[tuple[int, Mapping[str, Any]]]:
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            for name in ("query_id", "doc_id", "relevant"):
                if name not in (reader.fieldnames or ()):
                    raise TraceError(f"no column {name!r} (columns: {', '.join(reader.fieldnames or ())})",
                                     path=str(path), line=1, field=name, unit="row")
            yield from enumerate(reader, start=2)
        return
    yield from read_json_lines(path, _object, TraceError)


def _object(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise TraceError("expected a JSON object with query_id, doc_id and relevant")
    return value


def rows_from_relevance(path: str | Path, judge: JudgeInfo,
                        queries: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Silver label lines from another judge's per-pair verdicts: a CSV (header ``query_id,doc_id,relevant``,
    optional ``query``) or JSON Lines of objects with those keys, as a Phoenix relevance evaluation,
    Ragas context precision or one's own judge exports them (one row per question and candidate).

    A question's ``gold`` is its relevant documents in file order; a question whose rows are all
    irrelevant gets ``gold: []`` (a silver retrieval loss, as for the model judge). ``queries``
    supplies question texts a file lacks. A bad row names the file, the row and the field; a pair
    given twice is an error.
    """
    path = Path(path)
    unit = "row" if path.suffix.lower() == ".csv" else "line"
    gold: dict[str, list[str]] = {}
    text: dict[str, str] = dict(queries or {})
    seen: set[tuple[str, str]] = set()
    for where, row in _relevance_rows(path):
        fields = {}
        for name in ("query_id", "doc_id"):
            value = row.get(name)
            if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
                raise TraceError(f"expected an id, got {value!r:.40}", path=str(path), line=where, field=name,
                                 unit=unit)
            fields[name] = str(value).strip()
        try:
            relevant = relevance_value(row.get("relevant"))
        except ValueError as exc:
            raise TraceError(str(exc), path=str(path), line=where, field="relevant", unit=unit) from None
        key = (fields["query_id"], fields["doc_id"])
        if key in seen:
            raise TraceError(f"the pair {key} is given twice", path=str(path), line=where, field="doc_id", unit=unit)
        seen.add(key)
        if isinstance(row.get("query"), str) and row["query"]:
            text.setdefault(fields["query_id"], row["query"])
        gold.setdefault(fields["query_id"], [])
        if relevant:
            gold[fields["query_id"]].append(fields["doc_id"])
    if not gold:
        raise ValueError(f"{path}: no rows")
    return [{"query_id": q, **({"query": text[q]} if q in text else {}), "gold": ids, "answerable": True,
             "judge": judge.to_json()} for q, ids in gold.items()]


def write_judgements(verdicts: Iterable[PairVerdict], path: str | Path) -> Path:
    """The per-pair verdicts (``query_id``, ``doc_id``, ``relevant``, ``reply``) as JSON Lines, whole or not at all."""
    from ..atomic import atomic_write_bytes

    return atomic_write_bytes(path, b"".join(orjson.dumps({"query_id": v.query_id, "doc_id": v.doc_id,
                                                           "relevant": v.relevant, "reply": v.reply}) + b"\n"
                                             for v in verdicts))


def _verdict(value: Any) -> PairVerdict:
    if not isinstance(value, dict):
        raise TraceError("expected a JSON object")
    for name in ("query_id", "doc_id", "reply"):
        if not isinstance(value.get(name), str):
            raise TraceError("expected a string", field=name)
    if value.get("relevant") not in (True, False, None):
        raise TraceError("expected true, false or null", field="relevant")
    return PairVerdict(value["query_id"], value["doc_id"], value["relevant"], value["reply"])


def read_judgements(path: str | Path) -> list[PairVerdict]:
    """The per-pair verdicts :func:`write_judgements` wrote; a bad line names the file, the line and the field."""
    return [v for _, v in read_json_lines(path, _verdict, TraceError)]
