"""Kill every writer mid-write (SIGKILL at a seeded point) and check what survives.

A killed write may lose the record in flight, never earlier data: a whole-file writer
(``convert``, ``ingest --out``) leaves the old target exactly as it was; an appending writer
(``TraceLogger``, the run cache) keeps every line written before the kill, and the next
writer starts on a clean line.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap

import pytest
from repo_paths import REPO

from ragstage import Trace, read_traces, write_traces
from ragstage.ingest.tracelog import TraceLogger
from ragstage.pipeline.store import JsonlStore

SPANS = REPO / "fixtures" / "ingest" / "langchain_spans.jsonl"
SEEDS = (0, 1)

# Prepended to each child: `die_at(k)` makes the k-th os.write write half its bytes, then SIGKILL the process.
_TORN_WRITE = textwrap.dedent("""
    import os, signal, sys
    _real_write, _calls = os.write, [0]
    def _torn(fd, data):
        _calls[0] += 1
        if _calls[0] == DIE_AT:
            _real_write(fd, bytes(data[:len(data) // 2]))
            os.kill(os.getpid(), signal.SIGKILL)
        return _real_write(fd, data)
    os.write = _torn
""")

# Prepended to each child: the k-th trace convert reads kills the process (whatever the output format).
_KILL_AT_READ = textwrap.dedent("""
    import os, signal, sys
    from ragstage import trace_files
    _real = trace_files.read_any
    def _killing(path):
        for i, trace in enumerate(_real(path), start=1):
            if i == DIE_AT:
                os.kill(os.getpid(), signal.SIGKILL)
            yield trace
    trace_files.read_any = _killing
""")

# Prepended to each child: the k-th trace line made for a trace file kills the process (before
# any module binds trace_line: the ingest is imported when its command runs).
_KILL_AT_TRACE = textwrap.dedent("""
    import os, signal, sys
    from ragstage import trace
    _real, _calls = trace.trace_line, [0]
    def _killing(one):
        _calls[0] += 1
        if _calls[0] == DIE_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        return _real(one)
    trace.trace_line = _killing
""")


def _run_killed(prelude: str, body: str, die_at: int, *args: object) -> None:
    code = f"DIE_AT = {die_at}\n" + prelude + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr  # it really was killed mid-write


def _traces(n: int, prefix: str = "q") -> list[Trace]:
    return [Trace(query_id=f"{prefix}{i}", gold=("d1",), retrieved=("d1", "d2"), prompt=("d1",),
                  answer="x" * 200, correct=True) for i in range(n)]


@pytest.mark.parametrize("seed, name", [(0, "out.jsonl"), (1, "out.jsonl.gz"), (2, "out.parquet")])
def test_killed_convert_keeps_the_old_target(tmp_path, seed, name):
    source, target = tmp_path / "in.jsonl", tmp_path / name
    write_traces(source, _traces(1000))
    old = _traces(5, prefix="old")
    if name.endswith(".parquet"):
        from ragstage.parquet import write_parquet

        write_parquet(target, old)
    else:
        write_traces(target, old)
    before = target.read_bytes()
    die_at = random.Random(seed).randrange(100, 900)
    _run_killed(_KILL_AT_READ, """
        from ragstage.cli import main
        main(["convert", sys.argv[1], sys.argv[2]])
    """, die_at, source, target)
    assert target.read_bytes() == before
    from ragstage.trace_files import read_any

    assert [t.query_id for t in read_any(target)] == [t.query_id for t in old]


@pytest.mark.parametrize("seed", SEEDS[:1])
def test_killed_ingest_out_keeps_the_old_target(tmp_path, seed):
    target = tmp_path / "traces.jsonl"
    write_traces(target, _traces(4, prefix="old"))
    before = target.read_bytes()
    die_at = random.Random(seed).randrange(2, 7)  # the fixture holds 7 requests
    _run_killed(_KILL_AT_TRACE, """
        from ragstage.cli import main
        main(["ingest", "openinference", sys.argv[1], "--out", sys.argv[2]])
    """, die_at, SPANS, target)
    assert target.read_bytes() == before


@pytest.mark.parametrize("seed", SEEDS)
def test_killed_trace_logger_loses_only_the_trace_in_flight(tmp_path, seed):
    path = tmp_path / "logs" / "traces.jsonl"
    die_at = random.Random(seed).randrange(3, 40)
    _run_killed(_TORN_WRITE, """
        from ragstage.ingest.tracelog import TraceLogger
        log = TraceLogger(sys.argv[1])
        for i in range(50):
            log.log(query_id=f"q{i}", query="question " * 20, retrieved=[("d1", 0.5, "s")], prompt=["d1"],
                    answer="answer " * 50, gold=["d1"])
    """, die_at, path)
    assert not path.read_bytes().endswith(b"\n")  # the kill tore a line
    with pytest.warns(UserWarning, match="torn last line"):
        TraceLogger(path).log(query_id="after", query="q", retrieved=["d1"], prompt=["d1"], answer="a")
    assert [t.query_id for t in read_traces(path)] == [f"q{i}" for i in range(die_at - 1)] + ["after"]


@pytest.mark.parametrize("seed", SEEDS)
def test_killed_run_cache_loses_only_the_item_in_flight(tmp_path, seed):
    path = tmp_path / "cache" / "generations.jsonl"
    die_at = random.Random(seed).randrange(3, 40)
    _run_killed(_TORN_WRITE, """
        from ragstage.pipeline.store import JsonlStore
        store = JsonlStore(sys.argv[1])
        for i in range(50):
            store.put(f"k{i}", {"text": "generated " * 100, "i": i})
    """, die_at, path)
    with pytest.warns(UserWarning, match="1 torn line"):
        store = JsonlStore(path)
    assert sorted(store.items(), key=lambda kv: kv[1]["i"]) == [
        (f"k{i}", {"text": "generated " * 100, "i": i}) for i in range(die_at - 1)]
    store.put("after", 1)
    again = JsonlStore(path)
    assert again.torn_lines == 0 and len(again) == die_at
