"""Every ``console`` example in the README that shows output prints exactly that output.

A README is the first thing a practitioner copies from; an example whose numbers drifted from
what the command prints would teach them to distrust the rest.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def examples():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for block in BLOCK.findall(text):
        lines = block.rstrip("\n").split("\n")
        command, output = lines[0], lines[1:]
        if command.startswith("$ ragstage ") and output:
            yield command[2:], "\n".join(output)


EXAMPLES = list(examples())


def test_the_readme_has_console_examples_with_output():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("command, expected", EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_console_example_prints_what_the_readme_shows(command, expected):
    args = shlex.split(command)[1:]
    done = subprocess.run([sys.executable, "-m", "ragstage.cli", *args], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == expected
