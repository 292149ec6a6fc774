"""The colours and words every workbook figure shares.

Each outcome bucket has one colour everywhere (:data:`BUCKET_COLOURS`): retrieval is always
red, generation always blue, a correct answer always green, so a reader can compare a
chapter 1 fixture with the published SciFact counts at a glance.
"""

from __future__ import annotations

from ..rows import printable

__all__ = ["plain", "BUCKET_COLOURS", "STAGE_LABELS", "WILSON_COLOUR", "NORMAL_COLOUR", "FIXED_COLOUR", "BROKEN_COLOUR"]

#: One colour per bucket, used by every figure in the workbook.
BUCKET_COLOURS: dict[str, str] = {
    "endpoint_unavailable": "#7f7f7f",
    "label_missing": "#c7c7c7",
    "correct_refusal": "#98df8a",
    "missing_refusal": "#ff9896",
    "query_understanding": "#9467bd",
    "retrieval": "#d62728",
    "reranking": "#ff7f0e",
    "prompt_assembly": "#bcbd22",
    "generation": "#1f77b4",
    "source_or_label": "#8c564b",
    "none": "#2ca02c",
    "unjudged": "#e377c2",
    "not_logged": "#dbdb8d",
}

#: Legend text for each bucket (the bucket name stays the key everywhere else).
STAGE_LABELS: dict[str, str] = {
    "endpoint_unavailable": "service failure",
    "label_missing": "no gold label",
    "correct_refusal": "refused correctly",
    "missing_refusal": "should have refused",
    "query_understanding": "lost in query understanding",
    "retrieval": "lost in retrieval",
    "reranking": "lost in reranking",
    "prompt_assembly": "lost in prompt assembly",
    "generation": "lost in generation",
    "source_or_label": "source or label",
    "none": "answered correctly",
    "unjudged": "unjudged",
    "not_logged": "stage not logged",
}



def plain(name: object) -> str:
    """A name from data (a pipeline, a group, a file) as matplotlib draws it: literally.

    Matplotlib parses text between two ``$`` as math: a name such as ``cost $5-$10`` is drawn
    mangled, and a malformed or deeply nested one stops the figure with a parser error. Each
    ``$`` is escaped (``\\$``, which matplotlib draws as ``$`` and never parses), and control
    characters are written as escapes (:func:`ragstage.rows.printable`), which no font has a glyph for.
    """
    return printable(str(name)).replace("$", "\\$")


WILSON_COLOUR = "#1f77b4"
NORMAL_COLOUR = "#d62728"
#: A question that went from wrong to right, and one that went from right to wrong.
FIXED_COLOUR = "#2ca02c"
BROKEN_COLOUR = "#d62728"
