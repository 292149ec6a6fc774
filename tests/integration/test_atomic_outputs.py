"""Every output is written whole or not at all: ``convert``, ``write_traces``, ``write_parquet``.

Each test names a fault that destroyed data before the writers went through
:mod:`ragstage.atomic`: a failed ``convert`` emptied its target, left a valid 0-row Parquet
file or a partial JSON Lines file, a hard link to the input wiped the input, and a folder
as the target gave a traceback.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from ragstage import Trace, read_traces, write_traces
from ragstage.atomic import OutputError, append_line, atomic_output, atomic_write_bytes, check_output

GOOD = REPO / "fixtures" / "incidents" / "batch.jsonl"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def _bad_file(tmp_path: Path) -> Path:
    """Two good traces, then a line that is not a trace."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "a"}\n{"query_id": "b"}\n{"query_id": "c", "gold": "d1"}\n')
    return bad


@pytest.mark.parametrize("name", ["keep.jsonl", "keep.jsonl.gz", "keep.parquet"])
def test_failed_convert_keeps_the_old_target(tmp_path, name):
    keep = tmp_path / name
    assert _cli("convert", GOOD, keep).returncode == 0
    before = keep.read_bytes()
    run = _cli("convert", _bad_file(tmp_path), keep)
    assert run.returncode == 2 and "line 3, field 'gold'" in run.stderr
    assert keep.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["bad.jsonl", name])  # no temporary file left


@pytest.mark.parametrize("name", ["new.jsonl", "new.parquet"])
def test_failed_convert_leaves_no_target(tmp_path, name):
    """A failed .parquet target must not leave a valid 0-row file that `attribute` would read with exit 0."""
    run = _cli("convert", _bad_file(tmp_path), tmp_path / name)
    assert run.returncode == 2
    assert not (tmp_path / name).exists()
    assert _cli("attribute", tmp_path / name).returncode == 2


def test_invalid_utf8_leaves_no_partial_output(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"query_id": "a"}\n{"query_id": "b\xff"}\n')
    run = _cli("convert", bad, tmp_path / "out.jsonl")
    assert run.returncode == 2 and not (tmp_path / "out.jsonl").exists()


def test_hard_link_to_the_input_is_refused(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_bytes(GOOD.read_bytes())
    os.link(source, tmp_path / "alias.jsonl")
    os.symlink(source, tmp_path / "sym.jsonl")
    for target in ("alias.jsonl", "sym.jsonl", "in.jsonl"):
        run = _cli("convert", source, tmp_path / target)
        assert run.returncode == 2 and "the output must not be the input" in run.stderr, run.stderr
    assert source.read_bytes() == GOOD.read_bytes()


def test_parquet_folder_input_file_is_refused_as_target(tmp_path):
    folder = tmp_path / "lake"
    folder.mkdir()
    assert _cli("convert", GOOD, folder / "part.parquet").returncode == 0
    before = (folder / "part.parquet").read_bytes()
    os.link(folder / "part.parquet", tmp_path / "alias.parquet")
    run = _cli("convert", folder, tmp_path / "alias.parquet")
    assert run.returncode == 2 and "the output must not be the input" in run.stderr
    assert (folder / "part.parquet").read_bytes() == before


def test_folder_target_is_a_clean_error(tmp_path):
    (tmp_path / "out.jsonl").mkdir()
    for target in (tmp_path, tmp_path / "out.jsonl", tmp_path / "missing" / "out.jsonl"):
        run = _cli("convert", GOOD, target)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_write_traces_gzip_round_trip_and_mode(tmp_path):
    traces = [Trace(query_id=f"q{i}", gold=("d",)) for i in range(3)]
    path = tmp_path / "t.jsonl.gz"
    assert write_traces(path, traces) == 3
    assert gzip.decompress(path.read_bytes()).count(b"\n") == 3
    assert list(read_traces(path)) == traces
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_atomic_output_keeps_the_target_on_any_exception(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_output(target) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"


def test_check_output_refusals(tmp_path):
    with pytest.raises(OutputError, match="is a folder"):
        check_output(tmp_path)
    with pytest.raises(OutputError, match="no such folder"):
        check_output(tmp_path / "nope" / "x")
    (tmp_path / "a").write_text("x")
    with pytest.raises(OutputError, match="must not be the input"):
        check_output(tmp_path / "a", [tmp_path / "a"])
    assert check_output(tmp_path / "b", [tmp_path / "a"]) == tmp_path / "b"


def test_append_line_cuts_a_torn_fragment_and_closes_a_whole_last_record(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2')
    assert append_line(path, b'{"c": 3}\n') == len(b'{"b": 2')
    assert path.read_bytes() == b'{"a": 1}\n{"c": 3}\n'
    path.write_bytes(b'{"a": 1}\n{"b": 2}')  # a whole record that only lacks its newline is kept
    assert append_line(path, b'{"c": 3}\n') == 0
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n{"c": 3}\n'
    with pytest.raises(ValueError, match="whole lines"):
        append_line(path, b"x")
