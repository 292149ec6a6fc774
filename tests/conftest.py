"""Shared test settings and fixtures.

No test may reach a model hub or a dataset host. The fixtures below are the chapter traces
and the small judged runs that several test modules read; each is built fresh per test
(a test may edit its list) except the run builder, which is a plain function; and one local
Spark session for every test that needs one.

This file sits in ``tests/``, a folder with no ``__init__.py``: pytest puts ``tests/`` on
``sys.path`` when it loads it, so the helpers beside it (``browser_helpers``, ``trace_sets``,
``repo_paths``, ...) import as top-level modules from a test in any subfolder.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, Callable, Iterator, Mapping, Sequence

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

from ragstage import Trace  # noqa: E402 - after the offline switches
from ragstage.fixtures import load_traces  # noqa: E402

# The fields that put a question whose gold id "g" was retrieved and prompted into a bucket.
_OUTCOMES: dict[str, dict] = {
    "none": {"correct": True},
    "generation": {"correct": False},
    "retrieval": {"retrieved": [], "correct": False},
    "not_logged": {"prompt": None, "correct": True},
    "unjudged": {},
}


@pytest.fixture
def five_cases() -> list[Trace]:
    """Chapter 1's cases A-E, one per bucket (retrieval, reranking, generation, prompt_assembly, none)."""
    return load_traces("five_cases", "cases.jsonl")


@pytest.fixture
def audit_cases() -> dict[str, Trace]:
    """Chapter 3's six audit cases, by query_id."""
    return {t.query_id: t for t in load_traces("policy", "audit_cases.jsonl")}


@pytest.fixture
def four_logs() -> list[Trace]:
    """The four stored incidents of chapter 3."""
    return load_traces("incidents", "four_logs.jsonl")


@pytest.fixture
def incident_batch() -> list[Trace]:
    """The forty-incident batch of chapter 3, before the fix."""
    return load_traces("incidents", "batch.jsonl")


def _judged_run(outcomes: Sequence[str] | Mapping[str, str], pipeline: str = "default") -> list[Trace]:
    if not isinstance(outcomes, Mapping):
        outcomes = {f"q{i}": bucket for i, bucket in enumerate(outcomes)}
    base = {"pipeline": pipeline, "gold": ["g"], "retrieved": ["g"], "prompt": ["g"]}
    return [Trace(query_id=qid, **(base | _OUTCOMES[bucket])) for qid, bucket in outcomes.items()]


@pytest.fixture(scope="session")
def judged_run() -> Callable[..., list[Trace]]:
    """Build a run whose buckets are chosen: ``judged_run(["none", "retrieval"], "before")``.

    Each outcome is ``none``, ``generation``, ``retrieval``, ``not_logged`` or ``unjudged``;
    a list numbers its questions ``q0, q1, ...``, a mapping names them. Session-scoped so
    hypothesis tests can use it.
    """
    return _judged_run


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local Spark session (two cores, no UI), shared by every test that asks; skipped without
    pyspark or a Java runtime."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'ragstage[spark]')")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("no Java runtime for Spark (install a JDK 17, or set JAVA_HOME)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors run this interpreter's packages
    session = (SparkSession.builder.master("local[2]").appName("ragstage-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "1g").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
