"""Each chapter's Colab install cell installs every third-party package the chapter reaches.

A Colab runtime promises nothing: a chapter whose install cell names ``ragstage`` alone but
whose run cell imports ``rank_bm25`` stops at that cell. So for every chapter this test

1. reads the extras the install cell names (``%pip install "ragstage[pipeline] @ ..."``);
2. computes what that install brings: the base dependencies and those extras from
   ``pyproject.toml``, closed over the installed packages' own requirements;
3. runs the chapter's offline path (every code cell, through IPython, in a fresh
   subprocess) and lists the modules it imported;
4. fails naming every imported module whose distribution the install does not bring.

Two things are allowed beyond the install cell: the ``offline-models`` extra, which stands
in for the model hub (in Colab the chapter uses the hub models; a Colab reader who switches
to the stand-ins installs that extra, as the settings cell says), and the standard library.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
INSTALL = re.compile(r"""%pip install[^\n]*["']ragstage(?:\[([\w,\s-]+)\])?\s*@""")
HUB_STAND_INS = "offline-models"

# The modules a chapter imported, printed by a fresh interpreter after running its code cells.
RUNNER = r"""
import json, os, sys
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

cells, out = json.load(open(sys.argv[1])), sys.argv[2]
shell = InteractiveShell.instance()
for number, source in enumerate(cells, 1):
    with capture_output(display=True):
        outcome = shell.run_cell(source, store_history=False)
    if not outcome.success:
        raise SystemExit(f"code cell {number} raised {outcome.error_in_exec or outcome.error_before_exec!r}")
json.dump(sorted({name.split(".")[0] for name in sys.modules}), open(out, "w"))
"""


def install_extras(path: Path) -> set[str]:
    """The extras of ragstage that the chapter's first code cell installs (empty: the base package)."""
    cell = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    match = INSTALL.search(cell.source)
    assert match, f"{path.name}: the first code cell does not %pip install ragstage"
    return {canonicalize_name(e.strip()) for e in (match.group(1) or "").split(",") if e.strip()}


@cache
def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _requirements(extras: frozenset[str]) -> list[Requirement]:
    """ragstage's base requirements plus those of ``extras``, with ``ragstage[...]`` expanded."""
    project, optional = _pyproject(), {canonicalize_name(k): v for k, v in _pyproject()["optional-dependencies"].items()}
    found = [Requirement(r) for r in project["dependencies"]]
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
    return {module: {canonicalize_name(d) for d in dists} for module, dists in metadata.packages_distributions().items()}


def uncovered(modules: list[str], brought: set[str]) -> dict[str, set[str]]:
    """Imported third-party modules none of whose distributions is in ``brought``."""
    owners, stdlib = _module_owners(), set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    return {m: owners[m] for m in modules if m not in stdlib and m in owners and not owners[m] & brought}


def modules_reached(path: Path, tmp_path: Path) -> list[str]:
    """Run every code cell of the chapter in a fresh interpreter (from a copy of its folder's place)."""
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    (tmp_path / "cells.json").write_text(json.dumps(cells), encoding="utf-8")
    out = tmp_path / "modules.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path / "cells.json"), str(out)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, f"{path.name}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return json.loads(out.read_text(encoding="utf-8"))


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


def test_an_uncovered_module_is_named():
    base = installed_by(frozenset())
    assert uncovered(["numpy", "json", "rank_bm25"], base) == {"rank_bm25": {"rank-bm25"}}
    assert uncovered(["numpy", "json", "rank_bm25"], installed_by(frozenset({"pipeline"}))) == {}


# -- every chapter ---------------------------------------------------------------------------------
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_install_cell_covers_every_module_the_chapter_reaches(path, tmp_path):
    extras = install_extras(path)
    brought = installed_by(frozenset(extras | {HUB_STAND_INS}))
    # the chapter runs from notebooks/ in a reader's checkout: give it that folder's place
    work = tmp_path / "notebooks"
    work.mkdir()
    missing = uncovered(modules_reached(path, work), brought)
    needed = sorted({extra for extra, reqs in _pyproject()["optional-dependencies"].items()
                     if any(canonicalize_name(Requirement(r).name) in set().union(*missing.values())
                            for r in reqs if not r.startswith("ragstage"))})
    assert not missing, (f"{path.name} installs ragstage{sorted(extras) or ''} in Colab but imports "
                         f"{ {m: sorted(d) for m, d in missing.items()} }; extras that bring them: {needed}")
