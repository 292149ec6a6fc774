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
    from .attribution import BUCKETS, Diagnosis, Outcome, diagnose, replay
    from .errors import TraceError
    from .ingest.tracelog import TraceLogger
    from .planning import (
        mcnemar_power,
        mcnemar_power_normal,
        mcnemar_sample_size,
        mcnemar_sample_size_normal,
        power_curve,
    )
    from .published import PublishedRun, load_published
    from .report import (
        attribution_table,
        compare,
        flag_table,
        funnel,
        funnel_from_counts,
        funnel_from_tally,
        table_from_counts,
    )
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
    from .tally import Tally
    from .trace import Trace, read_traces, write_traces
    from .trace_files import convert, count_files, read_any

__version__ = "0.1.0"

# name -> the module that defines it
_MODULES = {
    "BUCKETS": "attribution",
    "Diagnosis": "attribution",
    "Outcome": "attribution",
    "PublishedRun": "published",
    "Tally": "tally",
    "Trace": "trace",
    "TraceError": "errors",
    "TraceLogger": "ingest.tracelog",
    "attribution_table": "report",
    "bootstrap_mean_ci": "stats",
    "compare": "report",
    "convert": "trace_files",
    "count_files": "trace_files",
    "diagnose": "attribution",
    "flag_table": "report",
    "format_rate": "stats",
    "funnel": "report",
    "funnel_from_counts": "report",
    "funnel_from_tally": "report",
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
    "read_any": "trace_files",
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
    "Outcome",
    "PublishedRun",
    "Tally",
    "Trace",
    "TraceError",
    "TraceLogger",
    "attribution_table",
    "bootstrap_mean_ci",
    "compare",
    "convert",
    "count_files",
    "diagnose",
    "flag_table",
    "format_rate",
    "funnel",
    "funnel_from_counts",
    "funnel_from_tally",
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
    "read_any",
    "read_traces",
    "replay",
    "sample_size",
    "table_from_counts",
    "wilson",
    "write_traces",
]
