"""Chapter 7, your own system: the expected outcome of every exercise, with its solution.

Each exercise changes one setting of the demo app or one label, reruns, and passes the
resulting traces (or comparison, label, agreement) to the self-check. The solutions run in the
chapter's namespace: ``record_run``, ``edited_labels``, ``BASE``, ``RUN``, ``questions``,
``before``, ``before_spans``, ``LABELS``, ``texts``, ``verdicts`` and ``lenient_judge`` are
the chapter's own.
"""

from __future__ import annotations

from typing import Any, Callable

from ._core import Exercise, Expect, explained

NOTEBOOK = "07_your_own_system.ipynb"


def _buckets(traces: Any) -> dict[str, int]:
    """Questions per bucket of a list of traces (the chapter's attribution, counted)."""
    from collections import Counter

    from ..attribution import diagnose

    traces = list(traces)
    if not traces or not all(hasattr(t, "query_id") for t in traces):
        raise ValueError("pass the list of traces the ingest returned (.traces)")
    return dict(Counter(diagnose(t).stage.value for t in traces))


def _q12_label(result: Any) -> dict[str, Any]:
    """q12's record in the edited labels file of ``(labels, traces)``."""
    import json
    from pathlib import Path

    labels, _ = result
    for line in Path(labels).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("query_id") == "q12":
            return record
    raise ValueError(f"no label of q12 in {labels}")


def _traces_of(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``read`` applied to the traces of ``(labels, traces)``."""
    return lambda result: read(result[1])


def _count(bucket: str) -> Callable[[Any], int]:
    return lambda traces: _buckets(traces).get(bucket, 0)


def _stage_of(query_id: str) -> Callable[[Any], str]:
    def read(traces: Any) -> str:
        from ..attribution import diagnose

        found = [t for t in traces if t.query_id == query_id]
        if not found:
            raise ValueError(f"no trace of {query_id} among your traces")
        return diagnose(found[0]).stage.value
    return read


def _rerun(settings: str, name: str) -> str:
    return (f"settings = {settings}\n"
            f'traces = ingest_openinference(record_run(RUN / "{name}.jsonl", settings, questions),\n'
            "                              labels=LABELS, judge=judge_contains).traces\n")


def _document(doc_id: str) -> str:
    from ..ingest.demo import load_corpus

    return next((d["text"] for d in load_corpus() if d["_id"] == doc_id), "")


def _quoted(label: Any) -> tuple[str, int, int]:
    (span,) = label["gold_spans"]
    return str(span["id"]), int(span["start"]), int(span["end"])


#: The sentence of document 1042 that answers the zinc question (exercise 7.7), from its first word
#: to its full stop.
ZINC_FIRST, ZINC_LAST = "Pooling seven", "(95% CI 21% to 45%)."


def _in_zinc_sentence(label: Any) -> bool:
    doc, start, end = _quoted(label)
    text = _document("1042")
    first, last = text.index(ZINC_FIRST), text.index(ZINC_LAST) + len(ZINC_LAST)
    return doc == "1042" and first <= start < end <= last


def _holds_reference(label: Any) -> bool:
    doc, start, end = _quoted(label)
    return bool(label.get("reference")) and label["reference"] in _document(doc)[start:end]


EXERCISES = (
    Exercise(
        id="7.1",
        title="Lift the budget",
        submit="the traces of a run with budget=None (ingest_openinference(...).traces)",
        solution=_rerun("replace(BASE, budget=None)", "exercise1") + "result = traces",
        kind="traces",
        expects=(
            Expect("prompt_assembly losses", 1, "set budget=None in the settings: no chunk is left out any more, "
                   "but a gold span only partly in the prompt is still assembly's loss (read its reason)",
                   get=_count("prompt_assembly")),
            Expect("generation losses", 13, "where did the questions the budget used to cut go? "
                   "compare the bucket counts with the first run", get=_count("generation")),
            Expect("right answers", 20, "change only the budget, keep chunk_size and k as in BASE", get=_count("none")),
        ),
    ),
    Exercise(
        id="7.2",
        title="Retrieve fewer chunks",
        submit="the traces of a run with k=2",
        solution=_rerun("replace(BASE, k=2)", "exercise2") + "result = traces",
        kind="traces",
        expects=(
            Expect("retrieval losses", 6, "set k=2 in the settings: fewer chunks, more gold never retrieved",
                   get=_count("retrieval")),
            Expect("prompt_assembly losses", 1, "two chunks of at most 200 characters fit a budget of 800: "
                   "what is left in prompt_assembly is a gold span the prompt holds only in part",
                   get=_count("prompt_assembly")),
            Expect("right answers", 20, "change only k, keep the chunk size and the budget", get=_count("none")),
        ),
    ),
    Exercise(
        id="7.3",
        title="Coarsen a label",
        submit="(labels, traces): the edited labels file, and the first run's spans ingested with it",
        solution=('labels = edited_labels("q12", gold=["1033"], gold_spans=None)\n'
                  "traces = ingest_openinference(before_spans, labels=labels, judge=judge_contains).traces\n"
                  "result = (labels, traces)"),
        expects=(
            Expect("q12's label names document 1033", True, "q12's label does not name the document yet: "
                   "give edited_labels the document label (gold=[...])", edit=True,
                   get=lambda result: "1033" in _q12_label(result).get("gold", [])),
            Expect("q12's label keeps a span", False, "q12's label still holds its span beside the document: "
                   "remove it (gold_spans=None), so the document alone is the gold", edit=True,
                   get=lambda result: bool(_q12_label(result).get("gold_spans"))),
            Expect("q12's bucket", "generation", "ingest the spans with the edited labels file, "
                   "and make the label name the whole document (gold) instead of the span",
                   get=_traces_of(_stage_of("q12"))),
            Expect("prompt_assembly losses", 2, "edit only q12's label", get=_traces_of(_count("prompt_assembly"))),
        ),
    ),
    Exercise(
        id="7.4",
        title="Remove a label's gold",
        submit="the traces of the first run's spans ingested with q07's gold_spans removed",
        solution=('labels = edited_labels("q07", gold_spans=None)\n'
                  "result = ingest_openinference(before_spans, labels=labels, judge=judge_contains).traces"),
        kind="traces",
        expects=(
            Expect("q07's bucket", "label_missing", "remove the gold_spans key of q07 (gold_spans=None) "
                   "and ingest with the edited labels", get=_stage_of("q07")),
            Expect("questions in all", 36, "ingest the same spans: every request is still a trace",
                   get=lambda traces: sum(_buckets(traces).values())),
        ),
    ),
    Exercise(
        id="7.5",
        title="A bigger change",
        submit="compare(before, traces) for a run with chunk_size=500",
        solution=_rerun("replace(BASE, chunk_size=500)", "exercise5") + "result = compare(before, traces)",
        expects=(
            Expect("fixed", 5, "compare the 500-character run with the first run (before), in that order"),
            Expect("broken", 1, "a question right before and wrong after: look at the migration's none row"),
            Expect("p_value", 0.219, "the exact McNemar p of this run against before"),
        ),
    ),
    Exercise(
        id="7.6",
        title="A stricter reranker",
        submit="the traces of a run with k=10 and rerank_top=2",
        solution=_rerun("replace(BASE, k=10, rerank_top=2)", "exercise6") + "result = traces",
        kind="traces",
        expects=(
            Expect("reranking losses", 5, "keep 2 of 10 retrieved chunks (rerank_top=2, k=10)",
                   get=_count("reranking")),
            Expect("generation losses", 7, "with fewer chunks in the prompt, fewer distractor sentences compete",
                   get=_count("generation")),
            Expect("right answers", 21, "start from BASE: 200-character chunks, budget 800", get=_count("none")),
        ),
    ),
    Exercise(
        id="7.7",
        title="Label a new question by quoting",
        submit="the label quote_label returns for the zinc question",
        solution=('result = quote_label("q37", "By how much did zinc lozenges shorten common colds in adults?", '
                  'texts, "1042",\n'
                  '                     "zinc lozenges taken within a day of symptom onset shortened the "\n'
                  '                     "duration of common colds by 33%", reference="33%")'),
        expects=(
            Expect("span inside the answering sentence", True, "quote from document 1042 (the pooled trials "
                   "in adults), words of the one sentence that answers the question", get=_in_zinc_sentence),
            Expect("span holds the reference", True, "the quote must contain the reference answer, the percentage "
                   "by which colds were shortened", get=_holds_reference),
            Expect("reference", "33%", "pass reference= with the short answer a judge looks for",
                   get=lambda label: label.get("reference")),
        ),
    ),
    Exercise(
        id="7.8",
        title="A stricter judge",
        submit="agreement(verdicts.exact.tolist(), strict) where strict holds your judge's verdicts",
        solution=("def strict_judge(answer, label):\n"
                  "    return set(words(label.reference)) <= set(words(answer)) if label.reference else None\n\n"
                  "strict = [strict_judge(t.answer, by_id[t.query_id]) for t in before]\n"
                  "result = agreement(verdicts.exact.tolist(), strict)"),
        expects=(
            Expect("agree", 36, "require every word of the reference in the answer, numbers and units alike"),
            Expect("judge_only", 0, "a question your judge calls right and the exact rule wrong: read its answer"),
            Expect("kappa", 1.0, "pair the exact verdicts with yours in the same question order (before's)"),
        ),
    ),
)

# The value each solution produces, and why: shown under the solution in the solutions notebook.
WHY = {
    '7.1': ('`prompt_assembly` falls to 1, `generation` rises to 13, and 20 answers are right. Without a budget '
            'the chunks the budget used to cut reach the prompt, and those questions land in generation, not in '
            '`none`; the one assembly loss left is a gold span the prompt holds only in part.'),
    '7.2': ('6 retrieval losses, 1 assembly loss, 20 right. Fewer chunks retrieved leaves more gold never '
            'retrieved; two short chunks always fit the budget, so only a gold span cut across chunks stays in '
            'assembly.'),
    '7.3': ('q12 moves to `generation`, and `prompt_assembly` falls to 2. With the whole document as gold, any '
            "chunk of 1033 in the prompt counts as evidence, so the loss that was assembly's (the span never "
            "reached the prompt) becomes the model's: a coarse label moves the blame downstream."),
    '7.4': ('q07 becomes `label_missing`, and all 36 requests are still traces. Without gold the walk has nothing '
            "to follow, so the question leaves every stage's denominator instead of counting as a loss."),
    '7.5': ('5 fixed, 1 broken, exact McNemar p = 0.219. A net gain of 4 from 6 flipped questions is not evidence '
            "of an improvement on 36 questions; chapter 2's planning says how many it would take."),
    '7.6': ('5 reranking losses, 7 generation losses, 21 right. Keeping 2 of 10 chunks cuts some gold at the '
            'reranker, and the shorter prompts give the model fewer distractor sentences: one change moved losses '
            'both ways, which the paired comparison would show claim by claim.'),
    '7.7': ('A span inside the sentence of document 1042 that answers the question, holding the reference `33%`. '
            'A document id with character offsets survives every re-chunking, and a reference inside the quote '
            'makes the judge and the attribution read the same evidence.'),
    '7.8': ('The strict judge agrees with the exact rule on all 36 questions (kappa 1.0), and none is right for '
            'the judge alone. Requiring every word of the reference, numbers and units alike, removes the lenient '
            "judge's false rights: a judge is trusted where it matches an exact rule."),
}
EXERCISES = explained(EXERCISES, WHY)
