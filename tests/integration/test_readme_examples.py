"""Every example in the README and in ``docs/`` runs, and shows what it says it shows.

A README and a manual are the first things a practitioner copies from; an example whose numbers
drifted from what the command prints, or an option the command no longer has, would teach them to
distrust the rest. Over ``README.md`` and every ``docs/*.md``:

* a ``console`` block runs its ``$ ragstage ...`` commands in order in a scratch folder that sees
  ``fixtures/``; each must print what the block shows under it (stdout, then stderr; a line ``...``
  stands for any number of lines) and exit 0, or the code an ``<!-- exit: N -->`` comment right
  before the block gives. A command shown without output and followed by a ``json`` block must
  print that JSON (the block may lay it out differently);
* a ``pycon`` block is a doctest, run in the scratch folder;
* a ``python`` block runs in the scratch folder in a fresh interpreter (and any ``test_`` function
  it defines is called); a block marked ``<!-- not run: why -->`` (a server or a cluster it needs)
  is compiled instead, and every ``ragstage`` name it uses must exist;
* every ``ragstage`` command line in a code block or a code span names a command, and options,
  that the real ``ragstage ... --help`` lists;
* every relative link resolves to a file, and every ``#anchor`` into a page to one of its headings.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
MARK = re.compile(r"<!--\s*(exit|not run)\s*:\s*(.*?)\s*-->\s*$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    mark: tuple[str, str] | None  # ("exit", "1") or ("not run", "why"), from the comment before the block

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's fenced code blocks (list items' indented ones too), in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        indent = len(m.group("indent"))
        body = "\n".join(line[indent:] for line in m.group("body").split("\n"))
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        found.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang"), body,
                           (mark.group(1), mark.group(2)) if mark else None))
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def _not_run(block: Block) -> bool:
    return block.mark is not None and block.mark[0] == "not run"


def _of(lang: str, marked: bool | None = None) -> list[Block]:
    """The blocks of one language; ``marked``: only those marked "not run" (True) or only the others."""
    return [b for b in ALL if b.lang == lang and (marked is None or _not_run(b) == marked)]


# -- scratch folder ------------------------------------------------------------------------------
@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """An empty folder that sees the repository's fixtures, as a reader's clone does."""
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


# -- console blocks ------------------------------------------------------------------------------
def commands(body: str) -> list[tuple[str, list[str]]]:
    """``(command, output lines)`` for each ``$ `` line of a console block; a trailing ``\\``
    continues the command on the next line."""
    out: list[tuple[str, list[str]]] = []
    lines = body.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise AssertionError(f"console block: output before any command: {lines[i]!r}")
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        output = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        out.append((command, output))
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is ``expected`` line by line, an expected ``...`` line standing for any lines."""
    @functools.cache
    def at(i: int, j: int) -> bool:
        if i == len(expected):
            return j == len(actual)
        if expected[i].strip() == "...":
            return any(at(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and expected[i].rstrip() == actual[j].rstrip() and at(i + 1, j + 1)

    return at(0, 0)


def _json_after(block: Block) -> str | None:
    later = [b for b in ALL if b.page == block.page and b.line > block.line]
    return later[0].body if later and later[0].lang == "json" else None


def test_the_pages_have_examples_of_every_kind():
    assert len(_of("console")) >= 8 and _of("pycon") and len(_of("python", marked=False)) >= 6


def test_console_parser():
    body = "$ ragstage a x \\\n    --b\none\n$ ragstage c\n"
    assert commands(body) == [("ragstage a x --b", ["one"]), ("ragstage c", [])]
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"]) and matches(["a", "...", "b"], ["a", "b"])
    assert not matches(["a", "...", "d"], ["a", "b"]) and not matches(["a"], ["a", "b"])


@pytest.mark.parametrize("block", _of("console"), ids=lambda b: b.name)
def test_console_example_prints_what_the_page_shows(block, scratch):
    code = int(block.mark[1]) if block.mark and block.mark[0] == "exit" else 0
    steps = commands(block.body)
    for command, expected in steps:
        assert command.startswith("ragstage "), f"{block.name}: not a ragstage command: {command}"
        done = subprocess.run([sys.executable, "-m", "ragstage.cli", *shlex.split(command)[1:]], capture_output=True,
                              text=True, cwd=scratch, env=_env(), timeout=600)
        assert done.returncode == code, f"{block.name}: `{command}` exited {done.returncode}:\n{done.stderr}"
        actual = (done.stdout + done.stderr).rstrip("\n").split("\n")
        if expected:
            assert matches(expected, actual), f"{block.name}: `{command}` printed:\n" + "\n".join(actual)
        elif (shown := _json_after(block)) is not None and len(steps) == 1:
            assert json.loads(done.stdout) == json.loads(shown), f"{block.name}: `{command}` printed:\n{done.stdout}"


# -- pycon and python blocks ---------------------------------------------------------------------
@pytest.mark.parametrize("block", _of("pycon"), ids=lambda b: b.name)
def test_pycon_example_is_a_passing_doctest(block, scratch):
    test = doctest.DocTestParser().get_doctest(block.body, {}, block.name, str(block.page), block.line)
    assert test.examples, f"{block.name}: no >>> example"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


RUN_TESTS = """
for _name, _value in list(globals().items()):
    if _name.startswith("test_") and callable(_value):
        _value()
"""


@pytest.mark.parametrize("block", _of("python", marked=False), ids=lambda b: b.name)
def test_python_example_runs(block, scratch):
    done = subprocess.run([sys.executable, "-c", block.body + "\n" + RUN_TESTS], capture_output=True, text=True,
                          cwd=scratch, env=_env(), timeout=600)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stderr}"


def _resolve(obj: object, path: str, attrs: list[str]) -> object:
    for attr in attrs:
        if not hasattr(obj, attr):
            obj = importlib.import_module(f"{path}.{attr}")  # a submodule not imported yet
        else:
            obj = getattr(obj, attr)
        path = f"{path}.{attr}"
    return obj


def ragstage_names(code: str) -> list[str]:
    """The ``ragstage`` names ``code`` imports or reads an attribute of, each checked to exist;
    returns the dotted names that do not."""
    tree = ast.parse(code)
    bound: dict[str, tuple[object, str]] = {}
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ragstage":
                    module = importlib.import_module(alias.name)
                    bound[alias.asname or "ragstage"] = (module, alias.name) if alias.asname else \
                        (importlib.import_module("ragstage"), "ragstage")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ragstage":
            module = importlib.import_module(node.module)
            for alias in node.names:
                try:
                    bound[alias.asname or alias.name] = (_resolve(module, node.module, [alias.name]),
                                                         f"{node.module}.{alias.name}")
                except ImportError:
                    missing.append(f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, base = [], node
            while isinstance(base, ast.Attribute):
                chain.insert(0, base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                obj, path = bound[base.id]
                try:
                    _resolve(obj, path, chain)
                except ImportError:
                    missing.append(".".join([path, *chain]))
    return sorted(set(missing))


def test_ragstage_names_sees_a_missing_name():
    assert ragstage_names("import ragstage.ingest\nragstage.ingest.ingest_spans") == []
    assert ragstage_names("from ragstage import spark as rs\nrs.no_such_table(df)") == ["ragstage.spark.no_such_table"]
    assert ragstage_names("from ragstage.testing import no_such") == ["ragstage.testing.no_such"]


@pytest.mark.parametrize("block", _of("python", marked=True), ids=lambda b: b.name)
def test_python_example_not_run_is_valid_and_names_what_exists(block):
    compile(block.body, block.name, "exec")
    assert not ragstage_names(block.body), f"{block.name} uses ragstage names that do not exist"


# -- command lines and their options -------------------------------------------------------------
@functools.cache
def usage(*words: str) -> str:
    """The usage part of ``ragstage WORDS... --help``, as the command prints it."""
    done = subprocess.run([sys.executable, "-m", "ragstage.cli", *words, "--help"], capture_output=True, text=True,
                          cwd=REPO, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n\n", 1)[0]


def _choices(text: str) -> list[str]:
    found = re.search(r"\{([\w,-]+)\}", text)
    return found.group(1).split(",") if found else []


SHELL = {"bash", "console", "text", "yaml", "sh", "shell", ""}


def command_lines() -> list[tuple[str, str]]:
    """``(where, command line)`` for every ``ragstage COMMAND ...`` in a code block or code span;
    a ``\\`` at the end of a line, or an indented line right after, continues it."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in blocks(page):
            if block.lang not in SHELL:
                continue
            lines = block.body.split("\n")
            for i, line in enumerate(lines):
                start = re.match(r"\s*(?:\$ |(?:- )?run:\s*)?(ragstage [a-z].*)$", line)
                if not start:
                    continue
                command, j = start.group(1), i + 1
                while j < len(lines) and (command.endswith("\\") or re.match(r"\s{4,}\[?--", lines[j])):
                    command = command.rstrip("\\").rstrip() + " " + lines[j].strip()
                    j += 1
                found.append((f"{block.name}+{i}", command.split(" #", 1)[0]))
        prose = FENCE.sub("", text)
        for span in re.findall(r"`([^`\n]+)`", prose):
            if re.match(r"ragstage [a-z]", span):
                found.append((f"{page.relative_to(REPO)}: `{span}`", span))
    return found


COMMAND_LINES = command_lines()


def test_command_lines_are_found():
    assert len(COMMAND_LINES) >= 30
    assert any("--junit" in c for _, c in COMMAND_LINES) and any("ingest spans" in c for _, c in COMMAND_LINES)


@pytest.mark.parametrize("where, command", COMMAND_LINES, ids=[w for w, _ in COMMAND_LINES])
def test_command_line_names_real_commands_and_options(where, command):
    words = command.split()
    commands_ = _choices(usage())
    assert words[1] in commands_, f"{where}: `ragstage {words[1]}` is not a command ({commands_})"
    path = [words[1]]
    if (subcommands := _choices(usage(words[1]))) and len(words) > 2 and words[2] in subcommands:
        path.append(words[2])
    known = set(re.findall(r"--[a-z][a-z-]*", usage(*path))) | {"--help"}
    used = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", command))
    assert used <= known, f"{where}: `ragstage {' '.join(path)}` has no option(s) {sorted(used - known)}"


# -- links ---------------------------------------------------------------------------------------
def slug(heading: str) -> str:
    """GitHub's anchor for a heading (MyST's heading anchors follow the same rule)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#{1,6} +(.+?)\s*$", text, re.M)}


def test_slug_follows_github():
    assert slug("`ragstage compare --gate`: block a worse change") == "ragstage-compare---gate-block-a-worse-change"
    assert slug("What runs offline, and what needs the network") == "what-runs-offline-and-what-needs-the-network"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: links that lead nowhere: {broken}"


# -- names in the prose --------------------------------------------------------------------------
def dotted_names() -> list[tuple[str, str]]:
    """``(page, name)`` for every ``ragstage.a.b`` a code span of the prose names (the part before a call)."""
    found = []
    for page in PAGES:
        prose = FENCE.sub("", page.read_text(encoding="utf-8"))
        for span in re.findall(r"`([^`\n]+)`", prose):
            if name := re.match(r"ragstage(?:\.\w+)+", span):
                found.append((page.relative_to(REPO).as_posix(), name.group(0)))
    return sorted(set(found))


DOTTED = dotted_names()


@pytest.mark.parametrize("page, name", DOTTED, ids=[f"{p}:{n}" for p, n in DOTTED])
def test_a_ragstage_name_in_the_prose_exists(page, name):
    parts = name.split(".")
    try:
        _resolve(importlib.import_module("ragstage"), "ragstage", parts[1:])
    except ImportError:
        pytest.fail(f"{page}: `{name}` does not exist")
