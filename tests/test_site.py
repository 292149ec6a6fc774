"""The workbook's website, built as ``make book`` builds it and read in headless Chromium.

The session builds the site into a temporary folder with ``book/build.py`` (the committed
notebooks, not re-executed), serves it on 127.0.0.1 and opens every page with no network:
every request that would leave the site is blocked and reported. On each page: no console
error and no uncaught exception, every ``<img>`` loads, every folded answer (``<details>``)
is closed and opens on a click. Each chapter page links to its own notebook in Colab and to a
download of the notebook as committed; the table of contents reaches every chapter, solution,
practitioner page and the glossary; the search finds a word of chapter 1. Screenshots of a
few pages go to ``artifacts/browser/``.

Marked ``browser``: without Chromium or Playwright it is skipped locally and fails on CI.
"""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import requests
from browser_helpers import CHROMIUM_ARGS, chromium_or_skip, free_port

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts" / "browser"
COLAB = "https://colab.research.google.com/github/ragstage/ragstage/blob/main/notebooks/"
CHAPTERS = sorted((REPO / "notebooks").glob("0[0-9]_*.ipynb"))
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "notebooks" / "solutions").glob("*.ipynb"))
SCREENSHOTS = {"index.html": "site_index.png", "notebooks/01_five_cases.html": "site_chapter1.png",
               "notebooks/06_reading_the_run.html": "site_chapter6.png"}

pytestmark = pytest.mark.browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test reports what matters
        pass


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("book")
    done = subprocess.run([sys.executable, str(REPO / "book" / "build.py"), "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"book/build.py failed:\n{done.stdout}\n{done.stderr}"
    return out / "html"


@pytest.fixture(scope="session")
def server(site):
    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")  # closed with this module: one sync Playwright at a time in the session
def browser_context(server):
    path = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True, timeout=30_000)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        left: list[str] = []

        def guard(route) -> None:
            if route.request.url.startswith(server + "/") or route.request.url.startswith("data:"):
                route.continue_()
            else:
                left.append(route.request.url)
                route.abort()

        context.route("**/*", guard)
        context.left_site = left
        yield context
        context.close()
        browser.close()


def pages(site: Path) -> list[str]:
    """The site's pages (not the theme's template fragments under ``_static/``)."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.parts[len(site.parts)] != "_static")


@pytest.fixture(scope="module")
def visited(site, server, browser_context) -> dict[str, dict]:
    """Open every page once; what each showed: console errors, requests off the site, images, details."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen = {}
    for rel in pages(site):
        page = browser_context.new_page()
        errors: list[str] = []
        page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        before = len(browser_context.left_site)
        page.goto(f"{server}/{rel}", wait_until="load", timeout=30_000)
        page.wait_for_function("[...document.images].every(i => i.complete)", timeout=30_000)
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.getAttribute('src'), "
                                                  "e.complete && e.naturalWidth > 0])")
        details = []
        for i, handle in enumerate(page.query_selector_all("details")):
            closed = not handle.evaluate("d => d.open")
            body_hidden = handle.evaluate("d => [...d.children].filter(c => c.tagName !== 'SUMMARY')"
                                          ".every(c => !c.checkVisibility())")
            handle.query_selector("summary").click()
            opened = handle.evaluate("d => d.open")
            body_shown = handle.evaluate("d => [...d.children].filter(c => c.tagName !== 'SUMMARY')"
                                         ".some(c => c.checkVisibility())")
            details.append((i, closed and body_hidden, opened and body_shown))
        colab = page.eval_on_selector_all("a[href^='https://colab.research.google.com']",
                                          "els => els.map(e => e.getAttribute('href'))")
        download = page.eval_on_selector_all("a.ragstage-download", "els => els.map(e => e.href)")
        toc = page.eval_on_selector_all("nav.bd-docs-nav a.reference", "els => els.map(e => e.href)")
        if rel in SCREENSHOTS:
            page.screenshot(path=str(ARTIFACTS / SCREENSHOTS[rel]), full_page=False)
        seen[rel] = {"errors": errors, "left": browser_context.left_site[before:], "images": images,
                     "details": details, "colab": colab, "download": download, "toc": toc}
        page.close()
    return seen


def test_every_page_loads_cleanly_and_stays_on_the_site(visited):
    assert len(visited) >= len(CHAPTERS) + 3
    problems = {rel: {k: v[k] for k in ("errors", "left") if v[k]} for rel, v in visited.items()
                if v["errors"] or v["left"]}
    assert not problems, f"console errors or requests leaving the site: {problems}"


def test_every_image_loads(visited):
    broken = {rel: [src for src, ok in v["images"] if not ok] for rel, v in visited.items()}
    broken = {rel: srcs for rel, srcs in broken.items() if srcs}
    assert not broken, f"images that did not load: {broken}"
    figures = sum(len(v["images"]) for rel, v in visited.items() if rel.startswith("notebooks/0"))
    assert figures >= len(CHAPTERS), f"only {figures} images on the chapter pages"


def test_folded_answers_start_closed_and_open_on_click(visited):
    found = {rel: v["details"] for rel, v in visited.items() if v["details"]}
    assert found, "no folded answer (<details>) on any page"
    wrong = {rel: [d for d in ds if not (d[1] and d[2])] for rel, ds in found.items()}
    wrong = {rel: ds for rel, ds in wrong.items() if ds}
    assert not wrong, f"<details> (index, closed at first, open after a click) that misbehave: {wrong}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_chapter_links_to_colab_and_to_its_notebook(visited, server, chapter):
    rel = f"notebooks/{chapter.stem}.html"
    assert rel in visited, f"no page for {chapter.name}"
    colab = visited[rel]["colab"]
    assert colab and set(colab) == {COLAB + chapter.name}, colab
    (download,) = visited[rel]["download"]
    assert unquote(urlparse(download).path).endswith(f"/{chapter.name}")
    got = requests.get(download, timeout=10)
    assert got.status_code == 200 and got.content == chapter.read_bytes(), "the download is not the committed notebook"


def test_table_of_contents_reaches_every_page(visited, server):
    toc = {unquote(urlparse(href).path).lstrip("/") for href in visited["index.html"]["toc"]}
    want = {f"notebooks/{p.relative_to(REPO / 'notebooks').with_suffix('.html').as_posix()}" for p in NOTEBOOKS}
    want.add("notebooks/glossary.html")
    assert want <= toc, f"pages missing from the table of contents: {sorted(want - toc)}"
    assert any(t.startswith("guide/") for t in toc), "no practitioner page in the table of contents"


def test_search_finds_a_chapter(browser_context, server):
    page = browser_context.new_page()
    page.goto(f"{server}/search.html?q=McNemar", wait_until="load")
    page.wait_for_selector("#search-results ul.search li", timeout=30_000)
    hits = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))")
    page.close()
    assert any("notebooks/02_intervals" in h for h in hits), hits
