"""ragstage: find which stage of a RAG system lost the answer, with intervals and paired tests.

``import ragstage`` stays light (numpy, pandas, scipy): the model-backed pipeline lives in
``ragstage.pipeline`` and imports torch and transformers only when a stage is built.
"""

from .attribution import BUCKETS, Diagnosis, Stage, diagnose, replay
from .planning import (
    mcnemar_power,
    mcnemar_power_normal,
    mcnemar_sample_size,
    mcnemar_sample_size_normal,
    power_curve,
)
from .published import PublishedRun, load_published
from .report import attribution_table, compare, funnel, funnel_from_counts, table_from_counts
from .stats import (
    bootstrap_mean_ci,
    format_rate,
    half_width,
    holm,
    mcnemar,
    normal_interval,
    paired_counts,
    sample_size,
    wilson,
)
from .trace import Trace, TraceError, read_traces, write_traces

__version__ = "0.1.0"

__all__ = [
    "BUCKETS",
    "Diagnosis",
    "PublishedRun",
    "Stage",
    "Trace",
    "TraceError",
    "attribution_table",
    "bootstrap_mean_ci",
    "compare",
    "diagnose",
    "format_rate",
    "funnel",
    "funnel_from_counts",
    "half_width",
    "holm",
    "load_published",
    "mcnemar",
    "mcnemar_power",
    "mcnemar_power_normal",
    "mcnemar_sample_size",
    "mcnemar_sample_size_normal",
    "normal_interval",
    "paired_counts",
    "power_curve",
    "read_traces",
    "replay",
    "sample_size",
    "table_from_counts",
    "wilson",
    "write_traces",
]
