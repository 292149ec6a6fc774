"""What a reader meets before running anything: the shape of every chapter, and the README.

Every ``notebooks/*.ipynb``:

* opens with a markdown cell that says what the chapter teaches, how long it takes (a
  "minutes" phrase) and what to edit, and names only files that exist;
* says in its intro what it assumes (prerequisites), 3-5 objectives, and how long it takes to
  run and to read;
* closes with its exercises, a summary, 5-10 "check your understanding" questions whose
  answers are folded in ``<details>``, and ``## References`` as the last cell;
* has the Colab guard as its first code cell, verbatim (installing the extra the chapter needs,
  if any: ``COLAB_EXTRAS``), and that cell does nothing outside Colab (checked by running it
  through IPython's input transformer with a fake shell);
* is stored executed top to bottom in a fresh kernel (execution counts 1, 2, 3, ...), with
  outputs on every cell that should show something and no error output;
* uses the ``python3`` kernel.

README.md: every relative link resolves, and its chapter table lists exactly the notebooks
in ``notebooks/``, each row consistent (number, name, Colab link).

The tests are parametrized over whatever notebooks exist, so a new chapter is checked the
moment it is added.
"""

from __future__ import annotations

import ast
import re
import sys
import types
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from repo_paths import REPO

NOTEBOOK_DIR = REPO / "notebooks"
README = REPO / "README.md"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

# A chapter that needs an optional extra installs it in the guard; every other chapter installs
# the bare workbook. Only these exact variants are accepted.
COLAB_EXTRAS = {"05_scifact_run.ipynb": "pipeline", "06_reading_the_run.ipynb": "pipeline,offline-models",
                "06b_gold_for_a_few.ipynb": "frameworks",
                "07_your_own_system.ipynb": "frameworks", "07b_template_your_app.ipynb": "frameworks"}


def colab_pip_args(path: Path) -> str:
    extra = COLAB_EXTRAS.get(path.name)
    requirement = f"ragstage[{extra}]" if extra else "ragstage"
    return f'install -q "{requirement} @ git+https://github.com/ragstage/ragstage"'


def colab_guard(path: Path) -> str:
    return ("# In Colab, install the workbook first; everywhere else this cell does nothing.\n"
            "import sys\n"
            'if "google.colab" in sys.modules:\n'
            f"    %pip {colab_pip_args(path)}\n")


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def code_cells(nb) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


notebook_params = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks in {rel(NOTEBOOK_DIR)}/"


# -- first and last cell ------------------------------------------------------------------------
@notebook_params
def test_first_cell_says_what_when_and_what_to_edit(path):
    first = load(path).cells[0]
    assert first.cell_type == "markdown", f"{path.name}: the first cell should be markdown, the chapter's intro"
    text = first.source
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines and re.match(r"#\s+\S", lines[0]), f"{path.name}: the intro should open with a `# ` title"
    assert re.search(r"(?i)\b(what you learn|you will learn|you learn|this chapter|teaches)\b", text), (
        f"{path.name}: the intro should say what the chapter teaches (e.g. a 'What you learn:' list)")
    assert re.search(r"(?i)\b\d+(\s*(-|–|to)\s*\d+)?\s+minutes?\b", text), (
        f"{path.name}: the intro should say how long the chapter takes, e.g. 'about 20 minutes'")
    assert re.search(r"(?i)\bedit\b", text), f"{path.name}: the intro should say what the reader edits"


@notebook_params
def test_intro_says_what_it_assumes_and_how_long_it_takes_to_run_and_to_read(path):
    text = load(path).cells[0].source
    assert re.search(r"(?i)\bprerequisites?\b", text), (
        f"{path.name}: the intro should say what it assumes (Prerequisites)")
    assert re.search(r"(?i)\bto\s+run\b", text) and re.search(r"(?i)\bto\s+read\b", text), (
        f"{path.name}: the intro should say how long the chapter takes to run and to read")
    objectives = re.findall(r"(?m)^\s*(?:\d+\.|[*-])\s+\S", text.split("What you learn", 1)[-1].split("**", 1)[0])
    assert 3 <= len(objectives) <= 5, f"{path.name}: the intro should list 3-5 objectives, found {len(objectives)}"


def _headings(path: Path) -> list[tuple[int, str]]:
    found = []
    for i, cell in enumerate(load(path).cells):
        if cell.cell_type == "markdown":
            found += [(i, h.strip()) for h in re.findall(r"(?m)^#{1,6}\s+(.*)$", cell.source)]
    return found


@notebook_params
def test_chapter_closes_with_exercises_summary_questions_and_references(path):
    """Exercises, then a summary, then 5-10 folded 'check your understanding' answers, then references last."""
    headings = _headings(path)

    def first(pattern: str) -> int:
        cells = [i for i, h in headings if re.search(pattern, h, re.I)]
        assert cells, f"{path.name}: no heading matching {pattern!r}"
        return cells[-1]

    order = [first(r"\bexercises?\b"), first(r"^summary\b"), first(r"^check your understanding"),
             first(r"^references$")]
    assert order == sorted(order), f"{path.name}: exercises, summary, questions and references are out of order"
    cells = load(path).cells
    assert order[-1] == len(cells) - 1, f"{path.name}: the references should be the last cell"
    questions = cells[order[2]].source
    folds = re.findall(r"<details>\s*<summary>Answer</summary>.*?</details>", questions, re.S)
    numbered = re.findall(r"(?m)^\d+\.\s", questions)
    assert 5 <= len(folds) <= 10 and len(folds) == len(numbered), (
        f"{path.name}: {len(numbered)} questions and {len(folds)} folded answers; want 5-10, one fold each")
    assert all("\n\n" in fold for fold in folds), f"{path.name}: leave a blank line after <summary> so Markdown renders"


REPO_PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.*-]+)+/?)`")
# The folders the chapters write their runs into: what a chapter says it will write there does
# not exist until it runs (and may never, e.g. the Colab-only `runs/scifact-limit-50`).
OUTPUT_FOLDERS = ("runs", "artifacts")


def test_output_folders_are_ignored_by_git():
    ignored = set((REPO / ".gitignore").read_text().split())
    assert all(f"{folder}/" in ignored or f"/{folder}/" in ignored for folder in OUTPUT_FOLDERS)


@notebook_params
def test_markdown_names_only_files_that_exist(path):
    """A path in backticks under a top-level folder of the repo (`fixtures/...`) must exist."""
    missing = []
    for i, cell in enumerate(load(path).cells):
        if cell.cell_type != "markdown":
            continue
        for candidate in REPO_PATH.findall(cell.source):
            top = candidate.split("/", 1)[0]
            if top in OUTPUT_FOLDERS or not (REPO / top).is_dir() or "*" in candidate:
                continue  # a run's output, or not a path in this repository (`sentence-transformers/...`)
            if not (REPO / candidate).exists():
                missing.append(f"cell {i}: {candidate}")
    assert not missing, f"{path.name} names files that do not exist: {missing}"


# -- the Colab guard ----------------------------------------------------------------------------
def first_code_source(path: Path) -> str:
    cells = code_cells(load(path))
    assert cells, f"{path.name} has no code cells"
    return cells[0].source


@notebook_params
def test_first_code_cell_is_the_colab_guard(path):
    guard = colab_guard(path)
    assert first_code_source(path).rstrip("\n") == guard.rstrip("\n"), (
        f"{path.name}: the first code cell should be exactly the Colab guard:\n{guard}")


class FakeShell:
    """Stands in for ``get_ipython()``: records every magic the cell asks for."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def run_line_magic(self, name, line, *args):
        self.calls.append(("line", name, line))

    def run_cell_magic(self, name, line, cell, *args):
        self.calls.append(("cell", name, line))

    def system(self, cmd, *args):
        self.calls.append(("system", cmd))

    getoutput = system


def run_guard(source: str) -> FakeShell:
    shell = FakeShell()
    python = TransformerManager().transform_cell(source)
    exec(compile(python, "<colab guard>", "exec"), {"get_ipython": lambda: shell, "__name__": "__main__"})
    return shell


@notebook_params
def test_colab_guard_does_nothing_outside_colab(path, monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    calls = run_guard(first_code_source(path)).calls
    assert calls == [], f"{path.name}: outside Colab the guard cell ran {calls}"


@notebook_params
def test_colab_guard_installs_the_workbook_in_colab(path, monkeypatch):
    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    calls = run_guard(first_code_source(path)).calls
    assert calls == [("line", "pip", colab_pip_args(path))], f"{path.name}: in Colab the guard cell ran {calls}"


def test_colab_extras_name_real_notebooks_and_extras():
    """An entry for a renamed notebook, or an extra pyproject.toml does not define, fails here."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for name, extra in COLAB_EXTRAS.items():
        assert (NOTEBOOK_DIR / name).exists(), f"COLAB_EXTRAS names a missing notebook {name}"
        for one in extra.split(","):
            assert one in extras, f"{name}: extra {one!r} is not in pyproject.toml"


def test_the_fake_shell_sees_magics():
    """The two guard tests mean something only if a magic reaches the fake shell."""
    assert run_guard("%pip install x\n!echo hi\n").calls == [("line", "pip", "install x"), ("system", "echo hi")]


# -- stored execution ---------------------------------------------------------------------------
@notebook_params
def test_kernelspec_is_python3(path):
    spec = load(path).metadata.get("kernelspec", {})
    assert spec.get("name") == "python3", f"{path.name}: kernelspec is {spec!r}, expected name 'python3'"


@notebook_params
def test_execution_counts_are_a_fresh_run_all(path):
    cells = code_cells(load(path))
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: execution counts {counts}; store it after Restart Kernel and Run All Cells")
    for cell in cells:
        for out in cell.outputs:
            if out.output_type == "execute_result":
                assert out.execution_count == cell.execution_count, f"{path.name}: stale output in {cell.source[:60]!r}"


def _is_silent(source: str) -> bool:
    """True when a cell shows nothing by construction.

    Its last statement is not an expression (an assignment, import, ``def``, ``if``...), or is
    a call (``pd.set_option(...)``: usually None), or ends with ``;``; and it never calls
    ``print`` or ``display``. A cell ending in a bare name, attribute or subscript would show
    a value, so stored without outputs it was cleared or never run.
    """
    python = TransformerManager().transform_cell(source)
    try:
        tree = ast.parse(python)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"print", "display"}:
            return False
    if not tree.body:
        return True
    last = tree.body[-1]
    if not isinstance(last, ast.Expr) or source.rstrip().endswith(";"):
        return True
    return isinstance(last.value, ast.Call)


@notebook_params
def test_code_cells_have_outputs_or_are_silent(path):
    problems = []
    for cell in code_cells(load(path)):
        head = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else "(empty cell)"
        if not cell.source.strip():
            problems.append("an empty code cell")
        errors = [out for out in cell.outputs if out.output_type == "error"]
        errors += [out for out in cell.outputs
                   if out.output_type == "stream" and out.name == "stderr" and "Traceback" in out.text]
        if errors:
            problems.append(f"[{cell.execution_count}] {head!r} stored an error")
        if not cell.outputs and not _is_silent(cell.source):
            problems.append(f"[{cell.execution_count}] {head!r} should show something but has no stored output")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("source, silent", [
    ("x = 1", True),
    ("import sys\nif False:\n    %pip install x", True),
    ("%matplotlib inline\nimport pandas as pd\npd.set_option('a', 1)", True),
    ("table", False),
    ("table.round(3)", True),  # a call: may well be None, so not flagged
    ("table;", True),
    ("print('hi')", False),
    ("for t in ts:\n    print(t)", False),
    ("df['a']", False),
])
def test_silence_rule(source, silent):
    assert _is_silent(source) is silent


# -- README -------------------------------------------------------------------------------------
def readme_without_code() -> str:
    text = README.read_text(encoding="utf-8")
    text = re.sub(r"(?ms)^(```|~~~).*?^\1[^\n]*$", "", text)  # fenced blocks
    return re.sub(r"`[^`\n]*`", "", text)  # inline code


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")


def relative_links(text: str) -> list[str]:
    targets = LINK.findall(text) + REFERENCE.findall(text)
    return [t for t in targets if not t.startswith("#") and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", t)]


def test_link_parser():
    text = ('[a](notebooks/x.ipynb) [b](https://e.org) [c](#top) ![i](fig.png "t") [m](mailto:a@b) '
            '[d](docs/y.md#part)\n[ref]: LICENSE\n')
    assert relative_links(text) == ["notebooks/x.ipynb", "fig.png", "docs/y.md#part", "LICENSE"]


def test_readme_relative_links_resolve():
    links = relative_links(readme_without_code())
    missing = []
    for target in links:
        local = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if local and not (README.parent / local).exists():
            missing.append(target)
    assert not missing, f"README.md links to files that do not exist: {missing}"


def chapter_rows() -> list[list[str]]:
    """The body rows of the table under the README's chapters heading, as lists of cells."""
    text = README.read_text(encoding="utf-8")
    section = re.search(r"(?ms)^##\s+The chapters\s*$(.*?)(?=^##\s)", text + "\n## end\n")
    assert section, "README.md has no '## The chapters' section"
    rows = [line.strip() for line in section.group(1).splitlines() if line.strip().startswith("|")]
    assert len(rows) > 2, "the chapters section has no table"
    body = [r for r in rows[1:] if not re.fullmatch(r"\|[\s:|-]+\|", r)]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in body]


def test_readme_chapter_table_matches_the_notebooks_folder():
    listed = set()
    for row in chapter_rows():
        listed.update(re.findall(r"\]\((notebooks/[^)#?]+\.ipynb)\)", " ".join(row)))
    present = {rel(p) for p in NOTEBOOKS}
    assert listed - present == set(), (
        f"README's chapter table lists notebooks that do not exist: {sorted(listed - present)}")
    assert present - listed == set(), f"notebooks missing from README's chapter table: {sorted(present - listed)}"


def test_readme_chapter_rows_are_consistent():
    problems = []
    for row in chapter_rows():
        line = " | ".join(row)
        notebooks = re.findall(r"\[([^\]]+)\]\((notebooks/([^)/]+)\.ipynb)\)", line)
        if len(notebooks) != 1:
            problems.append(f"row should link one notebook: {line[:100]}")
            continue
        text, _, stem = notebooks[0]
        if text != stem:
            problems.append(f"link text {text!r} is not the notebook's name {stem!r}")
        number = re.match(r"(\d+)([a-z]?)_", stem)  # a companion notebook: 07b_... is row "7b"
        if not number or row[0] != f"{int(number.group(1))}{number.group(2)}":
            problems.append(f"row number {row[0]!r} does not match {stem}")
        colab = re.findall(r"\((https://colab\.research\.google\.com/[^)]+)\)", line)
        if colab != [f"https://colab.research.google.com/github/ragstage/ragstage/blob/main/notebooks/{stem}.ipynb"]:
            problems.append(f"{stem}: Colab link {colab} does not open this notebook")
    assert not problems, "\n".join(problems)
