"""ragstage: find which stage of a RAG system lost the answer, with intervals and paired tests.

``import ragstage`` stays light (numpy, pandas, scipy): the model-backed pipeline lives in
``ragstage.pipeline`` and imports torch and transformers only when a stage is built.
"""

from .attribution import BUCKETS, Diagnosis, Stage, diagnose, replay
from .report import attribution_table, compare, funnel, funnel_from_counts, table_from_counts
from .stats import bootstrap_mean_ci, half_width, mcnemar, normal_interval, paired_counts, sample_size, wilson
from .trace import Trace, TraceError, read_traces, write_traces

__version__ = "0.1.0"

__all__ = [
    "BUCKETS",
    "Diagnosis",
    "Stage",
    "Trace",
    "TraceError",
    "attribution_table",
    "bootstrap_mean_ci",
    "compare",
    "diagnose",
    "funnel",
    "funnel_from_counts",
    "half_width",
    "mcnemar",
    "normal_interval",
    "paired_counts",
    "read_traces",
    "replay",
    "sample_size",
    "table_from_counts",
    "wilson",
    "write_traces",
]
