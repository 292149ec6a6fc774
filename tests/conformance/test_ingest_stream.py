"""Streamed ingest (an OTLP JSON Lines file read line by line, each request read as soon as its
last span is in) gives exactly what reading every span first gives.

Random exports: requests of a root, retrievers, an LLM span (some cut at the prompt, some
answered wrong, some incomplete, some not requests at all), their spans shuffled over lines of
random length so one trace's spans sit on lines far apart, in either key style, over one or two
files. The reference is the same spans handed over as objects (held whole, as before).
"""

from __future__ import annotations

import gzip
import io
import multiprocessing
import subprocess
import sys

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from span_files import one_trace_a_line, otlp_span

from ragstage.atomic import OutputError
from ragstage.ingest import SpanError, flow, grouping, ingest_spans, ingest_spans_to, read_otlp_json
from ragstage.ingest.grouping import line_offsets, safe_cuts, scanning, trace_lines
from ragstage.trace import read_traces, trace_output, trace_stream

WORDS = "leave budget travel hotel weeks approval laptop security remote staff policy receipt".split()


@st.composite
def exports(draw, shuffle=True):
    """``(lines of spans, labels)``: each line a list of span tuples (shuffled over the lines,
    or in request order, so that a file can be cut between requests)."""
    passages = [" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=8, max_size=14))) + f" p{i}"
                for i in range(12)]
    spans, labels = [], []
    n_requests = draw(st.integers(1, 12))
    for r in range(n_requests):
        trace = f"{r + 1:032x}"
        ids = iter(f"{r * 16 + k + 1:016x}" for k in range(16))
        root = next(ids)
        t = 1_000 + r * 100
        shape = draw(st.sampled_from(["ok", "ok", "ok", "no-llm", "orphan", "indexing"]))
        qid = f"q{draw(st.integers(0, 40))}" if draw(st.booleans()) else f"q{r}"
        if shape == "indexing":
            spans.append((trace, root, None, "index", t, {"openinference.span.kind": "CHAIN"}))
            continue
        if shape != "orphan":
            spans.append((trace, root, None, "chain", t, {"openinference.span.kind": "CHAIN", "metadata": orjson.dumps(
                {"query_id": qid}).decode(), "input.value": f"question {r}?"}))
        chosen = draw(st.lists(st.integers(0, len(passages) - 1), min_size=1, max_size=5, unique=True))
        for j in range(draw(st.integers(1, 2))):
            docs = {}
            for i, d in enumerate(chosen):
                p = f"retrieval.documents.{i}.document"
                docs[f"{p}.content"] = passages[d]
                docs[f"{p}.metadata"] = orjson.dumps({"source": f"doc{d // 3}", "start_index": (d % 3) * 200}).decode()
                docs[f"{p}.score"] = float(10 - i)
            spans.append((trace, next(ids), root, f"retriever{j}", t + 1 + j, {"openinference.span.kind": "RETRIEVER",
                                                                              **docs}))
        if shape != "no-llm":
            shown = [passages[d] for d in chosen[: draw(st.integers(1, len(chosen)))]]
            if draw(st.booleans()):
                shown[-1] = shown[-1][: len(shown[-1]) // 2]
            spans.append((trace, next(ids), root, "llm", t + 9, {
                "openinference.span.kind": "LLM", "llm.input_messages.0.message.content": "\n\n".join(shown),
                "llm.output_messages.0.message.content": draw(st.sampled_from(["an answer", "I don't know."]))}))
        gold = chosen[draw(st.integers(0, len(chosen) - 1))]
        if draw(st.booleans()):
            labels.append({"query_id": qid, "gold_spans": [{"id": f"doc{gold // 3}", "start": (gold % 3) * 200 + 2,
                                                            "end": (gold % 3) * 200 + 20}]})
    order = draw(st.permutations(range(len(spans)))) if shuffle else range(len(spans))
    shuffled = [spans[i] for i in order]
    lines, at = [], 0
    while at < len(shuffled):
        size = draw(st.integers(1, 4))
        lines.append(shuffled[at:at + size])
        at += size
    labels.append({"query_id": "never-asked", "gold": ["x"]})
    seen, unique = set(), []
    for label in labels:  # one label a query id
        if label["query_id"] not in seen:
            seen.add(label["query_id"])
            unique.append(label)
    return lines, unique


def _write(path, lines, snake):
    top, scopes = ("resource_spans", "scope_spans") if snake else ("resourceSpans", "scopeSpans")
    with open(path, "wb") as out:
        for line in lines:
            out.write(orjson.dumps({top: [{scopes: [{"spans": [otlp_span(s, snake) for s in line]}]}]}) + b"\n")
            out.write(b"\n")  # blank lines count in the line numbers and hold nothing


def _essentials(result):
    return {"unmatched": [(lb.query_id, lb.line) for lb in result.unmatched_labels],
            "without_llm": result.without_llm, "skipped": result.skipped, "incomplete": result.incomplete,
            "unlocated": result.unlocated, "partial": result.partial, "keys": result.chunk_metadata_keys,
            "warnings": result.warnings,
            "summary": [line for line in result.summary().splitlines() if not line.startswith("read ")]}


def _whole(paths, labels, split_runs):
    spans = [s for p in paths for s in read_otlp_json(p)]  # objects: held whole, every request read at the end
    return ingest_spans(spans, labels=labels, split_runs=split_runs)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                                   HealthCheck.too_slow])
@given(exports(), st.booleans(), st.booleans(), st.booleans())
def test_streamed_ingest_equals_the_whole_file_read(tmp_path, export, snake, two_files, split_runs):
    lines, labels = export
    labels_path = tmp_path / "labels.jsonl"
    labels_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels))
    cut = len(lines) // 2 if two_files else len(lines)
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"][: 2 if two_files and 0 < cut < len(lines) else 1]
    _write(paths[0], lines[:cut] if len(paths) == 2 else lines, snake)
    if len(paths) == 2:
        _write(paths[1], lines[cut:], snake)
    out = tmp_path / "traces.jsonl"
    out.write_bytes(b"earlier data\n")
    try:
        whole = _whole(paths, labels_path, split_runs)
    except SpanError as exc:  # two runs in one export: the streamed read must stop the same way
        with pytest.raises(SpanError) as streamed_error:
            ingest_spans_to(out, [str(p) for p in paths], labels=labels_path, split_runs=split_runs)
        assert streamed_error.value.detail.split(":", 1)[1] == exc.detail.split(":", 1)[1]
        assert out.read_bytes() == b"earlier data\n"  # a failed ingest leaves the old file as it was
        return
    streamed = ingest_spans_to(out, [str(p) for p in paths], labels=labels_path, split_runs=split_runs)
    in_memory = ingest_spans([str(p) for p in paths], labels=labels_path, split_runs=split_runs)
    expected = [t.to_dict() for t in whole.traces]
    assert [t.to_dict() for t in read_traces(out)] == expected
    assert [t.to_dict() for t in in_memory.traces] == expected
    assert streamed.written == len(expected) and streamed.traces == []
    assert _essentials(streamed) == _essentials(whole) == _essentials(in_memory)


def test_the_scan_finds_each_trace_last_line_in_either_key_style(tmp_path):
    path = tmp_path / "spans.jsonl"
    span = {"name": "x", "attributes": [{"key": "traceId", "value": {"stringValue": "not a key"}}]}
    path.write_bytes(b"\n".join([
        orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "traceId": "A" * 32,
                                                                    "spanId": "1" * 16}]}]}]}),
        b"",
        orjson.dumps({"resource_spans": [{"scope_spans": [{"spans": [{**span, "trace_id": "b" * 32}]}]}]}),
        orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "traceId": "a" * 32}]}]}]}),
    ]) + b"\n")
    assert trace_lines(path) == {"a" * 32: (1, 4), "b" * 32: (3, 3)}
    for block_size in (1, 7, 64, 300):  # blocks of whole lines, however the reads fall
        assert trace_lines(path, block_size) == {"a" * 32: (1, 4), "b" * 32: (3, 3)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.integers(0, 5), max_size=3), min_size=1, max_size=12), st.integers(2, 4),
       st.sampled_from([1, 50, 1 << 23]), st.booleans())
def test_the_scan_split_over_processes_finds_what_one_process_finds(tmp_path, lines, workers, block_size, newline):
    """Each line names some of six traces (blank lines too); cut into ranges scanned by forked
    processes, every trace keeps its first and last line in the whole file."""
    path = tmp_path / "spans.jsonl"
    rows = [orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": f"{t + 1:032x}", "spanId": f"{k + 1:016x}"} for k, t in enumerate(ids)]}]}]}) if ids else b""
        for ids in lines]
    path.write_bytes(b"\n".join(rows) + (b"\n" if newline else b""))
    expected = {f"{t + 1:032x}": (min(i for i, ids in enumerate(lines, 1) if t in ids),
                                  max(i for i, ids in enumerate(lines, 1) if t in ids))
                for t in {t for ids in lines for t in ids}}
    assert trace_lines(path, block_size) == expected
    assert trace_lines(path, block_size, workers=workers) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), min_size=1, max_size=40),
       st.integers(1, 64), st.integers(1, 3))
def test_the_scan_finds_where_each_line_starts(tmp_path, lines, block_size, workers):
    """Every line's byte offset, the same however the file is cut into blocks and ranges: what
    counting newlines gives (a last newline starts no line)."""
    path = tmp_path / "f.jsonl"
    content = b"\n".join(lines)
    path.write_bytes(content)
    with scanning(path, block_size, workers) as scanned:
        starts = list(scanned().starts)
    assert starts == [k for k in range(len(content)) if k == 0 or content[k - 1] == 10]
    assert starts == line_offsets(path, list(range(1, len(starts) + 1)), block_size)


@given(st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), min_size=1, max_size=30),
       st.integers(1, 64), st.data())
def test_the_scan_reads_regions_of_whole_lines_in_order(lines, block_size, data):
    """Regions that hold the stream's bytes in order, each ending with a newline but the last."""
    content = b"\n".join(lines)
    ends = [k + 1 for k, byte in enumerate(content) if byte == 10]
    left = data.draw(st.sampled_from([-1, *ends]))  # a range ends at a line end
    regions = [data_[start:stop] for data_, start, stop in grouping.line_regions(io.BytesIO(content), block_size, left)]
    assert b"".join(regions) == (content if left < 0 else content[:left])
    assert all(region.endswith(b"\n") for region in regions[:-1]) and all(regions)


def test_leaving_the_scan_before_its_result_stops_its_processes(tmp_path):
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": f"{k + 1:032x}"}]}]}]}) + b"\n" for k in range(4)))
    with pytest.raises(RuntimeError), scanning(path, workers=2):
        children = multiprocessing.active_children()
        raise RuntimeError
    assert len(children) == 2 and not any(child.is_alive() for child in children)


def test_a_trace_id_the_scan_cannot_read_is_a_clear_error(tmp_path):
    """A key written with an escape (valid JSON, never seen in a real export) hides a span from
    the scan: the trace would be read without it, so ingest stops, naming file and line."""
    path = tmp_path / "spans.jsonl"
    span = {"traceId": "a" * 32, "spanId": "1" * 16, "name": "root",
            "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]}
    first = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    hidden = first.replace(b'"traceId"', b'"trace\\u0049d"').replace(b"1" * 16, b"2" * 16)
    path.write_bytes(first + b"\n" + hidden + b"\n")
    with pytest.raises(SpanError, match="trace-id scan") as err:
        ingest_spans_to(tmp_path / "t.jsonl", str(path))
    assert err.value.line == 2 and str(path) in str(err.value)


@pytest.mark.parametrize("parents", [{"a": "a"}, {"a": "b", "b": "a"}])
def test_a_looping_parent_chain_in_a_file_is_an_error_not_a_hang(tmp_path, parents):
    path = tmp_path / "loop.jsonl"
    spans = [{"traceId": "f" * 32, "spanId": k * 16, "parentSpanId": v * 16, "name": k,
              "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]}
             for k, v in parents.items()]
    path.write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + b"\n")
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--out",
                          str(tmp_path / "t.jsonl")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "parent chain loops" in run.stderr and "Traceback" not in run.stderr


# Reading one file in parts (one process a part) gives what one process gives.

def _ingest_or_error(out, path, labels, workers):
    try:
        result = ingest_spans_to(out, str(path), labels=labels, workers=workers)
    except SpanError as exc:
        return str(exc), None
    return out.read_bytes(), (_essentials(result), result.read, result.written)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                                   HealthCheck.too_slow])
@given(st.one_of(exports(shuffle=False), exports()), st.booleans(), st.integers(2, 3))
def test_a_file_read_in_parts_gives_what_one_process_gives(tmp_path, monkeypatch, export, snake, workers):
    """Same bytes out, same result, or the same error (a query id asked twice, in one part or in
    two, is reported naming the same two requests)."""
    lines, labels = export
    labels_path = tmp_path / "labels.jsonl"
    labels_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels))
    path = tmp_path / "spans.jsonl"
    _write(path, lines, snake)
    one = _ingest_or_error(tmp_path / "one.jsonl", path, labels_path, 1)
    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    parts = _ingest_or_error(tmp_path / "parts.jsonl", path, labels_path, workers)
    assert parts == one


def test_the_plan_cuts_between_traces_and_errors_keep_the_file_line(tmp_path, monkeypatch):
    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    path = tmp_path / "spans.jsonl"
    one_trace_a_line(path, 7)
    plan = flow.plan_parts([str(path)], flow.IngestOptions(), 2, _nothing)[0]
    assert plan is not None and len(plan.parts) == 2 and plan.parts[1][2] % 2 == 1  # a part starts at a retriever line
    parts = _ingest_or_error(tmp_path / "a.jsonl", path, None, 2)
    assert parts == _ingest_or_error(tmp_path / "b.jsonl", path, None, 1)
    one_trace_a_line(path, 7, bad_line=12)  # in the second part
    message, _ = _ingest_or_error(tmp_path / "c.jsonl", path, None, 2)
    assert message == _ingest_or_error(tmp_path / "d.jsonl", path, None, 1)[0] and "line 12:" in message
    one_trace_a_line(path, 14)  # q0..q6 asked twice: the second q0 is in the second part
    message, _ = _ingest_or_error(tmp_path / "e.jsonl", path, None, 2)
    assert message == _ingest_or_error(tmp_path / "f.jsonl", path, None, 1)[0] and "both have query_id 'q0'" in message


def test_a_part_that_meets_a_trace_the_scan_missed_hands_the_file_to_one_process(tmp_path, monkeypatch):
    """The scan closes trace a after line 1, so the file is cut before line 2, where a span of
    trace a hides its id from the scan: the part cannot be read alone, one process reads the
    file and stops on that line, as it does without parts."""
    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    path = tmp_path / "spans.jsonl"
    span = {"traceId": "a" * 32, "spanId": "1" * 16, "name": "root",
            "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}]}
    first = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    hidden = first.replace(b'"traceId"', b'"trace\\u0049d"').replace(b"1" * 16, b"2" * 16)
    other = first.replace(b"a" * 32, b"b" * 32).replace(b"1" * 16, b"3" * 16)
    path.write_bytes(first + b"\n" + hidden + b"\n" + other + b"\n")
    assert [part[2] for part in flow.plan_parts([str(path)], flow.IngestOptions(), 2, _nothing)[0].parts] == [1, 2]
    target = tmp_path / "t.jsonl"
    target.write_bytes(b"earlier traces\n")
    with pytest.raises(SpanError, match="trace-id scan") as err:
        ingest_spans_to(target, str(path), workers=2)
    assert err.value.line == 2
    # the first part wrote into the output's temporary file: it is gone, the target as it was
    assert target.read_bytes() == b"earlier traces\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "spans.jsonl", "t.jsonl"]


def test_the_command_reads_a_large_file_in_parts_with_the_same_output(tmp_path):
    """``--workers 2`` on a file over MIN_SPLIT_BYTES, through the command line, against ``--workers 1``."""
    path = tmp_path / "spans.jsonl"
    one_trace_a_line(path, 2_600, repeat=10 ** 9, padding=" ".join(WORDS) * 40)
    assert path.stat().st_size > flow.MIN_SPLIT_BYTES
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"traces{workers}.jsonl"
        run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--out", str(out),
                              "--workers", workers], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        outputs.append((out.read_bytes(), run.stderr.replace(str(out), "OUT")))
    assert outputs[0] == outputs[1] and "wrote 2600 trace(s)" in outputs[0][1]


def _nothing() -> None:
    """A plan's ``meanwhile`` with nothing to do."""


def test_the_plan_runs_its_meanwhile_once_whether_or_not_it_scans(tmp_path, monkeypatch):
    path = tmp_path / "spans.jsonl"
    one_trace_a_line(path, 7)
    calls = []
    for min_split, workers in ((0, 2), (0, 1), (1 << 40, 2)):
        monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", min_split)
        plan, got = flow.plan_parts([str(path)], flow.IngestOptions(), workers, lambda: calls.append(1) or len(calls))
        assert (plan is not None) == (workers == 2 and min_split == 0) and got == len(calls)
    assert calls == [1, 1, 1]


@pytest.mark.parametrize("spans", ["otlp", "unknown"])
def test_a_bad_label_read_during_the_scan_is_the_error_one_process_gives(tmp_path, monkeypatch, spans):
    """Labels are read while the scan runs: a bad one is still reported first, naming file,
    line and field (before a spans file of no known format too), and the scan's processes end."""
    path = tmp_path / "spans.jsonl"
    if spans == "otlp":
        one_trace_a_line(path, 7)
    else:
        path.write_bytes(b'{"something": "else"}\n')
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(b'{"query_id": "q0", "gold": ["d"]}\n{"query_id": "q1", "gold": "d"}\n')
    one = _ingest_or_error(tmp_path / "one.jsonl", path, labels, 1)
    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    assert _ingest_or_error(tmp_path / "parts.jsonl", path, labels, 2) == one
    assert "labels.jsonl" in one[0] and "line 2" in one[0] and "gold" in one[0]
    assert not multiprocessing.active_children()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=3000), max_size=4), st.binary(max_size=20), st.sampled_from(["", ".gz"]))
def test_appending_part_files_gives_their_bytes_in_order(tmp_path, contents, before, suffix):
    """Parts copied by the kernel into a plain output, or through a buffer into a .gz one, land
    after what was written before and in order."""
    parts = []
    for k, content in enumerate(contents):
        parts.append(tmp_path / f"{k}.jsonl")
        parts[-1].write_bytes(content)
    out = tmp_path / f"out.jsonl{suffix}"
    with trace_output(out) as stream:
        stream.write(before)
        for part in parts:
            flow.append_file(part, stream)
    written = gzip.decompress(out.read_bytes()) if suffix else out.read_bytes()
    assert written == before + b"".join(contents)


def test_a_part_that_fails_leaves_the_target_and_no_temporary_file(tmp_path, monkeypatch):
    """The first part writes into the output's temporary file; a bad line in the second part
    removes it, and an existing target keeps its bytes."""
    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    path = tmp_path / "spans.jsonl"
    one_trace_a_line(path, 7, bad_line=12)
    target = tmp_path / "traces.jsonl"
    target.write_bytes(b"earlier traces\n")
    with pytest.raises(SpanError, match="line 12"):
        ingest_spans_to(target, str(path), workers=2)
    assert target.read_bytes() == b"earlier traces\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spans.jsonl", "traces.jsonl"]


def test_a_trace_stream_appends_to_a_plain_file_only(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.write_bytes(b"first part\n")
    with trace_stream(tmp, tmp_path / "out.jsonl", append=True) as stream:
        stream.write(b"second part\n")
    assert tmp.read_bytes() == b"first part\nsecond part\n"
    with trace_stream(tmp, tmp_path / "out.jsonl") as stream:  # not appending: from the start
        stream.write(b"x\n")
    assert tmp.read_bytes() == b"x\n"
    with pytest.raises(ValueError, match="gzip"), trace_stream(tmp, tmp_path / "out.jsonl.gz", append=True):
        pass


def test_parts_written_to_a_gz_output_give_what_one_process_writes(tmp_path, monkeypatch):
    path = tmp_path / "spans.jsonl"
    one_trace_a_line(path, 9, repeat=10 ** 9)
    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    outs = [tmp_path / f"{workers}.jsonl.gz" for workers in (1, 2)]
    for workers, out in zip((1, 2), outs):
        assert ingest_spans_to(out, str(path), workers=workers).written == 9
    assert gzip.decompress(outs[0].read_bytes()) == gzip.decompress(outs[1].read_bytes())


@pytest.mark.parametrize("parts", [False, True])
@pytest.mark.parametrize("over", ["spans", "labels"])
def test_a_file_read_is_refused_as_the_output_and_kept(tmp_path, monkeypatch, parts, over):
    """``--out`` naming the spans or the labels file would write the traces over what is being
    read: refused before anything is read, in one process and in parts, the file kept."""
    path, labels = tmp_path / "spans.jsonl", tmp_path / "labels.jsonl"
    one_trace_a_line(path, 7)
    labels.write_bytes(b'{"query_id": "q0", "gold": ["d"]}\n')
    target = path if over == "spans" else labels
    before = target.read_bytes()
    if parts:
        monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    with pytest.raises(OutputError, match="must not be the input"):
        ingest_spans_to(target, str(path), str(labels), workers=2 if parts else 1)
    assert target.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["labels.jsonl",
                                                                                             "spans.jsonl"]


def test_a_file_of_an_input_parquet_folder_is_refused_as_the_output(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(b"not read: refused first")
    with pytest.raises(OutputError, match="must not be the input"):
        ingest_spans_to(folder / "part-0.parquet", str(folder))
    assert (folder / "part-0.parquet").read_bytes() == b"not read: refused first"


def test_the_command_refuses_to_write_over_its_input(tmp_path):
    path = tmp_path / "spans.jsonl"
    one_trace_a_line(path, 3)
    before = path.read_bytes()
    run = subprocess.run([sys.executable, "-m", "ragstage.cli", "ingest", "spans", str(path), "--out", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "the output must not be the input" in run.stderr
    assert path.read_bytes() == before


def test_small_files_and_one_worker_are_read_in_one_process(tmp_path):
    path = tmp_path / "spans.jsonl"
    one_trace_a_line(path, 3)
    assert flow.plan_parts([str(path)], flow.IngestOptions(), 2, _nothing)[0] is None  # under MIN_SPLIT_BYTES
    assert flow.plan_parts([str(path)], flow.IngestOptions(), 1, _nothing)[0] is None


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 6)), max_size=30), st.integers(1, 5))
def test_no_trace_straddles_a_safe_cut(spans, parts):
    lines = [(first, first + length) for first, length in spans]
    n_lines = max((last for _, last in lines), default=0)
    cuts = safe_cuts(lines, n_lines, parts)
    assert cuts == sorted(set(cuts)) and len(cuts) <= parts - 1
    assert all(1 < c <= n_lines for c in cuts)
    assert not any(first < c <= last for c in cuts for first, last in lines)


def test_safe_cuts_pick_the_safe_line_nearest_an_even_split():
    assert safe_cuts([(1, 3), (2, 2), (4, 6), (7, 7), (8, 10)], 10, 2) == [7]
    assert safe_cuts([(1, 10)], 10, 4) == []
    assert safe_cuts([(k, k) for k in range(1, 9)], 8, 4) == [3, 5, 7]


@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), min_size=1, max_size=40),
       st.integers(1, 64), st.data())
def test_line_offsets_agree_with_counting_newlines(tmp_path_factory, lines, block_size, data):
    path = tmp_path_factory.mktemp("offsets") / "f.txt"
    content = b"\n".join(lines)
    path.write_bytes(content)
    starts = [0] + [i + 1 for i, byte in enumerate(content) if byte == 10]
    wanted = sorted(data.draw(st.sets(st.integers(1, len(starts)))))
    assert line_offsets(path, wanted, block_size) == [starts[t - 1] for t in wanted]
    with pytest.raises(ValueError, match="has no line"):
        line_offsets(path, [len(starts) + 1], block_size)
