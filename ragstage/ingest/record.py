"""Record an instrumented application's spans to an OTLP JSON Lines file, reproducibly.

What a production system sends to a Collector, without the Collector: a tracer provider
whose exporter appends each span to a file (:func:`~ragstage.ingest.otlp.otlp_file_exporter`),
an OpenInference instrumentor pointed at it for the duration of a ``with`` block, and
optionally a **seeded** id generator, so trace and span ids are the same on every run (a
notebook or a test can show them). Timestamps still come from the clock. Needs the
``tracing`` extra, plus the instrumentor's own package.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

__all__ = ["seeded_id_generator", "record_spans"]


def seeded_id_generator(seed: int) -> Any:
    """An OpenTelemetry ``IdGenerator`` drawing trace and span ids from ``random.Random(seed)``.

    OpenTelemetry's default draws them from the OS: different on every run. Ids need only be
    unique within the file, so a seeded stream is enough for a reproducible recording; never
    use one for two services that share a Collector (their ids would collide).
    """
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class SeededIdGenerator(IdGenerator):
        def __init__(self) -> None:
            self._random = random.Random(seed)

        def generate_span_id(self) -> int:
            return self._random.getrandbits(64) or 1  # 0 is the invalid span id

        def generate_trace_id(self) -> int:
            return self._random.getrandbits(128) or 1

    return SeededIdGenerator()


@contextmanager
def record_spans(path: str | Path, instrumentor: Any, seed: int | None = None) -> Iterator[Path]:
    """Run the block with ``instrumentor`` (e.g. OpenInference's ``LangChainInstrumentor()``)
    sending every finished span to ``path`` as OTLP JSON Lines, one span a line.

    The file is started afresh. ``seed`` makes the ids reproducible (:func:`seeded_id_generator`).
    The instrumentor is removed when the block ends, even on an error.
    """
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from .otlp import otlp_file_exporter

    path = Path(path)
    path.unlink(missing_ok=True)
    provider = TracerProvider(id_generator=seeded_id_generator(seed)) if seed is not None else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(otlp_file_exporter(path)))
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield path
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
