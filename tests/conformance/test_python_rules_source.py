"""The committed Python interpreter of the rules is exactly what its generator writes from the tables."""

import subprocess
import sys
from pathlib import Path

import ragstage.python_rules
from ragstage.python_rules_source import source


def test_the_committed_module_is_the_generated_source():
    committed = Path(ragstage.python_rules.__file__).read_text()
    assert committed == source(), "run: python -m ragstage.python_rules_source"


def test_the_generator_checks_from_the_command_line():
    done = subprocess.run([sys.executable, "-m", "ragstage.python_rules_source", "--check"], capture_output=True)
    assert done.returncode == 0, done.stderr
