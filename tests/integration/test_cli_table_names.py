"""The tables the command line prints: no line begins with data, and no ``##[`` from data reaches stdout.

GitHub Actions runs a line of a step's output as a workflow command when it begins with ``::``
(leading blanks skipped), and runs ``##[command]`` found anywhere in a line. ``attribute``'s
tables begin each row with a group (pipeline) name, and the doctor lists example ids: names
from data are shown quoted when they do not begin with a letter or a digit, and escaped.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragstage import Trace, write_traces

HOSTILE = ["::error title=x::y", "  ::warning::z", "\t::add-mask::secret", "ok\n::error::after a newline",
           "x ##[error]old form", "\u3000::notice::ideographic space"]


def ragstage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *args], capture_output=True, text=True)


def assert_inert(stdout: str) -> None:
    for line in stdout.splitlines():
        assert not line.strip().startswith("::"), line
        assert "##[" not in line, line


@pytest.fixture
def hostile(tmp_path):
    path = tmp_path / "hostile.jsonl"
    traces = [Trace(query_id=f"q{i}", pipeline=name, gold=["a"], retrieved=["a"], prompt=["a"], answer="a",
                    correct=True) for i, name in enumerate(HOSTILE)]
    traces.append(Trace(query_id="plain", pipeline="baseline", gold=["a"], retrieved=["a"], prompt=["a"]))
    write_traces(path, traces)
    return path


@pytest.mark.parametrize("options", [(), ("--flags",), ("--by", "none")])
def test_attribute_tables_begin_no_line_with_a_name(hostile, options):
    done = ragstage("attribute", str(hostile), *options)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("group")
    if not options or options[0] == "--flags":
        assert any(line.startswith('"::error title=x::y"') for line in lines)
        assert any(line.startswith("baseline ") for line in lines)  # a plain name is shown as it is
        assert any(line.startswith("ok\\n::error::after a newline") for line in lines)


def test_the_doctor_shows_example_ids_escaped(tmp_path):
    path = tmp_path / "ids.jsonl"
    write_traces(path, [Trace(query_id=f"q{i}\n::error::id ##[error]x", gold=["a"], retrieved=["a", "a"],
                              prompt=["a"], correct=True) for i in range(2)])
    done = ragstage("doctor", str(path))
    assert "duplicate ids" in done.stdout, done.stdout + done.stderr
    assert_inert(done.stdout)
    assert "q0\\n::error::id #\\x23[error]x" in done.stdout


def test_compare_prints_no_name_first(tmp_path):
    one = tmp_path / "one.jsonl"
    write_traces(one, [Trace(query_id=name, gold=["a"], retrieved=["a"], prompt=["a"], correct=True)
                       for name in HOSTILE])
    done = ragstage("compare", str(one), str(one))
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
