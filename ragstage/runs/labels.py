"""Run labels such as ``minilm+ce/revised``: built, parsed and paired in one place.

A label names what produced a set of traces, from the most basic part to the most derived:

* the **pipeline**: the retriever's short name, then ``+`` and the reranker's when there is one
  (``bm25``, ``minilm+ce``);
* ``/<prompt version>`` for a generation-only re-run on that pipeline's saved prompts
  (``minilm+ce/revised``);
* `` + <oracle>`` for an oracle run built from it (``minilm+ce + gold-context oracle``): note
  the spaces, which keep an oracle apart from a reranker.

The runner builds labels with :func:`pipeline_label` and :meth:`RunLabel.__str__`, the run
reader and the chapters take them apart with :func:`parse_label`, and :func:`default_pairs`
lists the comparisons a run set invites. Nothing else should split a label by hand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

__all__ = ["ORACLE_SEPARATOR", "RunLabel", "pipeline_label", "parse_label", "default_pairs"]

ORACLE_SEPARATOR = " + "
_VERSION = "/"
_RERANKER = "+"


@dataclass(frozen=True)
class RunLabel:
    """The parts of a run label; ``str(label)`` gives the label back."""

    retriever: str
    reranker: str | None = None
    prompt_version: str | None = None  # None: the pipeline's own run (its first prompt)
    oracle: str | None = None

    @property
    def pipeline(self) -> str:
        """Retriever and reranker only: ``minilm+ce`` for ``minilm+ce/revised``."""
        return pipeline_label(self.retriever, self.reranker)

    @property
    def base(self) -> "RunLabel":
        """The pipeline's own run, which a prompt re-run or an oracle is compared with."""
        return RunLabel(self.retriever, self.reranker)

    @property
    def is_base(self) -> bool:
        return self.prompt_version is None and self.oracle is None

    def with_version(self, version: str) -> "RunLabel":
        return dataclasses.replace(self, prompt_version=version)

    def with_oracle(self, oracle: str) -> "RunLabel":
        return dataclasses.replace(self, oracle=oracle)

    def __str__(self) -> str:
        text = self.pipeline
        if self.prompt_version is not None:
            text += _VERSION + self.prompt_version
        if self.oracle is not None:
            text += ORACLE_SEPARATOR + self.oracle
        return text


def pipeline_label(retriever: str, reranker: str | None = None) -> str:
    """``bm25`` or ``bm25+ce``; an empty reranker name means no reranker."""
    if not retriever or _RERANKER in retriever or _VERSION in retriever:
        raise ValueError(f"a retriever's short name must be non-empty, without '+' or '/': {retriever!r}")
    return f"{retriever}{_RERANKER}{reranker}" if reranker else retriever


def parse_label(text: str) -> RunLabel:
    """Take a label apart (see the module docstring); a label without ``+`` or ``/`` is a pipeline.

    Raises ValueError naming the label when a part is empty (``"bm25+"``, ``"/revised"``).
    """
    rest, sep, oracle = text.partition(ORACLE_SEPARATOR)
    rest, slash, version = rest.partition(_VERSION)
    retriever, plus, reranker = rest.partition(_RERANKER)
    empty = [name for name, present, value in (("oracle", sep, oracle), ("prompt version", slash, version),
                                                 ("reranker", plus, reranker), ("retriever", True, retriever))
             if present and not value.strip()]
    if empty:
        raise ValueError(f"run label {text!r}: empty {empty[0]}")
    return RunLabel(retriever, reranker or None, version or None, oracle or None)


def default_pairs(labels: Iterable[str]) -> list[tuple[str, str]]:
    """The comparisons a run set invites, as ``(before, after)`` label pairs, in this order:

    1. each retriever without, then with, its reranker (``bm25`` → ``bm25+ce``);
    2. retriever against retriever, first without a reranker, then with the same reranker
       (``bm25`` → ``minilm``, ``bm25+ce`` → ``minilm+ce``), in the order the labels come;
    3. each prompt re-run against the run whose prompts it re-used (``minilm+ce`` → ``minilm+ce/revised``);
    4. each oracle against the run it was built from.

    A pair is listed only when both labels are present. For chapter 5's four pipelines and one
    prompt change these are the five pairs chapter 6 compares.
    """
    present = list(dict.fromkeys(labels))
    parsed = {label: parse_label(label) for label in present}
    base = [label for label in present if parsed[label].is_base]
    pairs = [(plain, other) for plain in base if parsed[plain].reranker is None
             for other in base if parsed[other].retriever == parsed[plain].retriever and parsed[other].reranker]
    across = [(first, second) for i, first in enumerate(base) for second in base[i + 1:]
              if parsed[first].retriever != parsed[second].retriever
              and parsed[first].reranker == parsed[second].reranker]
    pairs += sorted(across, key=lambda pair: parsed[pair[0]].reranker is not None)  # stable: plain ones first
    origins = [(str(p.base), label) for label, p in parsed.items() if p.prompt_version and p.oracle is None]
    origins += [(str(dataclasses.replace(p, oracle=None)), label) for label, p in parsed.items() if p.oracle]
    return pairs + [(origin, label) for origin, label in origins if origin in parsed]
