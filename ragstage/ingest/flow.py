"""Spans in, traces out: the ingest's flow from its inputs to one result, in one process or in parts.

``ingest_spans`` (also named ``ingest_openinference``) and ``ingest_spans_to`` read every input
(:func:`.sources.load_spans` knows the formats), group the spans into requests as they stream in
(:mod:`.grouping`), turn each request into a trace (:func:`.build.request_to_trace`) and
account for it in the order its trace id was first seen: the duplicate check, the run
numbering, and every count and list of :class:`.result.IngestResult`.

One large OTLP JSON Lines file written to a file is read in parts, one per core, on Linux
(where processes fork safely): the trace-id scan that streams the file also tells where it can
be cut with every trace inside one part, each part is read by a forked process that writes its
traces to a file of its own (the first part, to the output's temporary file, which the others'
files are then appended to), and the parts are accounted in file order, so the output file and
the result are the same, byte for byte and item for item, as one process gives. Reading is
pure Python (the span tree, the documents, prompt recovery, the check of each trace), so a
second core nearly halves the wall time of a week's export; CPU time stays what it is.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import shutil
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, TypeVar

from ..atomic import atomic_output, check_output, is_special
from ..collector import collector_paused
from ..errors import TraceError
from ..trace import WRITE_BUFFER, FilePart, Trace, trace_line, trace_stream, write_traces
from ..trace_files import input_files
from ..workers import die_with_parent
from .accounts import Accounts, conclude, request
from .build import IngestOptions
from .gold import Label, LabelIndex, iter_labels
from .grouping import TraceGroups, is_json_lines, safe_cuts, scanning, trace_lines
from .result import IngestResult
from .scratch import scratch_folder
from .sources import load_spans, path_reader, read_note
from .spans import Span, SpanError

__all__ = ["ingest_spans", "ingest_spans_to", "ingest_openinference", "MIN_SPLIT_BYTES", "PartPlan", "plan_parts",
           "append_file"]

#: Files smaller than this are read by one process (a second one costs more than it saves).
MIN_SPLIT_BYTES = 16 << 20

_T = TypeVar("_T")


def ingest_spans(spans: Any, labels: Iterable[Label] | str | Path | None = None,
                 options: IngestOptions | None = None, **kwargs: Any) -> IngestResult:
    """Traces from spans, one per request (OpenTelemetry trace id), whatever exported them.

    ``spans``: a path or a list of paths (OTLP JSON in either key style, Phoenix span JSON
    Lines, Phoenix or MLflow frames saved as Parquet or a folder of them, MLflow
    ``Trace.to_json()`` lines), a Phoenix spans DataFrame (``get_spans_dataframe``), Phoenix span
    objects (``client.spans.get_spans()``), an MLflow ``search_traces`` DataFrame or a list of
    ``Trace`` objects, or OpenTelemetry SDK spans. ``labels``: a JSON Lines path or
    :class:`~ragstage.ingest.gold.Label` objects. Options as :class:`IngestOptions` or keywords.
    Raises :class:`~ragstage.ingest.spans.SpanError` (a ``TraceError``) on bad input, naming
    the file, line and field.
    """
    opts = options or IngestOptions(**kwargs)
    result = IngestResult([], [], [])
    with collector_paused():
        result.traces.extend(_request_traces(_sources(spans), LabelIndex(iter_labels(labels)), opts, result))
    return result


def ingest_spans_to(out: str | Path, spans: Any, labels: Iterable[Label] | str | Path | None = None,
                    options: IngestOptions | None = None, *, workers: int | None = None,
                    **kwargs: Any) -> IngestResult:
    """:func:`ingest_spans`, each trace written to ``out`` (JSON Lines, ``.gz`` too) as soon as it is
    read, none kept: memory stays flat however long the export (see :mod:`.grouping`).

    The file appears whole when the ingest ends, or not at all (an error or a killed run leaves
    an existing ``out`` as it was); a spans or labels file given as ``out`` is refused
    (:class:`~ragstage.atomic.OutputError`) before anything is read. The result holds every
    count and list :func:`ingest_spans` gives, its ``traces`` empty and ``written`` the number of
    traces in ``out``. One OTLP JSON Lines file of :data:`MIN_SPLIT_BYTES` or more is read in
    parts by up to ``workers`` processes (default: one per core; 1 reads in this process), with
    the same output.
    """
    opts = options or IngestOptions(**kwargs)
    with collector_paused():
        return _ingest_to(out, _sources(spans), labels, opts, workers)


def _ingest_to(out: str | Path, sources: list[Any], labels: Iterable[Label] | str | Path | None,
               opts: IngestOptions, workers: int | None) -> IngestResult:
    """:func:`ingest_spans_to`'s work, in a function of its own: the labels and the plan are
    freed when it returns, with the cycle collector still paused; held until after the pause,
    they were all walked by the collector's first pass (0.1 s for 200,000 labels)."""
    # the files read are refused as the output, before any is read: written over, they would be lost
    inputs: list[str | Path] = [f for s in [*sources, labels] if isinstance(s, (str, Path)) for f in input_files(s)]
    check_output(out, inputs)
    plan, index = plan_parts(sources, opts, workers, lambda: LabelIndex(iter_labels(labels)))
    if plan is not None:
        result = _ingest_parts_to(out, plan, index, opts, inputs)
        if result is not None:
            return result
    result = IngestResult([], [], [])
    result.written = write_traces(out, _request_traces(sources, index, opts, result), inputs)
    return result


#: The same function under the name chapter 7 and earlier code use.
ingest_openinference = ingest_spans


def _sources(spans: Any) -> list[Any]:
    return spans if isinstance(spans, (list, tuple)) and spans and isinstance(spans[0], (str, Path)) else [spans]


def _names(sources: list[Any]) -> str:
    return ", ".join(str(s) for s in sources if isinstance(s, (str, Path)))


def _inputs(sources: list[Any], stack: contextlib.ExitStack, read: list[str],
            warnings: list[str]) -> tuple[list[tuple[str, Iterator[tuple[int, list[Span]]]]], dict | None]:
    """Each source as ``(name, batches)``, and where each trace's last span is: ``{(source,
    line): [trace ids]}`` when every source is an OTLP JSON Lines file (scanned first), else None."""
    from .export_kinds import detect, regular_file

    inputs: list[tuple[str, Iterator[tuple[int, list[Span]]]]] = []
    last: dict[str, tuple[int, int]] | None = {}
    for i, source in enumerate(sources):
        if not isinstance(source, (str, Path)):
            inputs.append(("the spans", _counted(iter([(0, load_spans(source, read, warnings))]))))
            last = None
            continue
        real = stack.enter_context(regular_file(source))
        found = detect(real)
        reader = path_reader(source, found)
        if found.name == "otlp" and not real.is_dir() and is_json_lines(real):
            from .otlp import read_otlp_batches

            inputs.append((str(source), _counted(read_otlp_batches(real), source, found, read, warnings)))
            if last is not None:
                last.update((trace_id, (i, lines[1])) for trace_id, lines in trace_lines(real).items())
        else:
            inputs.append((str(source), _counted(iter([(0, reader(real))]), source, found, read, warnings)))
            last = None
    if last is None:
        return inputs, None
    return inputs, _closing(last)


def _closing(last: dict[str, tuple[int, int]]) -> dict[tuple[int, int], list[str]]:
    """``{(source, line): [trace ids whose last span is there]}`` from ``{trace id: (source, line)}``."""
    closing: dict[tuple[int, int], list[str]] = {}
    for trace_id, at in last.items():
        closing.setdefault(at, []).append(trace_id)
    return closing


def _counted(batches: Iterator[tuple[int, Iterable[Span]]], path: str | Path | None = None, found: Any = None,
             read: list[str] | None = None, warnings: list[str] | None = None) -> Iterator[tuple[int, list[Span]]]:
    """The batches as lists, and (for a file) what it held said (:func:`.sources.read_note`) once
    they are all read."""
    n = 0
    for line, spans in batches:
        spans = list(spans)
        n += len(spans)
        yield line, spans
    if path is not None and read is not None and warnings is not None:
        read_note(path, found, n, read, warnings)


def _request_traces(sources: list[Any], index: LabelIndex, opts: IngestOptions,
                    result: IngestResult) -> Iterator[Trace]:
    """The traces of the spans, one request at a time (see :mod:`.grouping`), into ``result``."""
    accounts = Accounts(result, index, opts, _names(sources))
    with contextlib.ExitStack() as stack:
        inputs, closing = _inputs(sources, stack, result.read, result.warnings)
        groups = TraceGroups(closing)
        for i, (name, batches) in enumerate(inputs):
            for line, spans in batches:
                yield from accounts.line(i, line, spans, groups, name)
        for seq, trace_id, group in groups.finish():
            yield from accounts.done(seq, request(trace_id, group, accounts.paths or "the spans", cache=accounts.cache))
        yield from accounts.finish()
    conclude(result, index, accounts.chunk_keys, accounts.conventions, accounts.spans)


# Reading one file in parts.

@dataclass
class PartPlan:
    """How to read one OTLP JSON Lines file in parts: the byte ranges, and where each trace closes."""

    name: str  # the path as given
    path: Path
    found: Any  # its detected format
    parts: list[FilePart]
    closing: dict[tuple[int, int], list[str]]


def plan_parts(sources: list[Any], opts: IngestOptions, workers: int | None,
               meanwhile: Callable[[], _T]) -> tuple[PartPlan | None, _T]:
    """The parts of the one input when it is worth reading in parts (one plain OTLP JSON Lines
    file of :data:`MIN_SPLIT_BYTES` or more, runs not split, Linux, and a cut that keeps every
    trace whole), else None; and what ``meanwhile()`` (reading the labels) gave.

    ``meanwhile`` runs once, in this process while the scan's processes run: the labels take
    about as long as the scan, and read before it they kept one core busy and the other idle.
    An error it raises stops the scan and is raised as it was (a bad label file is reported
    before anything the spans file holds, as when the labels were read first)."""
    workers = (os.cpu_count() or 1) if workers is None else workers
    splittable = _splittable(sources, opts, workers)
    if splittable is None:
        return None, meanwhile()
    path, found = splittable
    with scanning(path, workers=workers) as scanned:  # the scan is split over the workers too
        other = meanwhile()
        scan = scanned()
    lines = scan.traces
    cuts = safe_cuts(lines.values(), max((last for _, last in lines.values()), default=0), workers)
    if not cuts:
        return None, other
    starts = [0, *(scan.starts[cut - 1] for cut in cuts), path.stat().st_size]
    first_lines = [1, *cuts]
    parts = [(starts[k], starts[k + 1], first_lines[k]) for k in range(len(first_lines))]
    closing = _closing({t: (0, last) for t, (_, last) in lines.items()})
    return PartPlan(str(sources[0]), path, found, parts, closing), other


def _splittable(sources: list[Any], opts: IngestOptions, workers: int) -> tuple[Path, Any] | None:
    """The one input's path and detected format when :func:`plan_parts` may read it in parts; None
    when it is not worth it, or when its format cannot be told (then one process reads it and
    reports why, after the labels, as it always did)."""
    from .export_kinds import detect

    if workers < 2 or len(sources) != 1 or opts.split_runs or not _can_fork():
        return None
    source = sources[0]
    if not isinstance(source, (str, Path)):
        return None
    path = Path(source)
    if not path.is_file() or path.suffix == ".gz" or path.stat().st_size < MIN_SPLIT_BYTES:
        return None
    try:
        found = detect(path)
    except SpanError:
        return None
    return (path, found) if found.name == "otlp" and is_json_lines(path) else None


def _can_fork() -> bool:
    """Forking is safe on Linux; macOS's system libraries are not fork-safe (Python starts
    processes there by spawning), and Windows cannot fork: there one process reads the file."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


@dataclass
class _PartJob:
    """What every part's process needs; a forked process inherits it (labels and options may
    hold functions, which need not be picklable)."""

    plan: PartPlan
    index: LabelIndex
    opts: IngestOptions
    files: list[Path]  # where each part writes its traces


_JOB: _PartJob | None = None


class _Unscanned(Exception):
    """A part met a trace the scan did not close: one process must read the file."""


@dataclass
class _PartDone:
    """What reading one part found; its traces are in the part's file."""

    result: IngestResult
    # query ids, pipelines and trace ids of the traces, in accounting order: three lists, which
    # go back to the main process in a third of the time a list of tuples takes
    keys: tuple[list[str], list[str], list[str]]
    used: list[int]  # positions of the labels a request matched
    chunk_keys: set[Any]
    conventions: Counter[tuple[str, str]]
    spans: int
    unscanned: bool = False  # a trace the scan did not close: read the file in one process
    error: Exception | None = None  # raised after the keys before it are checked against earlier parts


def _ingest_part(k: int) -> _PartDone:
    """Read part ``k`` of the job's file into the job's ``k``-th file (in a forked process)."""
    from .otlp import read_otlp_batches

    assert _JOB is not None
    job = _JOB
    result = IngestResult([], [], [])
    accounts = Accounts(result, job.index, job.opts, job.plan.name)
    groups = TraceGroups(job.plan.closing)
    error = None
    unscanned = False
    try:
        with open(job.files[k], "wb", buffering=WRITE_BUFFER) as out:
            for line, spans in read_otlp_batches(job.plan.path, job.plan.parts[k]):
                for trace in accounts.line(0, line, spans, groups, job.plan.name):
                    out.write(trace_line(trace))
            unscanned = bool(groups.open)
    except TraceError as exc:  # SpanError too; raised by the caller, in file order
        error = exc
    used = [i for i, label in enumerate(job.index.labels) if id(label) in job.index.used]
    seen = accounts.seen
    keys = ([query_id for query_id, _ in seen], [pipeline for _, pipeline in seen], list(seen.values()))
    return _PartDone(result, keys, used, accounts.chunk_keys, accounts.conventions,
                     sum(accounts.spans.values()), unscanned, error)


def _ingest_parts_to(out: str | Path, plan: PartPlan, index: LabelIndex, opts: IngestOptions,
                     inputs: list[str | Path]) -> IngestResult | None:
    """Read the planned parts in as many processes and account them in file order into one
    result and ``out``; None when a part met a trace the scan did not close (then one process
    must read the file). The first part writes straight into the output's temporary file
    (a plain one) and the others' files are appended to it: the largest part is never copied."""
    result = IngestResult([], [], [])
    # gz: every part's file goes through the compressor; a device or pipe (is_special) is opened once
    gz = Path(out).suffix == ".gz" or is_special(out)
    try:
        with scratch_folder() as folder, atomic_output(out, inputs) as tmp:
            files = [folder / f"{k}.jsonl" for k in range(len(plan.parts))]
            if not gz:
                files[0] = tmp
            parts = _read_parts(_PartJob(plan, index, opts, files), result)
            with trace_stream(tmp, out, append=not gz) as stream:
                for path in files if gz else files[1:]:
                    append_file(path, stream)
    except _Unscanned:  # the output's temporary file is gone, the target untouched
        return None
    result.written = result.counts.n
    n_spans = sum(part.spans for part in parts)
    read_note(plan.name, plan.found, n_spans, result.read, result.warnings)
    chunk_keys: set[Any] = set()
    conventions: Counter[tuple[str, str]] = Counter()
    for part in parts:
        chunk_keys |= part.chunk_keys
        conventions.update(part.conventions)
    conclude(result, index, chunk_keys, conventions, Counter({plan.name: n_spans}))
    return result


def _read_parts(job: _PartJob, result: IngestResult) -> list[_PartDone]:
    """Run the job's parts in as many forked processes and account them in file order into
    ``result``; raises a part's error (after checking the query ids before it against the
    earlier parts, as one process would meet them) or :class:`_Unscanned`."""
    global _JOB
    _JOB = job
    try:
        with ProcessPoolExecutor(len(job.plan.parts), mp_context=multiprocessing.get_context("fork"),
                                 initializer=die_with_parent) as pool:
            parts = list(pool.map(_ingest_part, range(len(job.plan.parts))))
    finally:
        _JOB = None
    if any(part.unscanned for part in parts if part.error is None):
        raise _Unscanned
    accounts = Accounts(result, job.index, job.opts, job.plan.name)
    for part in parts:
        keys = list(zip(zip(part.keys[0], part.keys[1]), part.keys[2]))
        for key, trace_id in keys:
            if key in accounts.seen:
                raise accounts.asked_twice(key, trace_id)
        if part.error is not None:
            raise part.error
        accounts.seen.update(keys)
    for part in parts:
        result.merge(part.result)
        job.index.used.update(id(job.index.labels[i]) for i in part.used)
    return parts


def append_file(path: Path, stream: IO[bytes]) -> None:
    """Append the bytes of ``path`` to ``stream``: copied by the kernel, file to file, when the
    stream is a plain file (a part's traces never pass through this process: a tenth of the
    time), else through a buffer (a ``.gz`` stream compresses them)."""
    with open(path, "rb") as source:
        if not isinstance(stream, io.BufferedWriter):
            shutil.copyfileobj(source, stream, 1 << 20)
            return
        stream.flush()  # what is buffered goes first
        offset, size = 0, os.fstat(source.fileno()).st_size
        while offset < size:
            sent = os.sendfile(stream.fileno(), source.fileno(), offset, size - offset)
            if sent == 0:
                raise OSError(f"{path}: ended after {offset} of its {size} bytes")
            offset += sent
