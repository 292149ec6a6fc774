"""Reader faults of issue 22, one test each: every one is an error naming file, line or row, and field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from ragstage.ingest.gold import LabelIndex, read_labels
from ragstage.ingest.spans import SpanError

SPANS = REPO / "fixtures" / "ingest" / "langchain_spans.jsonl"
GOOD = REPO / "fixtures" / "incidents" / "batch.jsonl"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def _labels(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("line, field", [
    ('{"query_id": "a", "gold": false}', "gold"),
    ('{"query_id": "a", "gold": 0}', "gold"),
    ('{"query_id": "a", "gold": ""}', "gold"),
    ('{"query_id": "a", "gold_spans": false}', "gold_spans"),
    ('{"query_id": "a", "gold_spans": [{"id": ["d"], "start": 0, "end": 3}]}', "gold_spans"),
    ('{"query_id": "a", "gold_spans": [{"id": true, "start": 0, "end": 3}]}', "gold_spans"),
])
def test_label_values_are_never_coerced(tmp_path, line, field):
    """Before: `gold: false` or `0` became no gold, a span id ["d"] the text "['d']"."""
    path = _labels(tmp_path, '{"query_id": "ok", "gold": ["d"]}', line)
    with pytest.raises(SpanError) as info:
        read_labels(path)
    assert info.value.field == field and info.value.line == 2 and str(path) in str(info.value)


def test_null_gold_is_still_no_gold(tmp_path):
    (label,) = read_labels(_labels(tmp_path, '{"query_id": "a", "gold": null, "gold_spans": null}'))
    assert label.gold == () and label.gold_spans == ()


def test_a_label_given_twice_names_its_file_and_both_lines(tmp_path):
    """Before: "query_id 'a' labelled twice (lines 1 and 3)", with no file."""
    path = _labels(tmp_path, '{"query_id": "a", "gold": ["d"]}', '{"query_id": "b"}', '{"query_id": "a"}')
    with pytest.raises(SpanError) as info:
        LabelIndex(read_labels(path))
    assert str(info.value).startswith(f"{path}, line 3, field 'query_id'") and "(lines 1 and 3)" in str(info.value)
    run = _cli("ingest", "openinference", SPANS, "--labels", path, "--out", tmp_path / "t.jsonl")
    assert run.returncode == 2 and f"{path}, line 3, field 'query_id'" in run.stderr


COMMANDS = ("attribute", "compare", "convert", "doctor")


def _every_command(path: Path, tmp_path: Path) -> list[str]:
    """The one stderr line of each command on ``path`` (each must exit 2)."""
    lines = []
    for command in COMMANDS:
        extra = {"compare": [GOOD], "convert": [tmp_path / "out.jsonl"]}.get(command, [])
        run = _cli(command, path, *extra)
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, (command, run.stderr)
        lines.append(run.stderr.strip().split(": error: ", 1)[1])
    assert not (tmp_path / "out.jsonl").exists()
    return lines


@pytest.mark.parametrize("depth", [80, 300, 700, 1000])
def test_deep_meta_is_one_clear_error_in_every_command(tmp_path, depth):
    """Before: 600+ levels a RecursionError in attribute; 254-599 accepted by three commands, convert half-written."""
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"query_id": "a"}\n{"query_id": "q", "meta": ' + b'{"a": ' * depth + b"1"
                     + b"}" * depth + b"}\n")
    assert set(_every_command(path, tmp_path)) == {f"{path}, line 2, field 'meta': nested more than 64 levels deep"}


def test_meta_as_deep_as_allowed_reads_and_converts(tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(b'{"query_id": "q", "meta": ' + b'{"a": ' * 64 + b"1" + b"}" * 64 + b"}\n")
    assert _cli("convert", path, tmp_path / "out.jsonl").returncode == 0


@pytest.mark.parametrize("name", ["bad.jsonl", "bad.jsonl.gz"])
def test_invalid_utf8_is_named_on_its_own_line_by_every_command(tmp_path, name):
    """Before: compare said line 1 where attribute said 2; in a .gz, line 1933 for line 2001."""
    import gzip

    body = b"".join(b'{"query_id": "q%d", "answer": "%s"}\n' % (i, b"x" * 200) for i in range(2000))
    body += b'{"query_id": "b\xff"}\n'
    path = tmp_path / name
    path.write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    for line in _every_command(path, tmp_path):
        assert line.startswith(f"{path}, line 2001: invalid JSON"), line


def test_invalid_utf8_in_a_label_file_names_its_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b'{"query_id": "a", "gold": ["d"]}\n{"query_id": "\xff"}\n')
    with pytest.raises(SpanError, match=r"labels.jsonl, line 2: invalid JSON"):
        read_labels(path)


def test_a_non_breaking_space_line_is_invalid_json_in_every_command(tmp_path):
    """Before: skipped by two commands, rejected by a third."""
    path = tmp_path / "nbsp.jsonl"
    path.write_bytes('{"query_id": "a"}\n\u00a0\n{"query_id": "b"}\n \t\r\n'.encode())
    for line in _every_command(path, tmp_path):
        assert line.startswith(f"{path}, line 2: invalid JSON"), line


def test_duplicate_keys_follow_one_documented_rule_in_every_reader(tmp_path):
    """The rule (README, "What a failure leaves behind"): a key repeated in one object, the last value counts,
    in every reader and command alike (JSON's own rule leaves it to the reader)."""
    import gzip

    from ragstage import read_traces
    from ragstage.trace_files import count_file

    path = tmp_path / "dup.jsonl"
    path.write_bytes(b'{"query_id": "a", "gold": ["d1"], "retrieved": ["d1"], "gold": []}\n')
    gz = tmp_path / "dup.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    for source in (path, gz):
        (trace,) = read_traces(source)
        assert trace.gold == ()
        assert dict(count_file(source).buckets["default"]) == {"label_missing": 1}


def _parquet(path: Path, **columns) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"query_id": ["a", "b"], "gold": [["d1"], ["d1"]], **columns}), path)
    return path


def _both(path: Path) -> list[str]:
    out = []
    for argv in (["attribute", path], ["compare", path, path], ["convert", path, path.with_suffix(".jsonl")]):
        run = _cli(*argv)
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, (argv, run.stderr)
        out.append(run.stderr.strip().split(": error: ", 1)[1])
    return out


def test_nan_and_infinite_scores_from_parquet_are_refused_where_they_enter(tmp_path):
    """Before: convert wrote them as null scores, which the reader then rejected."""
    for i, bad in enumerate((float("nan"), float("inf"))):
        path = _parquet(tmp_path / f"nan{i}.parquet", retrieved=[["d1"], ["d1"]], retrieved_scores=[[1.0], [bad]])
        assert set(_both(path)) == {f"{path}, row 2, field 'retrieved': score must be a finite number, got {bad!r}"}
        assert not path.with_suffix(".jsonl").exists()


def test_scores_without_their_ranked_list_are_an_error(tmp_path):
    """Before: a retrieved_scores column without retrieved was dropped."""
    path = _parquet(tmp_path / "s.parquet", retrieved_scores=[[1.0], [2.0]])
    assert set(_both(path)) == {f"{path}, field 'retrieved_scores': scores without the ranked list: "
                                "add the 'retrieved' column"}
    import pyarrow as pa

    nulls = _parquet(tmp_path / "n.parquet", reranked=pa.array([None, None], pa.list_(pa.string())),
                     reranked_scores=[[1.0], [2.0]])
    assert set(_both(nulls)) == {f"{nulls}, row 1, field 'reranked_scores': scores without the ranked list "
                                 "(null or missing)"}


def test_a_json_lines_file_inside_a_parquet_folder_is_an_error(tmp_path):
    """Before: it was ignored, its traces silently left out."""
    lake = tmp_path / "lake"
    lake.mkdir()
    _parquet(lake / "part-0.parquet")
    (lake / "late.jsonl").write_text('{"query_id": "z"}\n')
    for line in _both(lake):
        assert line == (f"{lake / 'late.jsonl'}: a JSON Lines file inside a Parquet folder: "
                        "read it on its own, or move it out")


def test_a_corrupt_text_column_fails_the_same_in_every_command(tmp_path):
    """Before: accepted by attribute (which skips the query column) and rejected by compare."""
    import pyarrow as pa

    raw = pa.array([b"fine", b"bad\xff"], pa.binary())
    query = pa.Array.from_buffers(pa.string(), 2, raw.buffers())
    path = _parquet(tmp_path / "q.parquet", query=query)
    assert set(_both(path)) == {f"{path}, row 2, field 'query': invalid UTF-8 text"}


def test_an_arrow_error_is_printed_on_one_line(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    run = _cli("attribute", path)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and str(path) in run.stderr


def test_a_section_without_a_score_is_kept_in_json_parquet_ingest_and_the_logger(tmp_path):
    """Before: sections were kept only beside scores (an error in Parquet, dropped by ingest)."""
    from ragstage import Trace, read_traces
    from ragstage.ingest import Span, ingest_openinference
    from ragstage.ingest.tracelog import TraceLogger
    from ragstage.parquet import read_parquet, write_parquet

    path = tmp_path / "t.jsonl"
    path.write_text('{"query_id": "a", "retrieved": [{"id": "d1", "section": "intro"}, {"id": "d2", "score": 0.5}],'
                    ' "reranked": [{"id": "d1", "section": "intro"}]}\n')
    (trace,) = read_traces(path)
    assert trace.retrieved_scores == (None, 0.5) and trace.retrieved_sections == ("intro", None)
    assert trace.reranked_scores is None and trace.reranked_sections == ("intro",)
    assert trace.to_dict()["retrieved"] == [{"id": "d1", "section": "intro"}, {"id": "d2", "score": 0.5}]
    write_parquet(tmp_path / "t.parquet", [trace])
    assert list(read_parquet(tmp_path / "t.parquet")) == [trace]

    def ingested(*documents: dict[str, str]) -> Trace:
        attrs = {"openinference.span.kind": "RETRIEVER"}
        for i, document in enumerate(documents):
            attrs |= {f"retrieval.documents.{i}.document.{key}": value for key, value in document.items()}
        (trace,) = ingest_openinference([Span("t1", "r", None, "r", 1, 2, attrs)]).traces
        return trace

    trace = ingested({"id": "d1", "metadata": '{"section": "intro"}'}, {"id": "d2"})
    assert trace.to_dict()["retrieved"] == [{"id": "d1", "section": "intro"}, {"id": "d2"}]
    trace = ingested({"id": "d1"})
    assert trace.retrieved_scores is None and trace.retrieved_sections is None
    assert trace.to_dict()["retrieved"] == ["d1"]
    logged = TraceLogger(tmp_path / "log.jsonl").log(query_id="q", query="q", retrieved=[("d1", None, "intro")],
                                                     prompt=None, answer="")
    assert logged.retrieved_sections == ("intro",) and logged.retrieved_scores is None
    assert Trace(query_id="x", retrieved=("d1",), retrieved_sections=("s",)).to_dict()["retrieved"] == [
        {"id": "d1", "section": "s"}]
