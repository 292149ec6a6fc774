"""Several trace loggers on one log, and logs that repeat a question anyway.

Before, two ``TraceLogger`` instances (an app restarted, two web workers) logged the same
query id without a word, and every reader then refused the whole file; a NaN in ``meta`` was
written as null.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import orjson
import pytest

from ragstage import read_traces, write_traces
from ragstage.errors import TraceError
from ragstage.ingest.tracelog import TraceLogger


def log(logger: TraceLogger, qid: str, **extra):
    return logger.log(query_id=qid, query=f"question {qid}", retrieved=["d1"], prompt=["d1"], answer="d1", **extra)


def test_a_second_logger_cannot_repeat_a_question_of_the_first(tmp_path):
    path = tmp_path / "log.jsonl"
    first, second = TraceLogger(path), TraceLogger(path)
    log(first, "q1")
    log(second, "q2")
    with pytest.raises(ValueError, match=r"'q1' \(pipeline 'default'\) was already logged to .*\(line 1\)"):
        log(second, "q1")
    with pytest.raises(ValueError, match=r"'q2' .*\(line 2\)"):
        log(first, "q2")
    log(TraceLogger(path, pipeline="other"), "q1")  # another pipeline: another key
    assert [t.query_id for t in read_traces(path)] == ["q1", "q2", "q1"]


WRITER = textwrap.dedent("""
    import sys
    from ragstage.ingest.tracelog import TraceLogger
    logger, refused = TraceLogger(sys.argv[1]), 0
    for i in range(60):
        try:
            logger.log(query_id=f"q{i}", query="q", retrieved=["d1"], prompt=["d1"], answer="d1")
        except ValueError:
            refused += 1
    print(refused)
""")


def test_processes_logging_the_same_questions_leave_a_readable_log(tmp_path):
    path = tmp_path / "log.jsonl"
    runs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
            for _ in range(3)]
    refused = [int(p.communicate(timeout=120)[0]) for p in runs]
    assert sum(refused) == 120  # each question logged once, by whichever process came first
    assert sorted(t.query_id for t in read_traces(path)) == sorted(f"q{i}" for i in range(60))


def test_a_whole_last_record_without_its_newline_counts(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"query_id": "a"}\n{"query_id": "b"}')  # b: whole, its newline not yet written
    logger = TraceLogger(path)
    with pytest.raises(ValueError, match=r"'b' .*\(line 2\)"):
        log(logger, "b")
    log(logger, "c")
    with pytest.raises(ValueError, match=r"'c' .*\(line 3\)"):
        log(TraceLogger(path), "c")
    assert [t.query_id for t in read_traces(path)] == ["a", "b", "c"]


def test_a_rotated_log_is_read_anew(tmp_path):
    path = tmp_path / "log.jsonl"
    logger = TraceLogger(path)
    log(logger, "q1")
    path.rename(tmp_path / "log.1.jsonl")
    log(logger, "q1")  # the new file does not hold it
    assert [t.query_id for t in read_traces(path)] == ["q1"]


@pytest.mark.parametrize("meta", [{"x": math.nan}, {"deep": [1, {"y": -math.inf}]}, {"big": 1 << 64},
                                  {"small": -(1 << 63) - 1}])
def test_a_meta_value_json_cannot_hold_is_refused_and_nothing_is_written(tmp_path, meta):
    path = tmp_path / "log.jsonl"
    with pytest.raises(ValueError, match=r"meta\[.*not logged"):
        log(TraceLogger(path), "q1", meta=meta)
    assert not path.exists() or path.read_bytes() == b""
    log(TraceLogger(path), "q1", meta={"fine": [1.5, (1 << 64) - 1, -(1 << 63)]})
    assert next(read_traces(path)).meta == {"fine": [1.5, (1 << 64) - 1, -(1 << 63)]}


def read_log(*args, **kwargs):
    from ragstage.ingest.tracelog import read_log

    return read_log(*args, **kwargs)


def repeated_log(tmp_path):
    path = tmp_path / "repeats.jsonl"
    lines = [{"query_id": "a", "answer": "1", "timestamp": "2026-01-01T00:00:00Z"},
             {"query_id": "b", "answer": "2"},
             {"query_id": "a", "answer": "3", "timestamp": "2026-01-02T00:00:00Z"},
             {"query_id": "b", "answer": "4"},
             {"query_id": "a", "answer": "5", "timestamp": "2026-01-03T00:00:00Z"},
             {"query_id": "c", "answer": "6"}]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines) + b'{"query_id": "d", "ans')
    return path


def test_read_log_keeps_the_last_and_says_so(tmp_path):
    path = repeated_log(tmp_path)
    with pytest.raises(TraceError, match="duplicate query_id"):
        list(read_traces(path))
    got = read_log(path)
    assert [(t.query_id, t.answer) for t in got.traces] == [("b", "4"), ("a", "5"), ("c", "6")]
    assert (got.lines, got.repeated, got.dropped, got.renamed, got.torn_bytes) == (6, 2, 3, 0, 22)
    assert got.note == ("6 traces read, 3 kept; 2 question(s) logged more than once: kept the last of each, "
                        "left out 3 earlier line(s); a torn last line (22 bytes, a killed writer's) not read")
    out = tmp_path / "clean.jsonl"
    write_traces(out, got.traces)
    assert len(list(read_traces(out))) == 3


def test_read_log_keeps_each_under_its_timestamp(tmp_path):
    got = read_log(repeated_log(tmp_path), keep="each")
    assert [t.query_id for t in got.traces] == ["a@2026-01-01T00:00:00Z", "b@line2", "a@2026-01-02T00:00:00Z",
                                                 "b@line4", "a@2026-01-03T00:00:00Z", "c"]
    assert (got.repeated, got.dropped, got.renamed) == (2, 0, 5) and "(5 line(s))" in got.note


def test_read_log_names_a_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query_id": "a"}\n{"query_id": "b", "gold": "d1"}\n')
    with pytest.raises(TraceError, match=r"line 2, field 'gold'"):
        read_log(path)
