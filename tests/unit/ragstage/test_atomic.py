"""Output paths that are not plain new files, and outputs the system refuses to write.

A device, a FIFO or a shell's ``>(...)`` pipe is written to directly and never replaced; a
symbolic link is followed (the link stays, the file it names is replaced, its mode kept); a
new file gets the umask's mode; a name near the folder's limit still writes; and a write
the system refuses ends with one line naming the output and exit 3, which no verdict uses.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ragstage import Trace, write_traces
from ragstage.atomic import atomic_write_bytes

RIGHT = {"gold": ["d1"], "retrieved": ["d1"], "prompt": ["d1"], "answer_ids": ["d1"]}


def ragstage(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120, **kwargs)


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_traces(a, [Trace(query_id=f"q{i}", **RIGHT) for i in range(4)])
    write_traces(b, [Trace(query_id=f"q{i}", **RIGHT) for i in range(4)])
    return a, b


def read_fifo(path: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def reader() -> None:
        with open(path, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread, got


def test_a_fifo_is_written_to_and_stays_a_fifo(tmp_path, runs):
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    thread, got = read_fifo(fifo)
    done = ragstage("compare", *runs, "--gate", "--summary", fifo)
    thread.join(30)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and got[0].startswith(b"## ragstage gate: PASS")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "summary.fifo"]


def test_a_character_device_and_a_link_to_it_are_written_to_not_replaced(tmp_path, runs):
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the same device as /dev/null
    except (PermissionError, OSError):
        pytest.skip("this system does not let the tests make a device node")
    device.chmod(0o666)
    link = tmp_path / "link-to-null"
    link.symlink_to(device)
    for target in (device, link):
        done = ragstage("compare", *runs, "--junit", target, "--summary", target)
        assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat(device).st_mode) and link.is_symlink() and os.readlink(link) == str(device)
    assert stat.S_IMODE(os.stat(device).st_mode) == 0o666


def test_a_shell_pipe_is_written_to(tmp_path, runs):
    out = tmp_path / "piped.md"
    script = f'"{sys.executable}" -m ragstage.cli compare "{runs[0]}" "{runs[1]}" --summary >(cat > "{out}"); wait'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("## ragstage gate: PASS")


def test_a_link_is_followed_and_the_file_keeps_its_mode(tmp_path, runs):
    real = tmp_path / "real.xml"
    real.write_text("old")
    os.chmod(real, 0o600)
    link = tmp_path / "gate.xml"
    link.symlink_to(real)
    done = ragstage("compare", *runs, "--junit", link)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("<?xml") and stat.S_IMODE(os.stat(real).st_mode) == 0o600


def test_a_new_file_gets_the_umask_s_mode(tmp_path, runs):
    out = tmp_path / "new.md"
    done = ragstage("compare", *runs, "--summary", out, preexec_fn=lambda: os.umask(0o027))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640


def test_a_name_near_the_limit_writes_and_leaves_no_temporary(tmp_path, runs):
    out = tmp_path / ("é" * 100 + "x" * 42 + ".md")  # 245 bytes: its temporary name must be shortened
    assert len(os.fsencode(out.name)) == 245
    done = ragstage("compare", *runs, "--summary", out)
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("## ragstage gate") and len(list(tmp_path.iterdir())) == 3


def test_a_refused_write_is_one_line_exit_3_after_the_verdict(tmp_path, runs):
    out = tmp_path / ("x" * 300 + ".xml")  # longer than any folder lets a name be
    done = ragstage("compare", *runs, "--gate", "--junit", out)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ragstage compare: error: {out}: could not write: ")
    assert done.stdout.splitlines()[-1].startswith("PASS")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_unwritable_folder_is_one_line_exit_3(tmp_path, runs):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    done = ragstage("convert", runs[0], folder / "out.parquet")
    assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
    assert f"{folder / 'out.parquet'}: could not write: " in done.stderr


def test_write_error_names_the_target_not_the_temporary(tmp_path):
    from ragstage.atomic import WriteError, is_special

    target = tmp_path / ("y" * 300)
    with pytest.raises(WriteError) as caught:
        atomic_write_bytes(target, b"data")
    assert caught.value.filename == str(target) and ".tmp-" not in str(caught.value)
    assert is_special("/dev/null") and not is_special(tmp_path / "none")


def test_ingest_in_parts_into_a_fifo_writes_it_once(tmp_path, monkeypatch):
    """A file read in two parts: the parts go through one stream (a FIFO read by ``cat`` ends
    at the first close, and the parent's second open would wait for a reader for ever)."""
    from span_files import one_trace_a_line

    from ragstage.ingest import flow, ingest_spans_to

    monkeypatch.setattr(flow, "MIN_SPLIT_BYTES", 0)
    spans = tmp_path / "spans.jsonl"
    one_trace_a_line(spans, 7)
    plain = tmp_path / "plain.jsonl"
    ingest_spans_to(plain, str(spans), workers=2)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    done: list[object] = []
    writer = threading.Thread(target=lambda: done.append(ingest_spans_to(fifo, str(spans), workers=2)), daemon=True)
    writer.start()
    with open(fifo, "rb") as handle:  # one reader, as `cat` is: it stops at the first end of file
        got = handle.read()
    writer.join(30)
    assert done and not writer.is_alive(), "the ingest waited for a second reader"
    assert got == plain.read_bytes() and stat.S_ISFIFO(os.lstat(fifo).st_mode)
