"""Chapter 1 in a real JupyterLab: started as the README says, and driven by headless Chromium.

* ``test_make_lab_serves_chapter_1`` starts ``jupyter lab`` with the arguments of the
  Makefile's ``lab`` target (what ``make lab`` runs) from the repository root, and checks that
  it serves chapter 1 at ``notebooks/01_five_cases.ipynb``, that this is the file it opens,
  and that the fixtures the chapter tells the reader to edit are reachable. No browser needed.
* ``test_case_editor_rediagnoses_in_the_browser`` opens a copy of chapter 1 in JupyterLab,
  runs all cells from the Run menu, types exercise 1 into the case editor (case A's
  ``retrieved`` becomes ``d1, d2``) and reads case A's new bucket from the page. It keeps a
  screenshot in ``artifacts/browser/``. The committed notebook is never opened by the server:
  it works on a copy with the outputs stripped, so every widget it sees was drawn by this run.

The browser test is marked ``browser``. Without Chromium or Playwright it is skipped locally,
and fails on CI (``CI=true``), where ``.ci/run`` installs Debian's chromium. It never
downloads a browser.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from browser_helpers import CHROMIUM_ARGS, LabServer, chromium_or_skip
from repo_paths import REPO

CHAPTER1 = "notebooks/01_five_cases.ipynb"
ARTIFACTS = REPO / "artifacts" / "browser"
SCREENSHOT = ARTIFACTS / "chapter1_case_editor.png"
FAILURE_SCREENSHOT = ARTIFACTS / "chapter1_failure.png"

# Exercise 1 of chapter 1: retrieve d2 in case A, leave `reranked` empty -> A moves from
# `retrieval` to `reranking`. The CSS classes are the stable ones documented in
# ragstage/widgets/__init__.py (``ragstage-field-<qid>-<field>``, ``ragstage-stage-<qid>``, ...).
CASE = "A"
FIELD = "retrieved"
OLD_VALUE = "d1, d3"
NEW_VALUE = "d1, d2"
OLD_BUCKET = "retrieval"
NEW_BUCKET = "reranking"

# Time budgets (seconds); the whole browser test takes well under two minutes.
SERVER_START = 60
PAGE_LOAD = 60
KERNEL_READY = 60
RUN_ALL = 90
WIDGET_UPDATE = 20


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- `make lab` ---------------------------------------------------------------------------------
def make_lab_arguments() -> list[str]:
    """The arguments ``make lab`` passes to ``jupyter lab``, as make itself expands them."""
    dry = subprocess.run(["make", "--dry-run", "--always-make", "lab"], cwd=REPO, capture_output=True,
                         text=True, timeout=30)
    assert dry.returncode == 0, f"`make --dry-run lab` failed:\n{dry.stderr}"
    for line in dry.stdout.splitlines():
        words = shlex.split(line.strip())
        for i, word in enumerate(words[:-1]):
            if word.endswith("jupyter") and words[i + 1] == "lab":
                return [w for w in words[i + 2:] if w != "--allow-root"]
    raise AssertionError(f"`make lab` does not run `jupyter lab`:\n{dry.stdout}")


def test_make_lab_serves_chapter_1(tmp_path):
    args = make_lab_arguments()
    assert CHAPTER1 in args, f"`make lab` should open {CHAPTER1}, it runs `jupyter lab {' '.join(args)}`"
    assert (REPO / CHAPTER1).is_file(), f"`make lab` opens {CHAPTER1}, which does not exist"
    before = sha256(REPO / CHAPTER1)
    with LabServer(cwd=REPO, state_dir=tmp_path / "lab", args=args, start_timeout=SERVER_START) as server:
        shown = f"`jupyter lab {' '.join(args)}` (from `make lab`)"
        contents = server.get(f"api/contents/{CHAPTER1}")
        assert contents.status_code == 200, (
            f"{shown} does not serve {CHAPTER1} at /api/contents/{CHAPTER1} (HTTP {contents.status_code}): "
            "the server's root is not the repository root. Given a file and no root, Jupyter roots the "
            "server at the file's folder (notebooks/), which also hides fixtures/ from the file browser; "
            "`jupyter lab --ServerApp.root_dir=. notebooks/01_five_cases.ipynb` keeps the repository root")
        body = contents.json()
        assert body["type"] == "notebook" and body["format"] == "json"
        assert body["content"]["cells"], "chapter 1 came back without cells"

        page = server.get(f"lab/tree/{CHAPTER1}")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "jupyter-config-data" in page.text, "not the JupyterLab page"

        # What `make lab` opens in the reader's browser: the file Jupyter writes for it.
        opened = [re.findall(r'href="([^"]+)"', p.read_text(encoding="utf-8"))
                  for p in (tmp_path / "lab" / "runtime").glob("jpserver-file-to-run-*-open.html")]
        assert opened and opened[0], f"{shown} did not write the page it opens in the browser"
        assert f"/lab/tree/{CHAPTER1}?" in opened[0][0], f"{shown} opens {opened[0][0]}"

        # Chapter 1 tells the reader to edit these files; JupyterLab's file browser must reach them.
        for fixture in ("fixtures/five_cases/cases.jsonl", "fixtures/five_cases/not_relevance.jsonl"):
            response = server.get(f"api/contents/{fixture}?content=0")
            assert response.status_code == 200, (
                f"{shown} cannot reach {fixture} (HTTP {response.status_code}), which chapter 1 says to edit")
    assert sha256(REPO / CHAPTER1) == before, f"starting JupyterLab changed {CHAPTER1}"


# -- the browser test ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium() -> str:
    """Path of Chromium, with Playwright importable; skip (locally) or fail (CI) otherwise."""
    return chromium_or_skip()


def strip_outputs(source: Path, target: Path) -> int:
    """Copy a notebook without outputs, execution counts or stored widget state.

    Returns its number of code cells.
    """
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return sum(cell.cell_type == "code" for cell in nb.cells)


@pytest.fixture(scope="module")
def chapter1_lab(tmp_path_factory):
    """A JupyterLab whose root is a temporary folder holding a stripped copy of chapter 1."""
    if not (REPO / CHAPTER1).is_file():
        pytest.fail(f"{CHAPTER1} does not exist")
    root = tmp_path_factory.mktemp("lab-root")
    n_code = strip_outputs(REPO / CHAPTER1, root / CHAPTER1)
    server = LabServer(cwd=root, root_dir=root, state_dir=tmp_path_factory.mktemp("lab-state"),
                       start_timeout=SERVER_START)
    server.start()
    server.n_code_cells = n_code
    try:
        yield server
    finally:
        server.stop()


# JS run in the page: the state of the notebook's code cells and of its kernel.
_NOTEBOOK_STATE = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
      .map(e => e.textContent.trim());
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const errors = [...panel.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
      .map(e => e.textContent).filter(t => /Traceback|Error\\b/.test(t));
  const kernel = panel.querySelector('.jp-Toolbar-kernelName');
  const dialog = document.querySelector('.jp-Dialog');
  return {prompts, status: indicator ? indicator.getAttribute('data-status') : null, errors,
          kernel: kernel ? kernel.textContent.trim() : null,
          dialog: dialog ? dialog.textContent.slice(0, 300) : null};
}"""


def notebook_state(page) -> dict:
    return page.evaluate(_NOTEBOOK_STATE) or {"prompts": [], "status": None, "errors": [], "kernel": None,
                                              "dialog": None}


def wait_for(predicate, timeout: float, what: str, page, poll: float = 0.25) -> dict:
    """Poll the notebook state until ``predicate(state)``; fail on a traceback or a timeout."""
    deadline = time.monotonic() + timeout
    state = notebook_state(page)
    while time.monotonic() < deadline:
        state = notebook_state(page)
        if state["errors"]:
            pytest.fail(f"a cell of {CHAPTER1} raised while {what}:\n" + "\n---\n".join(state["errors"])[:3000])
        if state["dialog"]:
            pytest.fail(f"JupyterLab opened a dialog while {what}: {state['dialog']}")
        if predicate(state):
            return state
        time.sleep(poll)
    pytest.fail(f"timed out after {timeout:.0f}s {what}; last notebook state: {state}")


def kernel_ready(server: LabServer):
    """The notebook has a running kernel and it is idle (the page and the server agree).

    Before the session exists the page shows "No Kernel" with an idle indicator; running
    cells then would ask for a kernel in a dialog instead of running them.
    """
    def check(state: dict) -> bool:
        if state["status"] != "idle" or state["kernel"] in (None, "", "No Kernel"):
            return False
        sessions = server.get("api/sessions", timeout=5).json()
        return any(s["path"] == CHAPTER1 and s["kernel"]["execution_state"] == "idle" for s in sessions)
    return check


def all_cells_ran(n_code: int):
    def check(state: dict) -> bool:
        numbered = [re.fullmatch(r"\[(\d+)\]:", p) for p in state["prompts"]]
        return (len(numbered) == n_code and all(numbered)
                and [int(m.group(1)) for m in numbered] == list(range(1, n_code + 1))
                and state["status"] == "idle")
    return check


def bucket_counts(editor) -> dict[str, int]:
    """The editor's bucket table as ``{stage: count}`` (first two columns of its body rows)."""
    rows = editor.locator(".ragstage-table tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].slice(0, 2).map(td => td.textContent.trim()))")
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit()}


def wait_for_counts(editor, predicate, timeout: float) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    counts = bucket_counts(editor)
    while not predicate(counts) and time.monotonic() < deadline:
        time.sleep(0.2)
        counts = bucket_counts(editor)
    return counts


@pytest.mark.browser
def test_case_editor_rediagnoses_in_the_browser(chromium, chapter1_lab):
    from playwright.sync_api import expect, sync_playwright

    server = chapter1_lab
    committed = sha256(REPO / CHAPTER1)
    copy = Path(server.root_dir) / CHAPTER1
    assert REPO not in copy.resolve().parents, "the test must work on a copy outside the repository"
    started = time.monotonic()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in (SCREENSHOT, FAILURE_SCREENSHOT):  # never leave an earlier run's picture behind
        old.unlink(missing_ok=True)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True, timeout=30_000)
        page_errors: list[str] = []
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.set_default_timeout(30_000)
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))

            page.goto(server.url(f"lab/tree/{CHAPTER1}"), wait_until="domcontentloaded", timeout=PAGE_LOAD * 1000)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=PAGE_LOAD * 1000)
            wait_for(kernel_ready(server), KERNEL_READY, "waiting for the kernel to start", page)

            # Run > Run All Cells, as a reader would.
            page.locator("#jp-MainMenu").get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            wait_for(all_cells_ran(server.n_code_cells), RUN_ALL,
                     f"waiting for all {server.n_code_cells} code cells to run and the kernel to be idle", page)

            editor = page.locator(".ragstage-case-editor").filter(has=page.locator(f".ragstage-case-{CASE}")).first
            expect(editor).to_be_visible(timeout=WIDGET_UPDATE * 1000)
            editor.scroll_into_view_if_needed()
            stage = editor.locator(f".ragstage-stage-{CASE}")
            field = editor.locator(f".ragstage-field-{CASE}-{FIELD} input")
            message = editor.locator(f".ragstage-message-{CASE}")
            expect(stage).to_have_text(OLD_BUCKET)
            expect(field).to_have_value(OLD_VALUE)
            # cases A-E, one per stage, and chapter 1's service failure (F) and unlabelled question (G)
            before = wait_for_counts(editor, lambda c: sum(c.values()) == 7, WIDGET_UPDATE)
            assert before == {"retrieval": 1, "reranking": 1, "prompt_assembly": 1, "generation": 1, "none": 1,
                              "endpoint_unavailable": 1, "label_missing": 1}, before

            field.fill(NEW_VALUE)
            field.press("Enter")  # the text boxes have continuous_update=False: Enter commits

            expect(stage).to_have_text(NEW_BUCKET, timeout=WIDGET_UPDATE * 1000)
            expect(message).to_have_text("")
            # the bucket table below the cases was recomputed too: A left its bucket for B's
            counts = wait_for_counts(editor, lambda c: c.get(NEW_BUCKET) == 2, WIDGET_UPDATE)
            assert counts == {NEW_BUCKET: 2, "prompt_assembly": 1, "generation": 1, "none": 1,
                              "endpoint_unavailable": 1, "label_missing": 1}, counts

            editor.screenshot(path=str(SCREENSHOT))
            print(f"screenshot: {SCREENSHOT}")
        except BaseException:
            try:
                page.screenshot(path=str(FAILURE_SCREENSHOT), full_page=True)
                print(f"failure screenshot: {FAILURE_SCREENSHOT}")
                print(f"page errors: {page_errors}\nserver log:\n{server.log_tail()}")
            except Exception:
                pass
            raise
        finally:
            browser.close()

    elapsed = time.monotonic() - started
    print(f"browser part took {elapsed:.1f}s")
    assert sha256(REPO / CHAPTER1) == committed, f"the browser test changed {CHAPTER1} on disk"
