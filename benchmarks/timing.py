"""Run a command in a subprocess and report its wall time, CPU time and peak memory (shared by the benchmarks)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

# Runs the command and prints the peak RSS of its own process tree: a parent's RUSAGE_CHILDREN
# only ever grows, so each measured command gets a wrapper process of its own.
_WRAP = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
         "sys.stderr.write(f'\\nPEAK_KB {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n'); sys.exit(rc)")


def timed(cmd: list[str], label: str) -> dict:
    """Wall seconds, CPU seconds (user + system, over every child process) and the peak RSS of
    the largest process, in MB. Each command runs in a fresh subprocess, so the numbers add up
    only its own work; CPU time is the fairer figure on a machine shared with other jobs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _WRAP, *cmd], capture_output=True, text=True, env=os.environ.copy())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"{label} failed with exit code {done.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak_kb = int(done.stderr.rsplit("PEAK_KB ", 1)[1])
    return {"label": label, "wall": wall, "cpu": cpu, "peak_mb": peak_kb / 1024, "stdout": done.stdout}


def show(rows: list[dict], reference: str | None = None) -> None:
    ref = next((r for r in rows if r["label"] == reference), None)
    print(f"{'what':44} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}" + ("  wall, cpu / " + reference if ref else ""))
    for r in rows:
        ratio = f"  {r['wall'] / ref['wall']:.2f}x  {r['cpu'] / ref['cpu']:.2f}x" if ref else ""
        print(f"{r['label']:44} {r['wall']:8.2f} {r['cpu']:8.2f} {r['peak_mb']:8.0f}{ratio}")
