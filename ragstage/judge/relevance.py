"""The model judge: one short question per (question, passage) pair, cached per pair.

A judge asked about a whole request (all its candidates in one prompt) must be asked again
whenever one candidate changes, and its reply has to be parsed back into ids. Asked about one
pair at a time ("does this passage hold evidence about the question? YES or NO"), each reply is
one word, costs one short prompt, and is keyed by the exact text the model reads: the same
claim and passage retrieved by four pipelines is judged once. The template and the generation
cache are those of :mod:`ragstage.pipeline.judge` and
:func:`ragstage.pipeline.answering.generate_cached`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..pipeline.answering import generate_cached
from ..pipeline.generation import Generator, PromptTemplate
from ..pipeline.judge import parse_verdict

__all__ = ["RELEVANCE_TEMPLATE", "JUDGE_MAX_NEW_TOKENS", "Pair", "PairVerdict", "template_sha256",
           "judge_pairs", "passage_text"]

#: Enough new tokens for one word (a leading space or newline can take a token of its own).
JUDGE_MAX_NEW_TOKENS = 3

RELEVANCE_TEMPLATE = PromptTemplate(
    "relevance-judge/1",
    "You check whether a research abstract holds evidence about a scientific claim. "
    "You answer with one word only.",
    "Abstract:\n{context}\n\nClaim: {claim}\n\n"
    "Does this abstract report a study of the claim's question, giving evidence for or against "
    "the claim? Reply with exactly one word: YES or NO.")


def template_sha256(template: PromptTemplate = RELEVANCE_TEMPLATE) -> str:
    """sha256 of the template's system and user text: what a silver label records as ``prompt_sha256``."""
    return hashlib.sha256(f"{template.system}\n\n{template.user}".encode()).hexdigest()


def passage_text(title: str, text: str) -> str:
    """``title. text`` as a prompt shows a passage (:func:`ragstage.pipeline.assembly.format_passage`
    without its ``[ID x]``: the judge sees no id, so a pair's text does not depend on the corpus's ids)."""
    title = title.strip()
    if title and title[-1] not in ".?!":
        title += "."
    return f"{title} {text}" if title else text


@dataclass(frozen=True)
class Pair:
    """One question and one candidate passage, with the texts the judge reads."""

    query_id: str
    doc_id: str
    query: str
    passage: str


@dataclass(frozen=True)
class PairVerdict:
    """The judge's reply on one pair: ``relevant`` is None when the reply holds neither YES nor NO."""

    query_id: str
    doc_id: str
    relevant: bool | None
    reply: str


def _key(pair: Pair) -> str:
    return f"{pair.query_id}\t{pair.doc_id}"


def judge_pairs(generator: Generator, pairs: Iterable[Pair], cache_dir: str | Path, *,
                template: PromptTemplate = RELEVANCE_TEMPLATE) -> tuple[list[PairVerdict], int]:
    """The judge's verdict on every pair (in the order given) and how many were newly generated.

    Replies are cached in ``cache_dir/generations/`` by model and exact chat text, appended one
    by one, so an interrupted judge resumes where it stopped, and a pair that another pipeline
    (or another run) already put to the same model is not generated again.
    """
    pairs = list(pairs)
    texts = {_key(p): generator.chat_text(template.messages(p.query, p.passage)) for p in pairs}
    replies, generated = generate_cached(generator, texts, Path(cache_dir))
    return [PairVerdict(p.query_id, p.doc_id, parse_verdict(replies[_key(p)]), replies[_key(p)])
            for p in pairs], generated
