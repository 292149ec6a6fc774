"""Every module takes :class:`~ragstage.errors.TraceError` from :mod:`ragstage.errors`, where it is defined.

Read from the source with ``ast``, lazy imports inside functions included, so no module leans on
``ragstage.trace`` or ``ragstage.fields`` happening to import the error class.
"""

import ast
from pathlib import Path

import ragstage
import ragstage.errors

ROOT = Path(ragstage.__file__).parent


def test_trace_error_comes_from_errors_everywhere():
    elsewhere = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno} from {'.' * node.level}{node.module or ''}"
        for path in ROOT.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom)
        and any(alias.name == "TraceError" for alias in node.names)
        and (node.module or "").rpartition(".")[2] != "errors"
    )
    assert elsewhere == []


def test_top_level_trace_error_is_the_errors_class():
    assert ragstage.TraceError is ragstage.errors.TraceError
    assert "TraceError" in ragstage.__all__
