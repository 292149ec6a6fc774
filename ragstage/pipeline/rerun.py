"""Generation-only re-runs on a saved run: everything upstream of the model is read, not recomputed.

A prompt-wording change (:func:`generate_on_saved_prompts`) and the gold-context oracle
(:mod:`ragstage.pipeline.oracle`) both start from a run folder: its receipt, its saved prompts and
its traces. :class:`SavedRun` opens those, and :func:`answer_again` turns new prompt texts into new
traces that keep every upstream field of the old ones, so a changed answer can only be the
generation step's doing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..runs.layout import RunFiles
from ..trace import Trace, read_traces
from .answering import ANSWER_FIELDS, answered_trace, chat_texts, generate_cached
from .components import generator_from_receipt
from .download import default_cache_dir
from .generation import Generator, template_for
from .receipt import Clock, counts, portable, stand_ins
from .run import RunResult

__all__ = ["SavedRun", "answer_again", "generate_on_saved_prompts"]


@dataclass(frozen=True)
class SavedRun:
    """A pipeline's own run, read back from its folder: receipt, saved prompts and traces."""

    files: RunFiles
    receipt: dict[str, Any]
    prompts: dict[str, dict[str, Any]]
    traces: list[Trace]

    @classmethod
    def open(cls, folder: str | Path) -> "SavedRun":
        files = RunFiles(Path(folder))
        return cls(files, files.read_receipt(), files.read_prompts(), list(read_traces(files.traces)))

    @staticmethod
    def cache_dir(override: str | Path | None = None) -> Path:
        """The stage cache a re-run uses: ``override``, else this machine's default (where
        :class:`~ragstage.pipeline.Pipeline` puts it). Not the path in the receipt: a run copied from
        another machine names a folder that may not exist here. Generations are cached by model and
        exact text, so any cache serves; the default one is where this machine's run left them.
        """
        return Path(override) if override is not None else default_cache_dir() / "stages"


def answer_again(saved: SavedRun, texts: Mapping[str, str], generator: Generator, version: str, cache_dir: Path,
                 restage: Callable[[dict[str, Any]], dict[str, Any]] = dict) -> tuple[list[Trace], int]:
    """New traces for ``saved``'s questions from new prompt texts; returns them and the generation count.

    ``texts`` maps a query id to the exact text the model reads. ``restage`` may rewrite a
    trace's stage fields (the oracle replaces the prompt); by default they are kept as they were.
    A question that hit a service error the first time was never generated, and stays as it was.
    """
    outputs, generated = generate_cached(generator, texts, cache_dir)
    traces = []
    for trace in saved.traces:
        if trace.error is not None:
            traces.append(trace.replace(prompt_version=version))
            continue
        base = {name: value for name, value in trace.to_dict().items() if name not in ANSWER_FIELDS}
        traces.append(answered_trace(restage(base), outputs[trace.query_id], generator, version))
    return traces, generated


def generate_on_saved_prompts(run_folder: str | Path, prompt_version: str, generator: Generator | None = None, *,
                              cache_dir: str | Path | None = None) -> RunResult:
    """Re-run generation only, on exactly the prompts a run saved, with another template version.

    Retrieval, reranking and the assembled passages are taken from the run folder as they
    are, so any change in the answers is the template's doing. The generator defaults to the
    one named in the run's receipt (:func:`~ragstage.pipeline.components.generator_from_receipt`);
    the traces go to ``traces-<prompt_version>.jsonl`` and a receipt to
    ``receipt-<prompt_version>.json`` in the same folder.
    """
    template_for(prompt_version)  # an unknown version fails before anything is read
    clock = Clock()
    saved = SavedRun.open(run_folder)
    generator = generator or generator_from_receipt(saved.receipt)
    texts = chat_texts(generator, prompt_version,
                       {qid: (record["query"], record["context"]) for qid, record in saved.prompts.items()})
    traces, generated = answer_again(saved, texts, generator, prompt_version, saved.cache_dir(cache_dir))
    receipt = portable({**saved.receipt, **clock.timing(), "generation_only": True,
                        "generator": generator.describe(), "generator_name": generator.name,
                        "stand_ins": stand_ins(saved.receipt["retriever"], saved.receipt["reranker"],
                                               generator.describe()),
                        "settings": {**saved.receipt["settings"], "prompt_version": prompt_version},
                        "counts": counts(traces, len(texts), generated)})
    files = RunFiles(saved.files.folder, prompt_version)
    files.write(traces, receipt)
    return RunResult(files.folder, files.traces, receipt)
