"""Judge every candidate of every trace, and turn the verdicts into silver labels.

The pairs are the (question, candidate) pairs of all the traces given (every pipeline of a run at
once: a candidate several pipelines retrieved is judged once). A candidate whose text is not in
the passages given is an error naming how many and which: a judge that skipped it would call it
irrelevant unread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..ingest.gold import JudgeInfo
from ..pipeline.generation import DEFAULT_GENERATOR, Generator, HFGenerator, PromptTemplate
from ..trace import Trace
from .relevance import JUDGE_MAX_NEW_TOKENS, RELEVANCE_TEMPLATE, Pair, PairVerdict, judge_pairs, template_sha256
from .silver import candidates, silver_rows

__all__ = ["JudgeRun", "judge_info", "pairs_of", "judge_traces", "judge_generator"]


@dataclass(frozen=True)
class JudgeRun:
    """What :func:`judge_traces` returns: the label lines, the per-pair verdicts, how many replies
    were newly generated (the rest came from the cache) and how many replies were unreadable."""

    rows: list[dict[str, Any]]
    verdicts: list[PairVerdict]
    generated: int
    judge: JudgeInfo

    @property
    def unreadable(self) -> int:
        """Replies holding neither YES nor NO: counted as not relevant, and reported."""
        return sum(v.relevant is None for v in self.verdicts)


def judge_info(generator: Generator, name: str = "ragstage-relevance",
               template: PromptTemplate = RELEVANCE_TEMPLATE) -> JudgeInfo:
    """The ``judge`` object of the labels this generator's judge writes (the model is its name: a
    stand-in's label says STAND-IN)."""
    return JudgeInfo(name, generator.name, template.name, template_sha256(template))


def pairs_of(traces: Iterable[Trace], passages: Mapping[str, str], depth: int | None = None) -> list[Pair]:
    """Every distinct (question, candidate) pair of the traces, with its texts."""
    out: dict[tuple[str, str], Pair] = {}
    missing: dict[str, None] = {}
    for trace in traces:
        for doc_id in candidates(trace, depth):
            if doc_id not in passages:
                missing[doc_id] = None
            elif (trace.query_id, doc_id) not in out:
                out[(trace.query_id, doc_id)] = Pair(trace.query_id, doc_id, trace.query, passages[doc_id])
    if missing:
        ids = list(missing)
        raise ValueError(f"{len(ids)} candidate(s) have no text in the passages given (first: "
                         f"{', '.join(ids[:5])}): give the corpus or chunk file that holds them")
    return list(out.values())


def judge_traces(traces: Iterable[Trace], passages: Mapping[str, str], generator: Generator,
                 cache_dir: str | Path, *, depth: int | None = None, name: str = "ragstage-relevance",
                 template: PromptTemplate = RELEVANCE_TEMPLATE) -> JudgeRun:
    """Judge every candidate (the first ``depth`` of each ranked list, or all) of every trace and
    build one silver label per question (:func:`.silver.silver_rows`)."""
    traces = list(traces)
    verdicts, generated = judge_pairs(generator, pairs_of(traces, passages, depth), cache_dir, template=template)
    judge = judge_info(generator, name, template)
    rows = silver_rows(traces, {(v.query_id, v.doc_id): v for v in verdicts}, judge, depth)
    return JudgeRun(rows, verdicts, generated, judge)


def judge_generator(model: str = DEFAULT_GENERATOR, *, gguf_file: str | None = None, device: str = "auto",
                    cache_dir: str | Path | None = None, dtype: str | None = None) -> HFGenerator:
    """The judge's model with one-word replies: a Hugging Face id or path, or ``"standin"`` for the
    offline Qwen2.5-Coder GGUF STAND-IN (labelled as such in every label it makes); ``dtype`` as in
    :class:`~ragstage.pipeline.generation.HFGenerator`, named in the labels when given."""
    from ..pipeline.components import STANDIN
    from ..pipeline.offline import qwen_coder_standin

    spec = qwen_coder_standin(cache_dir) if model == STANDIN else model
    return HFGenerator(spec, gguf_file=gguf_file, device=device, max_new_tokens=JUDGE_MAX_NEW_TOKENS, dtype=dtype)
