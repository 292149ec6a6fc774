"""Stopping a server a test started in a process group of its own (``start_new_session=True``)."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(process: subprocess.Popen, timeout: float = 20) -> None:
    """End the process and every child it started: SIGTERM to the group, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)
