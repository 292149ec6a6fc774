"""ragstage: find which stage of a RAG system lost the answer, with intervals and paired tests.

``import ragstage`` is light: the names below are imported on first use (PEP 562), so the
command line starts without pandas or scipy until a command needs them, and the
model-backed pipeline (``ragstage.pipeline``) imports torch and transformers only when a
stage is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# name -> the module that defines it
_MODULES = {
    "BUCKETS": "attribution",
    "Diagnosis": "attribution",
    "PublishedRun": "published",
    "Stage": "attribution",
    "Trace": "trace",
    "TraceError": "trace",
    "attribution_table": "report",
    "bootstrap_mean_ci": "stats",
    "compare": "report",
    "diagnose": "attribution",
    "format_rate": "stats",
    "funnel": "report",
    "funnel_from_counts": "report",
    "half_width": "stats",
    "holm": "stats",
    "load_published": "published",
    "mcnemar": "stats",
    "mcnemar_power": "planning",
    "mcnemar_power_normal": "planning",
    "mcnemar_sample_size": "planning",
    "mcnemar_sample_size_normal": "planning",
    "normal_interval": "stats",
    "paired_counts": "stats",
    "power_curve": "planning",
    "read_traces": "trace",
    "replay": "attribution",
    "sample_size": "stats",
    "table_from_counts": "report",
    "wilson": "stats",
    "write_traces": "trace",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'ragstage' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULES})


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
