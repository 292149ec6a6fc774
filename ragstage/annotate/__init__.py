"""Diagnoses back where practitioners look: each request's bucket, reason and gold positions
written onto its trace in Phoenix (span and document annotations) or MLflow (feedback and
expectations), idempotently. :mod:`.plan` works out what to write from the traces alone;
:mod:`.phoenix` and :mod:`.mlflow` write it; :mod:`.outcome` retries and counts.
"""

from .mlflow import annotate_mlflow
from .outcome import Outcome
from .phoenix import annotate_phoenix
from .plan import Note, Plan, plan

__all__ = ["Note", "Outcome", "Plan", "annotate_mlflow", "annotate_phoenix", "plan"]
