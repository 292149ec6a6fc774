"""Evaluation datasets in the Ragas sample shape, as traces.

A Ragas single-turn sample has ``user_input``, ``retrieved_contexts``, ``reference_contexts``,
``response`` and ``reference``, and may have ``retrieved_context_ids`` and
``reference_context_ids``. Contexts with ids are named by them; contexts without get a stable id
from their normalised text (the same text gives the same id in every sample and every run).

A sample holds the contexts the model saw, and nothing of the stages before: no candidate list
before a reranker, no error, no prompt. The conversion takes the contexts as both the retrieved
list and the prompt, and says so (:data:`ASSUMPTION`): a reranker's cut, an assembly loss and an
outage all read as evidence lost before the prompt, which the trace files under ``retrieval``.

Gold comes from the sample (reference contexts or their ids) or from a label file (``--labels``:
document ids, or ``gold_text`` sentences found in the contexts); a label also gives
``correct``, ``answerable``, ``refused`` and a reference answer, which ``--judge contains`` uses.
Files are read in the three shapes an ``EvaluationDataset`` is saved in: ``to_jsonl()`` (JSON
Lines), ``to_csv()`` (list columns as Python lists) and ``to_pandas().to_json()`` (columns or
records); anything else is refused, naming the shapes expected.
"""

from __future__ import annotations

import ast
import csv
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import orjson

from ..errors import TraceError
from ..trace import Trace, iter_json_lines, open_text
from .build import looks_like_refusal
from .gold import Label, LabelIndex, iter_labels
from .quote import quoted_ids
from .recover import normalise
from .requests import content_id
from .spans import SpanError

__all__ = ["ragas_to_traces", "ragas_ingest", "ASSUMPTION", "SHAPES"]

ASSUMPTION = ("every retrieved context reached the prompt intact (a Ragas sample holds the contexts the model saw, "
              "no reranker list and no error): a reranker's cut, an assembly loss and an outage all read as "
              "evidence lost before the prompt (retrieval)")
SHAPES = ("Ragas samples as EvaluationDataset saves them: JSON Lines (to_jsonl), CSV with a header row "
          "(to_csv), or to_pandas().to_json() (columns or records)")
_LIST_FIELDS = ("retrieved_contexts", "reference_contexts", "retrieved_context_ids", "reference_context_ids")


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise SpanError(f"expected a list of strings, got {value!r:.60}", field=name)
    return [str(v) for v in value]


def _gold(retrieved: list[str], ids: list[str], reference: list[str]) -> list[str]:
    """Retrieved contexts that hold a reference context or lie inside one, then the references
    that no retrieved context covers (so an unretrieved reference still counts as gold)."""
    refs = [normalise(r) for r in reference if r.strip()]
    gold, covered = [], set()
    for ctx, cid in zip(retrieved, ids):
        c = normalise(ctx)
        hits = [i for i, r in enumerate(refs) if r in c or (c and c in r)]
        if hits:
            gold.append(cid)
            covered.update(hits)
    gold += [content_id(r) for i, r in enumerate(refs) if i not in covered]
    return list(dict.fromkeys(gold))


def _label_gold(label: Label, retrieved: list[str], ids: list[str]) -> list[str]:
    """The gold a label names: its document ids, and the contexts holding its quoted sentences
    (a quote no context holds stays a target of its own, as in the span ingest)."""
    contents = {cid: normalise(c) for c, cid in zip(retrieved, ids)}
    found = [cid for text in label.gold_text for cid in (quoted_ids([text], contents) or [f"text:{text}"])]
    return list(dict.fromkeys([*label.gold, *found]))


def sample_to_trace(sample: Mapping[str, Any], index: int, pipeline: str = "default",
                    labels: LabelIndex | None = None,
                    judge: Callable[[str, Label], bool | None] | None = None) -> Trace:
    """One trace from one Ragas sample (``index``, its position from 1 in every shape, gives a query id
    when the sample has none)."""
    if not isinstance(sample, Mapping):
        raise SpanError(f"a sample must be an object, got {type(sample).__name__}")
    if not isinstance(sample.get("user_input"), str):
        raise SpanError("missing or not a string (every sample needs its question)", field="user_input")
    retrieved = _strings(sample.get("retrieved_contexts"), "retrieved_contexts")
    reference = _strings(sample.get("reference_contexts"), "reference_contexts")
    given_ids = _strings(sample.get("retrieved_context_ids"), "retrieved_context_ids")
    if given_ids and len(given_ids) != len(retrieved):
        raise SpanError(f"{len(given_ids)} ids for {len(retrieved)} retrieved contexts", field="retrieved_context_ids")
    ids = given_ids or [content_id(c) for c in retrieved]
    qid = sample.get("query_id", sample.get("id"))
    label = labels.match(None if qid is None else str(qid), sample["user_input"]) if labels is not None else None
    notes: dict[str, Any] = {"source": "ragas", "prompt": ASSUMPTION}
    meta: dict[str, Any] = {"ingest": notes}
    reference_ids = _strings(sample.get("reference_context_ids"), "reference_context_ids")
    correct = sample.get("correct")
    record: dict[str, Any] = {"answerable": None, "refused": None}
    if label is not None:
        gold = _label_gold(label, retrieved, ids)
        notes["gold"] = f"from the label{f' (labels line {label.line})' if label.line is not None else ''}"
        correct = label.correct
        if correct is None and judge is not None:
            correct = judge(str(sample.get("response") or ""), label)  # an empty answer is judged too
        record["answerable"], record["refused"] = label.answerable, label.refused
        if label.reference is not None:
            meta["reference"] = label.reference
    else:
        gold = reference_ids or _gold(retrieved, ids, reference)
    if "reference" not in meta and isinstance(sample.get("reference"), str):
        meta["reference"] = sample["reference"]
    answer = str(sample.get("response") or "")
    if record["refused"] is None and answer:  # the answer's own wording, as for spans
        record["refused"] = looks_like_refusal(answer) or None
    query_id = str(qid) if qid is not None else (label.query_id if label is not None and label.query_id else None)
    record.update({
        "query_id": query_id or f"sample-{index}",
        "pipeline": pipeline,
        "query": sample["user_input"],
        "retrieved": list(dict.fromkeys(ids)),
        "prompt": list(dict.fromkeys(ids)),
        "prompt_source": "logged",
        "gold": gold,
        "answer": answer,
        "correct": correct if isinstance(correct, bool) else None,
        "meta": meta,
    })
    return Trace.from_dict({k: v for k, v in record.items() if v is not None or k == "correct"})


def _csv_rows(path: str | Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``to_csv()`` rows: list columns written as Python lists are read back as lists (a literal,
    never code)."""
    with open_text(path) as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or "user_input" not in reader.fieldnames:
            raise SpanError(f"a CSV without a 'user_input' column; expected {SHAPES}", path=str(path), line=1)
        for row in reader:
            line = reader.line_num
            out: dict[str, Any] = {k: (v if v != "" else None) for k, v in row.items()}
            for name in _LIST_FIELDS:
                text = out.get(name)
                if isinstance(text, str):
                    try:
                        out[name] = ast.literal_eval(text)
                    except (ValueError, SyntaxError):
                        raise SpanError(f"not a list as to_csv writes one: {text!r:.60}", path=str(path), line=line,
                                        field=name) from None
            yield line, out


def _json_rows(path: str | Path) -> Iterator[tuple[int, Mapping[str, Any]]] | None:
    """Rows of a file holding one JSON value: a list of samples (records), or the columns of
    ``to_pandas().to_json()`` (``{"user_input": {"0": ...}, ...}``); None for JSON Lines."""
    try:
        value = orjson.loads(Path(path).read_bytes())
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, list):
        return iter(enumerate(value, start=1))
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        if "user_input" not in value:
            raise SpanError(f"a JSON object of columns without 'user_input'; expected {SHAPES}", path=str(path),
                            field="user_input")
        rows = list(value["user_input"])
        return iter((n, {col: cells.get(row) for col, cells in value.items()}) for n, row in enumerate(rows, start=1))
    if isinstance(value, dict) and "user_input" in value:
        return iter([(1, value)])
    raise SpanError(f"a JSON value in no known shape; expected {SHAPES}", path=str(path))


def _samples(source: Any) -> Iterator[tuple[int, Mapping[str, Any], str | None]]:
    if isinstance(source, (str, Path)):
        where = str(source)
        if where.endswith(".csv"):
            rows: Iterable[tuple[int, Any]] = _csv_rows(source)
        else:
            whole = _json_rows(source)
            if whole is None:
                with open_text(source) as handle:
                    fail = lambda msg, n: SpanError(f"{msg}; expected {SHAPES}", path=where, line=n)  # noqa: E731
                    for lineno, obj in iter_json_lines(handle, fail):
                        yield lineno, obj, where
                return
            rows = whole
        for n, obj in rows:
            yield n, obj, where
        return
    if type(source).__name__ == "DataFrame":
        source = source.to_dict("records")
    for i, obj in enumerate(source, start=1):
        yield i, obj, None


def ragas_ingest(source: str | Path | Iterable[Mapping[str, Any]] | Any, pipeline: str = "default",
                 labels: Iterable[Label] | str | Path | None = None,
                 judge: Callable[[str, Label], bool | None] | None = None) -> tuple[list[Trace], list[Label]]:
    """Traces from Ragas samples (see :func:`ragas_to_traces`), and the labels no sample matched."""
    index = LabelIndex(iter_labels(labels)) if labels is not None else None
    traces = []
    for number, (n, sample, path) in enumerate(_samples(source), start=1):  # n: the line or row, for errors
        try:
            traces.append(sample_to_trace(sample, number, pipeline, index, judge))
        except TraceError as exc:
            raise SpanError(exc.detail, path=path, line=n, field=exc.field) from None
    return traces, index.unmatched() if index is not None else []


def ragas_to_traces(source: str | Path | Iterable[Mapping[str, Any]] | Any, pipeline: str = "default",
                    labels: Iterable[Label] | str | Path | None = None,
                    judge: Callable[[str, Label], bool | None] | None = None) -> list[Trace]:
    """Traces from Ragas samples: a file in one of :data:`SHAPES`, a DataFrame
    (``EvaluationDataset.to_pandas()``) or dicts; ``labels`` and ``judge`` as for spans. Errors
    name the file (when there is one), the line or row, and the field."""
    return ragas_ingest(source, pipeline, labels, judge)[0]
