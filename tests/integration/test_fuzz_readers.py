"""A permanent guard: generated bad files through every reader and command.

Hypothesis (seeded: ``derandomize=True``, two examples of a few files each, so it stays short)
writes batches of bad JSON Lines files (plain and gzip), Parquet files, label files and run
folders. One child process runs every command on every file of a batch, in-process, each
case under an alarm; the parent runs the child under a timeout. Every case must end with
exit 2 and one line of stderr naming the file, the line (or row) and, where one field is
at fault, the field: never a traceback, a hang or a silent exit 0.

Which field a bad record is faulted for is asked of :func:`ragstage.fields.check_record`
in the parent; the commands must then all name that same field.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from repo_paths import REPO

from ragstage.errors import TraceError
from ragstage.fields import FIELDS, check_record

SPANS = REPO / "fixtures" / "ingest" / "langchain_spans.jsonl"
GOOD = REPO / "fixtures" / "incidents" / "batch.jsonl"
FUZZ = settings(max_examples=2, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# The child: runs each case's argv through ragstage.cli.main (or load_run), one alarm per case.
_DRIVER = textwrap.dedent("""
    import contextlib, io, json, signal, sys, traceback

    from ragstage.cli import main
    from ragstage.errors import TraceError

    def load_run(folder):
        from ragstage.runs import load_run as load
        try:
            load(folder)
        except (TraceError, ValueError, FileNotFoundError) as exc:
            print(f"load_run: error: {exc}", file=sys.stderr)
            return 2
        return 0

    def alarm(*_):
        raise TimeoutError("case took longer than 20 s")

    signal.signal(signal.SIGALRM, alarm)
    out = []
    for argv in json.load(open(sys.argv[1])):
        err = io.StringIO()
        signal.alarm(20)
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = load_run(argv[1]) if argv[0] == "load_run" else main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            code = "crash: " + traceback.format_exc()
        finally:
            signal.alarm(0)
        out.append({"argv": argv, "code": code, "stderr": err.getvalue()})
    json.dump(out, open(sys.argv[2], "w"))
""")


def _run_batch(tmp: Path, cases: list[tuple[list[str], list[str]]]) -> None:
    """Run ``(argv, must appear in stderr)`` cases in one child; assert each ends as a clean exit 2."""
    plan, results = tmp / "plan.json", tmp / "results.json"
    plan.write_text(json.dumps([argv for argv, _ in cases]))
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(plan), str(results)], capture_output=True,
                          text=True, cwd=tmp, timeout=600)
    assert done.returncode == 0, done.stderr
    for (argv, needles), result in zip(cases, json.loads(results.read_text())):
        stderr = result["stderr"].strip()
        assert result["code"] == 2, (argv, result["code"], stderr)
        assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr, (argv, stderr)
        for needle in needles:
            assert needle in stderr, (argv, needle, stderr)


# -- bad trace records ---------------------------------------------------------------------------

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.floats(allow_nan=False,
                       allow_infinity=False), st.text(max_size=5))
_json = st.recursive(_json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                     max_leaves=6)
_BASE = {"query_id": "q", "gold": ["d1"], "retrieved": [{"id": "d1", "score": 1.0, "section": "s"}],
         "prompt": ["d1"], "answer": "d1", "correct": True, "meta": {"k": 1}}


def _fault(record: dict[str, Any]) -> str | None:
    """The field check_record names for a record, or "" when it is valid; None: it faults no one field."""
    try:
        check_record(record)
    except TraceError as exc:
        return exc.field
    return ""


@st.composite
def bad_record_line(draw) -> tuple[bytes, str | None]:
    """One line that is not a valid trace, and the field it must be reported for (None: the line only)."""
    kind = draw(st.sampled_from(["field", "field", "unknown", "structure"]))
    if kind == "field":
        name = draw(st.sampled_from(list(FIELDS)))
        record = {**_BASE, name: draw(_json)}
        field = _fault(record)
        if field == "":  # the value happened to be valid: make it a string where a list is needed
            record, field = {**_BASE, "gold": "d1"}, "gold"
        return orjson.dumps(record), field
    if kind == "unknown":
        key = draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in FIELDS))
        return orjson.dumps({**_BASE, key: 1}), key
    depth = draw(st.integers(300, 900))
    return draw(st.sampled_from([
        (b'{"query_id": "q", "gold": ["d1"', None),  # a torn line
        (b'["q"]', None),
        (b"17", None),
        (b'{"query_id": "q\xff\xfe"}', None),  # invalid UTF-8
        (b'{"query_id": "q", "meta": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}", "meta"),
        (b'{"query_id": "q", "retrieved": [{"id": "d", "score": 1e999}]}', None),
    ]))


@st.composite
def bad_trace_file(draw) -> tuple[bytes, int, str | None]:
    """File content with the bad line at ``line`` among good ones."""
    before = draw(st.integers(0, 4))
    after = draw(st.integers(0, 2))
    bad, field = draw(bad_record_line())
    good = [orjson.dumps({**_BASE, "query_id": f"g{i}"}) for i in range(before + after)]
    lines = good[:before] + [bad] + good[before:]
    return b"\n".join(lines) + b"\n", before + 1, field


def _needles(path: Path, unit: str, position: int | None, field: str | None) -> list[str]:
    return [str(path)] + ([f"{unit} {position}"] if position is not None else []) + (
        [f"field '{field}'"] if field else [])


def _commands(path: Path, tmp: Path, index: int) -> list[list[str]]:
    return [["attribute", str(path)], ["attribute", str(path), "--by", "none", "--flags"],
            ["compare", str(path), str(GOOD)], ["compare", str(GOOD), str(path)],
            ["convert", str(path), str(tmp / f"out{index}.jsonl")],
            ["convert", str(path), str(tmp / f"out{index}.parquet")], ["doctor", str(path)]]


@FUZZ
@given(st.lists(bad_trace_file(), min_size=3, max_size=3))
def test_bad_json_lines_files_fail_cleanly_in_every_command(tmp_path_factory, files):
    tmp = tmp_path_factory.mktemp("fuzz")
    cases = []
    for i, (content, line, field) in enumerate(files):
        for name, data in ((f"bad{i}.jsonl", content), (f"bad{i}.jsonl.gz", gzip.compress(content))):
            path = tmp / name
            path.write_bytes(data)
            cases += [(argv, _needles(path, "line", line, field)) for argv in _commands(path, tmp, i)]
    _run_batch(tmp, cases)
    assert not list(tmp.glob("out*"))  # a failed convert leaves no output


# -- bad Parquet files ---------------------------------------------------------------------------

@st.composite
def bad_parquet(draw) -> tuple[dict[str, Any], int | None, str | None]:
    """Columns of a Parquet file with one fault, the row it is on (None: the file) and its field."""
    import pyarrow as pa

    n = draw(st.integers(1, 5))
    row = draw(st.integers(0, n - 1))
    ids = [f"q{i}" for i in range(n)]
    gold = [["d1"]] * n
    kind = draw(st.sampled_from(["null id", "gold text", "nan score", "bad meta", "deep meta", "unknown",
                                 "scores alone", "bool text"]))
    columns: dict[str, Any] = {"query_id": pa.array(ids), "gold": pa.array(gold)}
    if kind == "null id":
        columns["query_id"] = pa.array([None if i == row else q for i, q in enumerate(ids)], pa.string())
        return columns, row + 1, "query_id"
    if kind == "gold text":
        columns["gold"] = pa.array(["d1"] * n)
        return columns, 1, "gold"
    if kind == "nan score":
        columns["retrieved"] = pa.array([["d1"]] * n)
        columns["retrieved_scores"] = pa.array([[float("nan") if i == row else 1.0] for i in range(n)])
        return columns, row + 1, "retrieved"
    if kind == "bad meta":
        columns["meta"] = pa.array(["{not json" if i == row else "{}" for i in range(n)])
        return columns, row + 1, "meta"
    if kind == "deep meta":
        depth = draw(st.integers(300, 900))
        deep = '{"a": ' * depth + "1" + "}" * depth
        columns["meta"] = pa.array([deep if i == row else "{}" for i in range(n)])
        return columns, row + 1, "meta"
    if kind == "unknown":
        columns["extra"] = pa.array([1] * n)
        return columns, None, "extra"
    if kind == "scores alone":
        columns["retrieved_scores"] = pa.array([[1.0]] * n)
        return columns, None, "retrieved_scores"  # a fault of the file's columns, not of a row
    columns["answerable"] = pa.array(["yes"] * n)
    return columns, 1, "answerable"


@FUZZ
@given(st.lists(bad_parquet(), min_size=3, max_size=3))
def test_bad_parquet_files_fail_cleanly_in_every_command(tmp_path_factory, tables):
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("fuzzpq")
    cases = []
    for i, (columns, row, field) in enumerate(tables):
        path = tmp / f"bad{i}.parquet"
        pq.write_table(pa.table(columns), path)
        cases += [(argv, _needles(path, "row", row, field)) for argv in _commands(path, tmp, i)
                  if argv[0] != "doctor"]  # the doctor reads Parquet as Phoenix spans
    _run_batch(tmp, cases)


# -- bad label files and run folders -------------------------------------------------------------

@st.composite
def bad_label_file(draw) -> tuple[bytes, int, str | None]:
    before = draw(st.integers(0, 3))
    bad, field = draw(st.sampled_from([
        (b'{"query_id": "weeks", "gold": "d1"}', "gold"),
        (b'{"query_id": "weeks", "gold": [1.5]}', "gold"),
        (b'{"query_id": "weeks", "gold_spans": [{"id": "d", "start": 1}]}', "gold_spans"),
        (b'{"query_id": "weeks", "colour": 1}', "colour"),
        (b'{"query_id": "weeks", "answerable": "yes"}', "answerable"),
        (b'{"query_id": "weeks\xff"}', None),
        (b'{"query_id": "weeks",', None),
        (b'[1, 2]', None),
    ]))
    good = [orjson.dumps({"query_id": f"other{i}", "gold": ["d"]}) for i in range(before)]
    return b"\n".join([*good, bad]) + b"\n", before + 1, field


@FUZZ
@given(st.lists(bad_label_file(), min_size=4, max_size=4), st.lists(bad_trace_file(), min_size=2, max_size=2))
def test_bad_label_files_and_run_folders_fail_cleanly(tmp_path_factory, labels, runs):
    tmp = tmp_path_factory.mktemp("fuzzlabels")
    cases = []
    for i, (content, line, field) in enumerate(labels):
        path = tmp / f"labels{i}.jsonl"
        path.write_bytes(content)
        cases.append((["ingest", "openinference", str(SPANS), "--labels", str(path), "--out",
                       str(tmp / f"out{i}.jsonl")], _needles(path, "line", line, field)))
    for i, (content, line, field) in enumerate(runs):
        folder = tmp / f"run{i}" / "bm25"
        folder.mkdir(parents=True)
        (folder / "traces.jsonl").write_bytes(content)
        cases.append((["load_run", str(tmp / f"run{i}")], _needles(folder / "traces.jsonl", "line", line, field)))
    _run_batch(tmp, cases)
    assert not list(tmp.glob("out*"))


@pytest.mark.parametrize("source", ["/dev/zero"])
def test_an_endless_input_is_a_clean_error(source, tmp_path):
    """Before: `ragstage attribute /dev/zero` was a MemoryError traceback."""
    _run_batch(tmp_path, [(argv, [source]) for argv in (["attribute", source], ["compare", source, str(GOOD)],
                                                        ["convert", source, str(tmp_path / "o.jsonl")])])
