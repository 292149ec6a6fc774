"""How far the judge agrees with people on the gold sample: a confusion matrix over buckets and Cohen's kappa.

The PPI estimate corrects the judge whatever its errors, but its width depends on them, and a
reader should see which buckets the judge confuses (a judge that calls every reranker cut a
retrieval loss moves mass between two rows of the table). Raw agreement flatters a judge when
one bucket dominates; Cohen's kappa discounts the agreement two raters would reach by chance
from their own bucket shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..stats import cohen_kappa

__all__ = ["Confusion", "confusion"]


@dataclass(frozen=True)
class Confusion:
    """Counts of (gold bucket, judge bucket) on the sample: ``counts[i][j]`` is gold ``labels[i]``
    and judge ``labels[j]``."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def n(self) -> int:
        return sum(map(sum, self.counts))

    @property
    def agree(self) -> int:
        return sum(self.counts[i][i] for i in range(len(self.labels)))

    @property
    def kappa(self) -> float:
        """Cohen's kappa: (observed - chance agreement) / (1 - chance); NaN when chance agreement
        is already perfect (both raters used one and the same bucket throughout)."""
        return cohen_kappa(self.counts)

    def row(self, label: str) -> dict[str, int]:
        """What the judge said for the sampled requests whose gold bucket is ``label``."""
        return dict(zip(self.labels, self.counts[self.labels.index(label)]))

    def to_frame(self):
        """The matrix as a DataFrame (rows: gold, columns: judge), for a notebook."""
        import pandas as pd

        frame = pd.DataFrame(list(self.counts), index=list(self.labels), columns=list(self.labels))
        frame.index.name, frame.columns.name = "gold", "judge"
        return frame


def confusion(gold: Sequence[str], judge: Sequence[str], labels: Sequence[str] | None = None) -> Confusion:
    """The confusion matrix of paired bucket names (the same requests, in the same order).

    ``labels`` fixes the rows' order (for instance :data:`ragstage.attribution.BUCKETS`); buckets
    neither rater used are dropped from it, and a bucket outside ``labels`` is an error, never
    silently left out. Without ``labels`` the rows are the buckets seen, sorted.
    """
    if len(gold) != len(judge):
        raise ValueError(f"{len(gold)} gold buckets but {len(judge)} judge buckets: they must pair up")
    seen = set(gold) | set(judge)
    if labels is None:
        order = tuple(sorted(seen))
    else:
        unknown = seen - set(labels)
        if unknown:
            raise ValueError(f"bucket(s) not among the labels: {sorted(unknown)}")
        order = tuple(label for label in labels if label in seen)
    index = {label: i for i, label in enumerate(order)}
    counts = [[0] * len(order) for _ in order]
    for g, j in zip(gold, judge):
        counts[index[g]][index[j]] += 1
    return Confusion(order, tuple(tuple(row) for row in counts))
