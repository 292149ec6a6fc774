"""Killing a command kills its workers: none is left running, adopted by PID 1.

Before, ``SIGKILL`` on ``ragstage attribute --workers 2`` (or ``ingest spans --workers 2``)
left both workers running forever, and ``ragstage attribute big.jsonl | tail`` stayed open
because the orphans held the pipe.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from ragstage import Trace, write_traces


def workers_of(process: subprocess.Popen, count: int, timeout: float = 60) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = psutil.Process(process.pid).children(recursive=True)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"the command never started {count} workers")


def assert_all_gone(workers: list[psutil.Process], timeout: float = 10) -> None:
    gone, alive = psutil.wait_procs(workers, timeout=timeout)
    for orphan in alive:  # clean up before failing: the test must not leave them either
        orphan.kill()
    assert not alive, f"{len(alive)} worker(s) outlived the killed command"


def kill_and_check(script: str, *args: str, count: int = 2) -> None:
    process = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        workers = workers_of(process, count)
        time.sleep(0.5)  # the workers run their initializer, then the task
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        assert_all_gone(workers)
    finally:
        if process.poll() is None:
            process.kill()


SLOW_ATTRIBUTE = textwrap.dedent("""
    import sys, time
    import ragstage.streaming as streaming
    from ragstage.cli import main

    def slow(*args):  # each worker counts "for ever"
        time.sleep(120)

    slow.__module__, slow.__qualname__ = "ragstage.streaming", "count_range"  # what the pool sends by name
    streaming.count_range = slow
    main(["attribute", "--workers", "2", sys.argv[1]])
""")


def test_killing_attribute_kills_its_workers(tmp_path):
    path = tmp_path / "big.jsonl"
    write_traces(path, [Trace(query_id=f"q{i}", query="x" * 600, gold=["d1"], retrieved=["d1"])
                        for i in range(8000)])  # over the 4 MB a file needs to be split over workers
    assert path.stat().st_size > 4 << 20
    kill_and_check(SLOW_ATTRIBUTE, str(path))


POOL = textwrap.dedent("""
    import sys, time
    from concurrent.futures import ProcessPoolExecutor
    import ragstage.workers as workers

    # "watch": the fallback of systems without PR_SET_PDEATHSIG
    initializer = workers.watch_parent if sys.argv[1] == "watch" else workers.die_with_parent
    with ProcessPoolExecutor(2, initializer=initializer) as pool:
        list(pool.map(time.sleep, [120, 120]))
""")


@pytest.mark.parametrize("how", ["death signal", "watch"])
def test_pool_workers_die_with_their_parent(how):
    kill_and_check(POOL, how)
