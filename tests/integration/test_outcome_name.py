"""The outcome enum has one name, ``Outcome``: no second name for it in the package or at the top level."""

import ast
import importlib
from pathlib import Path

import pytest

import ragstage
from ragstage.rules import Outcome

ROOT = Path(ragstage.__file__).parent


@pytest.mark.parametrize("module", ["ragstage", "ragstage.rules", "ragstage.attribution"])
def test_only_outcome_is_exported(module):
    mod = importlib.import_module(module)
    assert mod.Outcome is Outcome
    assert not hasattr(mod, "Stage")
    assert "Stage" not in getattr(mod, "__all__", ())


def test_no_module_names_the_enum_stage():
    users = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if (isinstance(node, ast.Name) and node.id == "Stage")
        or (isinstance(node, ast.alias) and "Stage" in (node.name, node.asname))
    )
    assert users == []
