"""Each chapter's Colab install cell installs every third-party package the chapter needs.

A Colab runtime promises nothing: a chapter whose install cell names ``ragstage`` alone but
whose run cell imports ``rank_bm25`` stops at that cell. So for every chapter this test

1. reads the extras the install cell names (``%pip install "ragstage[pipeline] @ ..."``);
2. computes what that install brings: the base dependencies and those extras from
   ``pyproject.toml``, closed over the installed packages' own requirements;
3. runs the chapter's offline path (every code cell, through IPython, in a fresh interpreter)
   with every other installed module blocked, as in a runtime holding exactly that install;
4. fails when a cell raises, naming the blocked imports and the extras that would bring them.

An optional import that a library survives (pandas trying pyarrow) is blocked too, and does
not fail the chapter, as it would not in Colab. Nothing is allowed beyond the install cell: a
chapter that needs the stand-in models (chapter 6 asks the generator that made the mini run)
installs ``offline-models`` itself.

A chapter whose own code asks whether it runs in Colab takes another path there than here, and
the path run here is not the one its install cell serves: such a chapter is listed in
``OTHER_PATH_IN_COLAB`` with the reason, and a chapter that branches without being listed fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from repo_paths import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]*_*.ipynb"))  # 06b and 07b too
INSTALL = re.compile(r"""%pip install[^\n]*["']ragstage(?:\[([\w,\s-]+)\])?\s*@""")
# Chapters whose code takes another path in Colab, and why the test cannot run that path.
OTHER_PATH_IN_COLAB = {
    "05_scifact_run.ipynb": "in Colab it downloads BEIR SciFact and the hub models, which no test may reach; "
                            "here it runs the stand-ins of `make lab` on the mini corpus",
}

# Runs a chapter's code cells with every module outside its install blocked, as in a runtime
# holding exactly what the install cell installed; writes the blocked import attempts.
RUNNER = r"""
import json, sys

job = json.load(open(sys.argv[1]))
blocked, tried = set(job["blocked"]), set()


# The import system's finders, with the blocked packages absent as on a machine without them:
# `import` raises ModuleNotFoundError, and importlib.util.find_spec (how libraries probe for an
# optional package, as accelerate probes for boto3 when transformers loads a model) returns None.
# Installed distributions stay visible to importlib.metadata, as they were before.
class NotInstalled:

    def __init__(self, finders):
        self.finders = finders

    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in blocked:
            tried.add(top)
            return None
        for finder in self.finders:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                return spec
        return None

    def find_distributions(self, *args, **kwargs):  # importlib.metadata: entry points, versions
        for finder in self.finders:
            if hasattr(finder, "find_distributions"):
                yield from finder.find_distributions(*args, **kwargs)

    def invalidate_caches(self):
        for finder in self.finders:
            if hasattr(finder, "invalidate_caches"):
                finder.invalidate_caches()


sys.meta_path[:] = [NotInstalled(list(sys.meta_path))]
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


class Shell(InteractiveShell):
    def enable_gui(self, gui=None):  # %matplotlib inline: no GUI event loop to start
        return None


shell, error = Shell.instance(), None
for number, source in enumerate(job["cells"], 1):
    with capture_output(display=True):
        outcome = shell.run_cell(source, store_history=False)
    if not outcome.success:
        error = f"code cell {number} raised {outcome.error_in_exec or outcome.error_before_exec!r}"
        break
json.dump({"error": error, "tried": sorted(tried)}, open(job["out"], "w"))
"""


def install_extras(path: Path) -> set[str]:
    """The extras of ragstage that the chapter's first code cell installs (empty: the base package)."""
    cell = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    match = INSTALL.search(cell.source)
    assert match, f"{path.name}: the first code cell does not %pip install ragstage"
    return {canonicalize_name(e.strip()) for e in (match.group(1) or "").split(",") if e.strip()}


@cache
def _pyproject() -> dict:
    import tomllib  # Python 3.11+, like the test of the extras in tests/integration/test_notebooks_meta.py

    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _requirements(extras: frozenset[str]) -> list[Requirement]:
    """ragstage's base requirements plus those of ``extras``, with ``ragstage[...]`` expanded."""
    optional = {canonicalize_name(k): v for k, v in _pyproject()["optional-dependencies"].items()}
    found = [Requirement(r) for r in _pyproject()["dependencies"]]
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        assert extra in optional, f"extra {extra!r} is not defined in pyproject.toml"
        for line in optional[extra]:
            req = Requirement(line)
            if canonicalize_name(req.name) == "ragstage":
                todo.extend(canonicalize_name(e) for e in req.extras)
            else:
                found.append(req)
    return found


def installed_by(extras: frozenset[str]) -> set[str]:
    """Every distribution ``pip install ragstage[extras]`` brings, from the installed metadata."""
    names: set[str] = {"ragstage"}
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [(r, frozenset[str]()) for r in _requirements(extras)]
    while todo:
        req, wanted_by = todo.pop()  # wanted_by: the extras the requiring distribution was asked for
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (wanted_by or {""})):
            continue
        name, asked = canonicalize_name(req.name), frozenset(canonicalize_name(e) for e in req.extras)
        if (name, asked) in done:
            continue
        done.add((name, asked))
        names.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed here, so no module of it can have been imported either
        for line in dist.requires or ():
            todo.append((Requirement(line), asked))
    return names


@cache
def _module_owners() -> dict[str, set[str]]:
    owners = metadata.packages_distributions()
    return {module: {canonicalize_name(d) for d in dists} for module, dists in owners.items()}


def not_brought(brought: set[str]) -> set[str]:
    """Top-level modules of installed distributions none of which is in ``brought`` (stdlib excluded)."""
    stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    return {m for m, owners in _module_owners().items() if m not in stdlib and not owners & brought}


def run_with_only(path: Path, brought: set[str], tmp_path: Path) -> dict:
    """Run every code cell of the chapter in a fresh interpreter that can import only ``brought``."""
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    job = {"cells": cells, "blocked": sorted(not_brought(brought)), "out": str(tmp_path / "outcome.json")}
    (tmp_path / "job.json").write_text(json.dumps(job), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path / "job.json")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, f"{path.name}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return json.loads((tmp_path / "outcome.json").read_text(encoding="utf-8"))


def extras_bringing(modules: list[str]) -> list[str]:
    """The extras of pyproject.toml whose own requirements include a distribution of ``modules``."""
    owners = set().union(*(_module_owners().get(m, set()) for m in modules)) if modules else set()
    return sorted(extra for extra, reqs in _pyproject()["optional-dependencies"].items()
                  if any(canonicalize_name(Requirement(r).name) in owners for r in reqs))


# -- the pieces, on known inputs -----------------------------------------------------------------
def test_the_install_cell_parser_reads_the_extras(tmp_path):
    def guard(requirement: str) -> Path:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            f'import sys\nif "google.colab" in sys.modules:\n    %pip install -q "{requirement} @ git+https://x/y"')])
        path = tmp_path / "nb.ipynb"
        nbformat.write(nb, path)
        return path
    assert install_extras(guard("ragstage")) == set()
    assert install_extras(guard("ragstage[pipeline]")) == {"pipeline"}
    assert install_extras(guard("ragstage[pipeline, offline_models]")) == {"pipeline", "offline-models"}


def test_the_base_install_does_not_bring_the_pipeline_packages():
    base = installed_by(frozenset())
    assert {"numpy", "pandas", "ipywidgets", "ipython"} <= base
    assert not {"rank-bm25", "transformers", "sentence-transformers", "torch"} & base
    pipeline = installed_by(frozenset({"pipeline"}))
    assert {"rank-bm25", "transformers", "sentence-transformers", "torch", "tokenizers"} <= pipeline


def test_self_referencing_extras_are_expanded():
    assert "opentelemetry-sdk" in installed_by(frozenset({"frameworks"}))


def test_what_the_base_install_blocks():
    blocked = not_brought(installed_by(frozenset()))
    assert {"rank_bm25", "transformers", "sentence_transformers", "torch"} <= blocked
    assert not {"numpy", "pandas", "ipywidgets", "IPython", "json", "ragstage"} & blocked
    assert "rank_bm25" not in not_brought(installed_by(frozenset({"pipeline"})))
    assert extras_bringing(["rank_bm25"]) == ["frameworks", "pipeline"]


def test_a_blocked_import_fails_the_run_and_an_optional_one_does_not(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import pandas as pd\npd.DataFrame({'a': [1]})"),  # pandas tries pyarrow
        nbformat.v4.new_code_cell("import rank_bm25")])
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    outcome = run_with_only(path, installed_by(frozenset()), tmp_path)
    assert "code cell 2" in outcome["error"] and "rank_bm25" in outcome["error"]
    assert "rank_bm25" in outcome["tried"]
    assert run_with_only(path, installed_by(frozenset({"pipeline"})), tmp_path)["error"] is None


# -- every chapter ---------------------------------------------------------------------------------
def branches_on_colab(path: Path) -> bool:
    """Whether a code cell after the install cell asks whether the chapter runs in Colab."""
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return any("google.colab" in source for source in cells[1:])


def test_the_chapters_with_another_path_in_colab_are_the_listed_ones():
    assert {p.name for p in NOTEBOOKS if branches_on_colab(p)} == set(OTHER_PATH_IN_COLAB)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_chapter_runs_with_only_what_its_install_cell_installs(path, tmp_path):
    if path.name in OTHER_PATH_IN_COLAB:
        pytest.skip(f"{path.name}: {OTHER_PATH_IN_COLAB[path.name]}")
    extras = install_extras(path)
    brought = installed_by(frozenset(extras))
    work = tmp_path / "notebooks"  # the chapter runs from notebooks/ in a reader's checkout
    work.mkdir()
    outcome = run_with_only(path, brought, work)
    assert outcome["error"] is None, (
        f"{path.name} installs ragstage{sorted(extras) or ''} in Colab; with only that installed, "
        f"{outcome['error']}. Imports it tried that the install does not bring: {outcome['tried']}; "
        f"extras that bring them: {extras_bringing(outcome['tried'])}")
