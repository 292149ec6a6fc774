"""Retrieved-context sufficiency asked of a model, and checked against the exact rule.

The second oracle of *Which RAG component broke?*: does the context a pipeline actually assembled hold enough to answer?
For an id-answer task the exact rule, "a gold id reached the prompt"
(:func:`ragstage.oracles.sufficiency`), is the whole answer. The judge form asks a model
instead, which is what a team does when answers are free text and no exact rule exists. A
judge's rate means nothing until it has been shown to agree with an exact rule where one
exists, so :func:`judge_sufficiency` returns the exact verdict beside the judge's for every
question, and :func:`ragstage.stats.agreement` turns the pairs into counts, simple agreement with its Wilson
interval, and Cohen's kappa (agreement beyond what two raters with those base rates would reach
by chance). Show the judge's number only next to that agreement.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..attribution import survives
from .answering import chat_texts, generate_cached
from .components import generator_from_receipt
from .generation import Generator, PromptTemplate
from .rerun import SavedRun

__all__ = ["JUDGE_TEMPLATE", "parse_verdict", "judge_sufficiency"]

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
