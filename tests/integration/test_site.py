"""The workbook's website, built as ``make book`` builds it and read in headless Chromium.

The session builds the site into a temporary folder with ``book/build.py`` (the manual in
``docs/`` and the committed notebooks, not re-executed), serves it on 127.0.0.1 and opens every
page with no network: every request that would leave the site is blocked and reported. On each
page: no console error and no uncaught exception, every ``<img>`` loads, every folded answer
(``<details>``) is closed and opens on a click, and no long line is cut at the right edge: an
output wraps, and code that scrolls sideways shows a scroll bar. Chromium runs with overlay
scroll bars (as on macOS, where a scroll bar is invisible until scrolled) and without the
headless mode's hidden scroll bars, so a bar that takes room is one the page draws itself. Each
chapter page links to its own notebook in Colab and to a download of the notebook as committed;
the start-here page links every chapter and says how to run them; the table of contents reaches
every chapter, solution, manual page and the glossary, each chapter once (a chapter's "Part 2"
is no chapter); the search finds a word of chapter 2. Screenshots of a few pages go to
``artifacts/browser/``.

Marked ``browser``: without Chromium or Playwright it is skipped locally and fails on CI.
"""

from __future__ import annotations

import functools
import http.server
import re
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import requests
from browser_helpers import CHROMIUM_ARGS, chromium_or_skip, free_port
from repo_paths import REPO

ARTIFACTS = REPO / "artifacts" / "browser"
COLAB = "https://colab.research.google.com/github/ragstage/ragstage/blob/main/notebooks/"
CHAPTERS = sorted((REPO / "notebooks").glob("0[0-9]_*.ipynb"))
CHAPTER_PAGES = sorted((REPO / "notebooks").glob("*.ipynb"))  # companions such as 07b included
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "notebooks" / "solutions").glob("*.ipynb"))
SCREENSHOTS = {"index.html": "site_index.png", "notebooks/01_five_cases.html": "site_chapter1.png",
               "notebooks/06_reading_the_run.html": "site_chapter6.png", "docs/command-line.html": "site_manual.png"}
#: Elements of a page's article that are wider than their box: where they scroll, how, and how much
#: room the horizontal scroll bar takes (0 for an overlay scroll bar, which is invisible until scrolled).
OVERFLOWING = """() => [...document.querySelectorAll('.bd-article *')]
  .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
  .map(e => { const s = getComputedStyle(e);
    return {tag: e.tagName, output: !!e.closest('div.cell_output'), scrolls: ['auto', 'scroll'].includes(s.overflowX),
            scroller: !!(e.parentElement && e.parentElement.closest('pre, div.output, .table-wrapper')),
            bar: e.offsetHeight - e.clientHeight - parseFloat(s.borderTopWidth) - parseFloat(s.borderBottomWidth),
            text: e.textContent.trim().slice(0, 60)}; })"""

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
        browser = p.chromium.launch(executable_path=path, args=[*CHROMIUM_ARGS, "--enable-features=OverlayScrollbar"],
                                    ignore_default_args=["--hide-scrollbars"], headless=True, timeout=30_000)
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
        overflowing = page.evaluate(OVERFLOWING)
        entries = page.eval_on_selector_all(".toctree-wrapper a.reference, nav.bd-docs-nav a.reference",
                                            "els => els.map(e => [e.textContent.trim(), e.href])")
        top_sections = page.eval_on_selector_all(".toc-h1 > a", "els => els.map(e => e.textContent.trim())")
        body_links = page.eval_on_selector_all("article.bd-article a", "els => els.map(e => e.href)")
        captions = page.eval_on_selector_all(
            "nav.bd-docs-nav p.caption", "els => els.map(c => [c.textContent.trim(), [...c.nextElementSibling"
            ".querySelectorAll(':scope > li > a.reference')].map(a => [a.textContent.trim(), a.href])])")
        if rel in SCREENSHOTS:
            page.screenshot(path=str(ARTIFACTS / SCREENSHOTS[rel]), full_page=False)
        seen[rel] = {"errors": errors, "left": browser_context.left_site[before:], "images": images,
                     "details": details, "colab": colab, "download": download, "toc": toc,
                     "overflowing": overflowing, "body_links": body_links, "captions": captions,
                     "entries": entries, "top_sections": top_sections,
                     "rows": page.eval_on_selector_all("article.bd-article table tr",
                                                       "rs => rs.map(r => [...r.cells].map(c => c.innerText.trim()))"),
                     "text": page.evaluate("() => (document.querySelector('article.bd-article') || document.body)"
                                           ".innerText")}
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
    manual = {f"docs/{p.stem}.html" for p in (REPO / "docs").glob("*.md") if p.stem != "index"}
    assert manual and manual <= toc, f"manual pages missing from the table of contents: {sorted(manual - toc)}"


def test_the_start_here_page_links_every_chapter_and_says_how_to_run_them(visited):
    links = {unquote(urlparse(href).path).lstrip("/") for href in visited["index.html"]["body_links"]}
    chapters = {f"notebooks/{p.stem}.html" for p in CHAPTER_PAGES}
    assert chapters <= links, f"chapters the start-here page does not link: {sorted(chapters - links)}"
    text = visited["index.html"]["text"]
    for phrase in ("Start here", "What the workbook teaches", "Who it is for", "make lab", "Colab"):
        assert phrase in text, f"the start-here page does not say {phrase!r}"
    rows = {cells[0]: " | ".join(cells) for cells in visited["index.html"]["rows"] if cells}
    numbers = [re.match(r"0*(\d+[a-z]?)_", p.stem).group(1) for p in CHAPTER_PAGES]
    untimed = [n for n in numbers if not re.search(r"\d+ ?(s|min)\b|minute", rows.get(n, ""))]
    assert not untimed, f"chapters with no row and time on the start-here page: {untimed}"


def test_each_chapter_is_listed_once_in_the_table_of_contents(visited):
    captions = dict(visited["index.html"]["captions"])
    entries = captions.get("Chapters")
    assert entries, f"no 'Chapters' in the table of contents: {list(captions)}"
    pages = [unquote(urlparse(href).path).lstrip("/") for _, href in entries]
    assert sorted(pages) == sorted(f"notebooks/{p.stem}.html" for p in CHAPTER_PAGES), entries
    chapters = {f"notebooks/{p.stem}.html" for p in CHAPTER_PAGES}
    parts = [title for title, href in visited["index.html"]["entries"]
             if unquote(urlparse(href).path).lstrip("/") in chapters and (urlparse(href).fragment
                                                                          or re.match(r"(?i)part\b", title))]
    assert not parts, f"chapter sections listed as chapters: {parts}"


def test_each_chapter_page_has_one_title(visited):
    """A second ``#`` heading (chapter 3's "# Part 2") would be a top-level entry of its own, beside the title."""
    many = {rel: v["top_sections"] for rel, v in visited.items()
            if rel.startswith("notebooks/") and len(v["top_sections"]) > 1}
    assert not many, f"pages with more than one top-level heading: {many}"


def test_long_lines_wrap_or_scroll_with_a_visible_bar(visited):
    cut = {rel: [o["text"] for o in v["overflowing"] if o["output"] and o["tag"] == "PRE"]
           for rel, v in visited.items()}
    cut = {rel: texts for rel, texts in cut.items() if texts}
    assert not cut, f"outputs wider than the page instead of wrapped: {cut}"
    hidden = {rel: [(o["tag"], o["text"]) for o in v["overflowing"]
                    if (o["scrolls"] and o["bar"] < 6) or (not o["scrolls"] and not o["scroller"])]
              for rel, v in visited.items()}
    hidden = {rel: found for rel, found in hidden.items() if found}
    assert not hidden, f"lines cut at the right edge, or scrolling with no visible scroll bar: {hidden}"
    scrolling = sum(1 for v in visited.values() for o in v["overflowing"] if o["scrolls"] and o["tag"] == "PRE")
    assert scrolling, "no long code line on any page: the check saw nothing"


def test_the_scroll_bar_is_drawn(browser_context, server):
    """The bar's room is painted: a thumb that stands out from its track, in a screenshot."""
    from io import BytesIO

    from PIL import Image

    page = browser_context.new_page()
    page.goto(f"{server}/docs/command-line.html", wait_until="load")
    pre = page.query_selector("article.bd-article div.highlight pre")
    pre.scroll_into_view_if_needed()
    box = pre.bounding_box()
    bar = pre.evaluate("e => e.offsetHeight - e.clientHeight")
    shot = page.screenshot(clip={"x": box["x"], "y": box["y"] + box["height"] - bar, "width": box["width"],
                                 "height": bar})
    page.close()
    colours = Image.open(BytesIO(shot)).convert("L").getextrema()
    assert bar >= 6 and colours[1] - colours[0] >= 60, (bar, colours)


def test_search_finds_a_chapter(browser_context, server):
    page = browser_context.new_page()
    page.goto(f"{server}/search.html?q=McNemar", wait_until="load")
    page.wait_for_selector("#search-results ul.search li", timeout=30_000)
    hits = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))")
    page.close()
    assert any("notebooks/02_intervals" in h for h in hits), hits


def test_one_title_demotes_later_top_headings_only():
    sys.path.insert(0, str(REPO / "book"))
    try:
        from build import one_title
    finally:
        sys.path.remove(str(REPO / "book"))
    first, seen = one_title("# Chapter 3\n\n## A\n\n```python\n# a comment, not a heading\n```\n", False)
    assert seen and first == "# Chapter 3\n\n## A\n\n```python\n# a comment, not a heading\n```\n"
    assert one_title("# Part 2: logs\n## B", seen) == ("## Part 2: logs\n## B", True)
    assert one_title("no heading", False) == ("no heading", False)
