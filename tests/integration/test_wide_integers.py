"""Integers beyond 64 bits in ``meta``: every reader refuses them, naming the file, the line and the key.

orjson reads such an integer as a float (its last digits lost) and msgspec reads it exactly, so
without the check ``convert`` wrote a different number than it read, and a group named by the key
differed between ``attribute`` and the notebooks.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from repo_paths import REPO

from ragstage.errors import TraceError
from ragstage.ingest.tracelog import read_log
from ragstage.trace import read_traces

GOOD = '{"query_id": "q1", "gold": ["d1"], "retrieved": ["d1"], "meta": {"run": 18446744073709551615}}\n'
WIDE = '{"query_id": "q2", "gold": ["d1"], "meta": {"run": 123456789012345678901234567890}}\n'
MESSAGE = "line 2, field 'meta.run': an integer outside the 64-bit range"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    path = tmp_path / "wide.jsonl"
    path.write_text(GOOD + WIDE)
    return path


@pytest.mark.parametrize("command", [["attribute"], ["attribute", "--by", "meta.run"], ["convert", "out.jsonl"],
                                     ["convert", "out.parquet"]])
@pytest.mark.parametrize("gz", [False, True])
def test_cli_refuses_a_wide_integer(wide, command, gz):
    source = wide
    if gz:
        source = wide.with_suffix(".jsonl.gz")
        source.write_bytes(gzip.compress(wide.read_bytes()))
    name, *rest = command
    args = [wide.parent / a if a.startswith("out.") else a for a in rest]
    result = _cli(name, source, *args)
    assert result.returncode == 2, result.stderr
    assert f"{source}, {MESSAGE}" in result.stderr and "Traceback" not in result.stderr
    assert not (wide.parent / "out.jsonl").exists() and not (wide.parent / "out.parquet").exists()


def test_cli_refuses_a_wide_integer_in_parquet_meta(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(GOOD + WIDE.replace("123456789012345678901234567890", "1"))
    assert _cli("convert", good, tmp_path / "good.parquet").returncode == 0
    table = pq.read_table(tmp_path / "good.parquet")
    column = table.schema.get_field_index("meta")
    table = table.set_column(column, "meta", pa.array(['{"run": 1}', '{"run": -9223372036854775809}']))
    pq.write_table(table, tmp_path / "wide.parquet")
    result = _cli("attribute", tmp_path / "wide.parquet")
    assert result.returncode == 2
    assert "wide.parquet, row 2, field 'meta.run': an integer outside the 64-bit range" in result.stderr


def test_python_readers_refuse_a_wide_integer(wide):
    with pytest.raises(TraceError) as err:
        list(read_traces(wide))
    assert (err.value.line, err.value.field) == (2, "meta.run")
    with pytest.raises(TraceError) as err:
        read_log(wide)
    assert err.value.field == "meta.run"


def test_widest_64_bit_integers_and_wide_floats_pass(tmp_path):
    path = tmp_path / "edge.jsonl"
    path.write_text(GOOD + '{"query_id": "q2", "meta": {"low": -9223372036854775808, "float": 1e30}}\n')
    assert _cli("attribute", path).returncode == 0
    out = tmp_path / "out.jsonl"
    assert _cli("convert", path, out).returncode == 0
    assert [t.meta for t in read_traces(out)] == [{"run": (1 << 64) - 1}, {"low": -(1 << 63), "float": 1e30}]
