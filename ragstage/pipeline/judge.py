"""Retrieved-context sufficiency asked of a model, and checked against the exact rule.

Seed 003's second oracle: does the context a pipeline actually assembled hold enough to answer?
For an id-answer task the exact rule, "a gold id reached the prompt"
(:func:`ragstage.oracles.sufficiency`), is the whole answer. The judge form asks a model
instead, which is what a team does when answers are free text and no exact rule exists. A
judge's rate means nothing until it has been shown to agree with an exact rule where one
exists, so :func:`judge_sufficiency` returns the exact verdict beside the judge's for every
question, and :func:`agreement` turns the pairs into counts, simple agreement with its Wilson
interval, and Cohen's kappa (agreement beyond what two raters with those base rates would reach
by chance). Show the judge's number only next to that agreement.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..attribution import survives
from ..stats import wilson
from .answering import chat_texts, generate_cached
from .components import generator_from_receipt
from .generation import Generator, PromptTemplate
from .rerun import SavedRun

__all__ = ["JUDGE_TEMPLATE", "parse_verdict", "judge_sufficiency", "Agreement", "agreement"]

JUDGE_TEMPLATE = PromptTemplate(
    "sufficiency-judge",
    "You check whether research abstracts hold evidence about a scientific claim. You answer with one word only.",
    "Abstracts:\n{context}\n\nClaim: {claim}\n\n"
    "Does one of these abstracts report a study of the claim's question, giving evidence for or against "
    "the claim? Reply with exactly one word: YES or NO.")

_VERDICT = re.compile(r"\b(YES|NO)\b", re.IGNORECASE)


def parse_verdict(text: str) -> bool | None:
    """True for a first ``YES``, False for a first ``NO``, None when the reply holds neither."""
    match = _VERDICT.search(text)
    return None if match is None else match.group(1).upper() == "YES"


def judge_sufficiency(run_folder: str | Path, generator: Generator | None = None, *,
                      cache_dir: str | Path | None = None) -> pd.DataFrame:
    """Ask the judge about every question of a run, on exactly the passages the run saved.

    One row per question with logged prompt ids: ``query_id``, ``exact`` (a gold id reached the
    prompt), ``judge`` (the parsed verdict: True, False, or None when unreadable) and ``reply``
    (the raw output). The generator defaults to the run's own; replies are cached like answers.
    """
    saved = SavedRun.open(run_folder)
    generator = generator or generator_from_receipt(saved.receipt)
    judged = [t for t in saved.traces if t.prompt is not None and t.gold]
    texts = chat_texts(generator, JUDGE_TEMPLATE,
                       {t.query_id: (t.query or "", saved.prompts[t.query_id]["context"]) for t in judged})
    replies, _ = generate_cached(generator, texts, saved.cache_dir(cache_dir))
    return pd.DataFrame([(t.query_id, survives(t.gold, t.prompt), parse_verdict(replies[t.query_id]),
                          replies[t.query_id]) for t in judged], columns=["query_id", "exact", "judge", "reply"])


@dataclass(frozen=True)
class Agreement:
    """A judge's verdicts against the exact rule's, on the questions the judge answered readably.

    ``both_yes`` … ``judge_only``: the 2×2 table (``exact_only``: the exact rule says sufficient,
    the judge says not). ``unreadable``: replies with no verdict, left out of everything else.
    ``kappa`` is NaN when chance agreement is already perfect (both raters gave one answer only).
    """

    both_yes: int
    both_no: int
    exact_only: int
    judge_only: int
    unreadable: int

    @property
    def n(self) -> int:
        return self.both_yes + self.both_no + self.exact_only + self.judge_only

    @property
    def agree(self) -> int:
        return self.both_yes + self.both_no

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the simple agreement ``agree / n``."""
        return wilson(self.agree, self.n)

    @property
    def kappa(self) -> float:
        n = self.n
        if n == 0:
            return math.nan
        exact_yes, judge_yes = (self.both_yes + self.exact_only) / n, (self.both_yes + self.judge_only) / n
        chance = exact_yes * judge_yes + (1 - exact_yes) * (1 - judge_yes)
        return math.nan if chance == 1 else (self.agree / n - chance) / (1 - chance)


def agreement(exact: Sequence[bool], judge: Sequence[bool | None]) -> Agreement:
    """Pair the exact rule's verdicts with a judge's, question by question (same order)."""
    if len(exact) != len(judge):
        raise ValueError(f"{len(exact)} exact verdicts but {len(judge)} judge verdicts: they must pair up")
    pairs = [(bool(e), j) for e, j in zip(exact, judge) if j is not None]
    return Agreement(both_yes=sum(e and j for e, j in pairs), both_no=sum(not e and not j for e, j in pairs),
                     exact_only=sum(e and not j for e, j in pairs), judge_only=sum(j and not e for e, j in pairs),
                     unreadable=len(exact) - len(pairs))
