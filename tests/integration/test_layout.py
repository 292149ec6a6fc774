"""The layout docs/architecture.md and docs/contributing.md describe: the module map names every
module and package of ``ragstage`` and nothing else, and the tests mirror the package.

Test files live in three folders: ``unit/ragstage/<subpackage path>/`` (one module's public
functions; each folder is a package of ``ragstage``), ``conformance/`` and ``integration/``.
``tests/`` itself holds the shared helpers only. pytest imports test files by their base name
(no ``__init__.py`` anywhere, its default import mode), so two test files of one name would stop
the collection: every base name is unique. Tests import public names only, and find the
repository's files through ``repo_paths``, not through their own position.
"""

import ast
import re
from collections import Counter
from pathlib import Path

from repo_paths import REPO, TESTS

import ragstage

ROOT = Path(ragstage.__file__).parent
ARCHITECTURE = REPO / "docs" / "architecture.md"
TEST_FOLDERS = ("unit", "conformance", "integration")


def test_the_module_map_matches_the_tree():
    text = ARCHITECTURE.read_text(encoding="utf-8").split("\n## The module map", 1)[1].split("\n## ", 1)[0]
    named = {name for row in text.splitlines() if row.startswith("| `")
             for name in re.findall(r"`([\w/]+)`", row.split("|")[1])}
    tree = {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    tree |= {f"{p.name}/" for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert named == tree, f"in the tree only: {sorted(tree - named)}; in the module map only: {sorted(named - tree)}"


def _test_files() -> list[Path]:
    return sorted(path.relative_to(TESTS) for path in TESTS.rglob("test_*.py"))


def test_every_test_file_is_in_one_of_the_three_folders():
    misplaced = [str(path) for path in _test_files() if path.parts[0] not in TEST_FOLDERS or len(path.parts) < 2]
    assert not misplaced, f"test files outside unit/, conformance/ and integration/: {misplaced}"
    flat = [str(path) for path in _test_files() if path.parts[0] != "unit" and len(path.parts) > 2]
    assert not flat, f"conformance/ and integration/ have no subfolders: {flat}"


def test_the_unit_tests_mirror_the_package():
    """``tests/unit/ragstage/ingest/test_x.py`` sits in a folder that is a package of ``ragstage``."""
    stray = [str(path) for path in _test_files() if path.parts[0] == "unit"
             and not (ROOT.parent.joinpath(*path.parts[1:-1]) / "__init__.py").is_file()]
    assert not stray, f"unit test folders that are no package of ragstage: {stray}"


def test_test_file_names_are_unique_and_no_folder_is_a_package():
    repeated = [name for name, n in Counter(path.name for path in _test_files()).items() if n > 1]
    assert not repeated, f"test files of the same name (pytest imports them by base name): {repeated}"
    inits = [str(path.relative_to(TESTS)) for path in TESTS.rglob("__init__.py")]
    assert not inits, f"tests/ holds no package (its helpers are imported as top-level modules): {inits}"


def test_tests_import_public_names_only():
    private = []
    for path in _test_files():
        for node in ast.walk(ast.parse((TESTS / path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ragstage":
                names = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
                private += [f"{path}:{node.lineno} {name}" for name in names
                            if name.startswith("_") and not name.endswith("__")]
            elif isinstance(node, ast.Import):
                private += [f"{path}:{node.lineno} {alias.name}" for alias in node.names
                            if alias.name.split(".")[0] == "ragstage"
                            and any(part.startswith("_") for part in alias.name.split("."))]
    assert not private, f"tests import private names of ragstage: {private}"


def test_tests_find_the_repository_through_repo_paths():
    own_position = "Path(" + "__file__)"  # split, so this file does not hold it
    own = [str(path) for path in _test_files() if own_position in (TESTS / path).read_text(encoding="utf-8")]
    assert not own, f"tests that find files from their own position (use repo_paths.REPO): {own}"
