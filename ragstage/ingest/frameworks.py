"""What each framework calls its ranking steps and its answer: declared tables, read by the request reader.

Instrumentors name spans after the framework's own classes, and a stage that the convention has
no kind for is recorded as a plain CHAIN span. Which CHAIN spans rank a retrieved list, and where
a model's answer sits in its output, is framework knowledge; it lives here as tables, not as
branches in the reader:

* LlamaIndex node postprocessors (``SimilarityPostprocessor``, ``LLMRerank``, one's own) are CHAIN
  spans named ``<Class>._postprocess_nodes`` whose output lists ``NodeWithScore`` reprs.
* A DSPy module that reranks is a CHAIN span ``<Module>.forward`` whose output is a prediction
  holding the passages it kept (``{"passages": [...]}``), texts only.
* DSPy's chat adapter writes every output field after a marker ``[[ ## <field> ## ]]`` (and ends
  with ``[[ ## completed ## ]]``): the answer is the text of the answer field, so that a refusal
  reads as one.
"""

from __future__ import annotations

import re

from .openinference import json_or_none
from .spans import Span

__all__ = ["POSTPROCESSOR_SUFFIXES", "TEXT_RANKER_SUFFIXES", "RANKED_TEXT_FIELDS", "ANSWER_FIELDS", "ranked_texts",
           "field_answer"]

#: CHAIN span names that end so are LlamaIndex node postprocessors (a ranking step).
POSTPROCESSOR_SUFFIXES = ("._postprocess_nodes",)
#: CHAIN span names that end so may return passages' texts: DSPy modules (``<Module>.forward``).
TEXT_RANKER_SUFFIXES = (".forward", ".aforward")
#: Output fields of such a span that, holding only retrieved passages' texts, make it a ranking step (DSPy).
RANKED_TEXT_FIELDS = ("passages", "documents")
#: Output fields that hold the answer, in the order tried (DSPy signatures' usual names).
ANSWER_FIELDS = ("answer", "response", "output")

_MARKER = re.compile(r"\[\[ ## (\w+) ## \]\]")


def ranked_texts(span: Span) -> list[str] | None:
    """The passages' texts a CHAIN span named like a DSPy module (:data:`TEXT_RANKER_SUFFIXES`)
    returned under one of :data:`RANKED_TEXT_FIELDS`; None when its output holds no such list
    (most CHAIN spans: told by the name, then by the text before decoding)."""
    if not span.name.endswith(TEXT_RANKER_SUFFIXES):
        return None
    raw = span.attributes.get("output.value")
    if not isinstance(raw, str) or not any(f'"{name}"' in raw for name in RANKED_TEXT_FIELDS):
        return None
    out = json_or_none(raw)
    if not isinstance(out, dict):
        return None
    for name in RANKED_TEXT_FIELDS:
        texts = out.get(name)
        if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
            return texts
    return None


def field_answer(text: str) -> str:
    """The answer field of a DSPy chat-adapter output (``[[ ## answer ## ]]\\nI don't know.``);
    the text as it is when it has no field markers or none of :data:`ANSWER_FIELDS`."""
    if "[[ ## " not in text:
        return text
    fields: dict[str, str] = {}
    marks = list(_MARKER.finditer(text))
    for mark, after in zip(marks, marks[1:] + [None]):
        fields.setdefault(mark.group(1), text[mark.end():after.start() if after is not None else len(text)].strip())
    for name in ANSWER_FIELDS:
        if name in fields:
            return fields[name]
    return text
