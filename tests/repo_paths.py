"""Where the repository's folders are, for tests at any depth under ``tests/``.

A test reads the notebooks, the manual, the fixtures or ``tests/junit.xsd`` through these names,
never through its own file's position, so moving a test between ``unit/``, ``conformance/`` and
``integration/`` changes no path it reads.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
JUNIT_XSD = TESTS / "junit.xsd"
