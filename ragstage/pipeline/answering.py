"""The generation step every kind of run shares: prompt text in, answered traces out.

A pipeline run, a prompt re-run on saved prompts and an oracle all end the same way: render
each question's chat text from a template version and its passages, ask the generator (through
a cache keyed by model and exact text, so the same prompt is never generated twice), parse the
``ID: <id>`` answer and judge it against the gold ids.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

from ..trace import Trace
from .generation import Generator, PromptTemplate, parse_answer, template_for
from .receipt import now
from .store import JsonlStore, config_key

__all__ = ["chunks", "progress", "chat_texts", "generate_cached", "answer_fields", "answered_trace",
           "ANSWER_FIELDS"]

T = TypeVar("T")

#: The trace fields the generation step fills in (a re-run replaces exactly these).
ANSWER_FIELDS = ("answer", "answer_ids", "correct", "refused", "model", "prompt_version", "timestamp")


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def progress(desc: str, total: int, items: Iterable[T] | None = None) -> Any:
    """A tqdm bar on stderr (tqdm is imported here: it is not needed to import the package)."""
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, total=total, file=sys.stderr)


def chat_texts(generator: Generator, template: str | PromptTemplate,
               prompts: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """``{qid: (claim, passages)}`` → ``{qid: the exact text the model reads}``.

    ``template`` is a prompt version of :data:`~ragstage.pipeline.generation.TEMPLATES`, or a
    template of its own (the sufficiency judge asks another question of the same passages).
    """
    if isinstance(template, str):
        template = template_for(template)
    return {qid: generator.chat_text(template.messages(claim, context)) for qid, (claim, context) in prompts.items()}


def generate_cached(generator: Generator, texts: Mapping[str, str], cache_dir: Path) -> tuple[dict[str, str], int]:
    """Outputs for ``{qid: chat text}``; returns them and how many were newly generated.

    Identical texts are generated once. New outputs are appended batch by batch, so a kill
    loses at most the batch in flight.
    """
    described = generator.describe()
    store = JsonlStore(cache_dir / "generations" / f"{config_key(described)}.jsonl")
    key_of = {qid: config_key({"generator": described, "text": text}, 32) for qid, text in texts.items()}
    todo: dict[str, str] = {}
    for qid, key in key_of.items():
        if key not in store:
            todo.setdefault(key, texts[qid])
    ordered = sorted(todo.items(), key=lambda kv: len(kv[1]))  # similar lengths → little padding
    if ordered:
        with progress(f"generate ({generator.name})", len(ordered)) as bar:
            for batch in chunks(ordered, max(1, generator.batch_size)):
                outputs = generator.generate([text for _, text in batch])
                for (key, _), output in zip(batch, outputs, strict=True):
                    store.put(key, output)
                bar.update(len(batch))
    return {qid: store[key] for qid, key in key_of.items()}, len(ordered)


def answer_fields(output: str, gold: Iterable[str]) -> dict[str, Any]:
    """The SciFact judging rule: right when the one named id is gold; NONE is a refusal."""
    parsed = parse_answer(output)
    named = [] if parsed in (None, "NONE") else [parsed]
    return {"answer": output, "answer_ids": named, "correct": bool(named) and named[0] in set(gold),
            "refused": parsed == "NONE", "parsed": parsed}


def answered_trace(base: Mapping[str, Any], output: str, generator: Generator, version: str) -> Trace:
    """``base`` (the stage fields of a trace) completed with the parsed and judged answer."""
    fields = answer_fields(output, base["gold"])
    parsed = fields.pop("parsed")
    meta = dict(base.get("meta") or {})
    meta.update({"parsed": parsed, "unparsed": parsed is None,
                 "stand_in": generator.describe()["model"].get("stand_in", False)})
    return Trace.from_dict({**base, **fields, "model": generator.name, "prompt_version": version,
                            "timestamp": now(), "meta": meta})
