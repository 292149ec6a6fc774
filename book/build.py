"""Build the workbook's website from the manual in ``docs/`` and the committed notebooks.

``python book/build.py [--root REPO] [--out build/book]`` (what ``make book`` runs) gathers the
pages into ``OUT/src`` and runs Sphinx on them (configuration: ``book/conf.py``) into
``OUT/html``, a static site whose links are all relative: open ``OUT/html/index.html`` or serve
the folder from anywhere. The pages, at the same paths as in the repository:

* ``docs/index.md``, the start-here page, as the site's ``index``, with the table of contents;
* every other page of ``docs/``, in the order of :data:`MANUAL` (pages not named there after it);
* every chapter ``notebooks/*.ipynb`` and solution ``notebooks/solutions/*.ipynb``, as committed
  and not re-executed (so a page's Colab link is its notebook's path), with one title each: a
  second ``#`` heading in a notebook (a chapter's "Part 2") is shown as a section, so the table of
  contents lists each chapter once;
* ``notebooks/glossary.md``.

Links between pages stay links between pages; a link to any other repository file becomes a link
to the file in the repository. It prints what it gathered and fails when a page it needs is missing.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path

BOOK = Path(__file__).resolve().parent
REPOSITORY_FILES = "https://github.com/ragstage/ragstage/blob/main"

#: The manual's pages in reading order (``docs/<name>.md``); a page of ``docs/`` not named here
#: follows them, and a name here without its page is left out.
MANUAL = ("trace-format", "command-line", "your-own-system", "stacks", "report-and-gate", "safe-outputs",
          "parquet-and-spark", "performance", "architecture", "contributing")
#: The start-here page, which the site shows as its ``index``.
START = "docs/index.md"

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_FENCE = re.compile(r"^ *(```|~~~)")


#: Pictures the manual shows (``docs/images/``): copied onto the site beside its pages.
IMAGES = "docs/images"


def is_site_file(path: str) -> bool:
    """Whether a repository path (relative to the root) is on the site: a page, or a picture of the manual."""
    return is_page(path) or path.startswith(IMAGES + "/")


def is_page(path: str) -> bool:
    """Whether a repository path (relative to the root) is a page of the site."""
    return (path.startswith("notebooks/") and path.endswith(".ipynb") and path.count("/") <= 2) or \
        path == "notebooks/glossary.md" or (path.startswith("docs/") and path.endswith(".md") and path.count("/") == 1)


def site_path(path: str) -> str:
    """Where a page of the repository sits on the site: the start-here page is the root's ``index``."""
    return "index.md" if path == START else path


def one_title(markdown: str, seen_title: bool) -> tuple[str, bool]:
    """``markdown`` with every ``#`` heading after the first (``seen_title``: already met in an earlier
    cell) made a ``##`` one, and whether a title has been met. Sphinx lists each ``#`` heading of a page
    as an entry of the table of contents, so a chapter's "# Part 2" would show as a chapter of its own."""
    lines, fenced = markdown.split("\n"), False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and re.match(r"# ", line):
            if seen_title:
                lines[i] = "#" + line
            seen_title = True
    return "\n".join(lines), seen_title


def relink(markdown: str, folder: str, root: Path, page_folder: str | None = None) -> str:
    """Relative links of a text that sits in repository folder ``folder`` and is shown on a page
    in site folder ``page_folder`` (default: the same folder): a link to a page of the site
    becomes a link to that page (a picture of the manual, to its copy on the site), a link to any
    other repository file a link to the file in the repository, so no link of the site points at a
    file the site does not hold."""
    page_folder = folder if page_folder is None else page_folder

    def fix(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path, hash_, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(folder, path)) if path else ""
        if not resolved or resolved.startswith("..") or not (root / resolved).exists():
            return match.group(0)
        if is_site_file(resolved):
            new = posixpath.relpath(site_path(resolved), page_folder or ".")
        else:
            new = f"{REPOSITORY_FILES}/{resolved}"
        return f"{match.group(1)}{new}{hash_}{anchor}{match.group(3)}"

    return _LINK.sub(fix, markdown)


def stage_notebook(path: Path, root: Path, src: Path, extra: Path) -> None:
    """The page's copy (links fixed) under ``src``; the notebook as committed under ``extra``,
    which the site serves beside the page for download."""
    rel = path.relative_to(root)
    for base in (src, extra):
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, extra / rel)
    nb = json.loads(path.read_text(encoding="utf-8"))
    folder, titled = rel.parent.as_posix(), False
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            text, titled = one_title(text, titled)
            cell["source"] = relink(text, folder, root)
    (src / rel).write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")


def manual_pages(root: Path) -> list[str]:
    """The manual's pages other than the start-here page (``docs/<name>``), in reading order."""
    present = {p.stem for p in (root / "docs").glob("*.md")} - {Path(START).stem}
    ordered = [name for name in MANUAL if name in present]
    return [f"docs/{name}" for name in ordered + sorted(present - set(ordered))]


def toctree(caption: str, entries: list[str]) -> str:
    """A table of contents for the sidebar (hidden on the page, which says what it holds in its own words)."""
    return "```{toctree}\n:caption: " + caption + "\n:maxdepth: 1\n:hidden:\n\n" + "\n".join(entries) + "\n```\n"


def gather(root: Path, src: Path, extra: Path) -> list[str]:
    """Lay out the site's sources in ``src`` and the downloadable notebooks in ``extra``;
    returns the table of contents' entries, in order."""
    for folder in (src, extra):
        if folder.exists():
            shutil.rmtree(folder)
    (src / "docs").mkdir(parents=True)
    start = root / START
    if not start.is_file():
        raise SystemExit(f"no start-here page {start}")
    notebooks = root / "notebooks"
    chapters = sorted(notebooks.glob("*.ipynb"))
    solutions = sorted((notebooks / "solutions").glob("*.ipynb"))
    if not chapters:
        raise SystemExit(f"no notebooks in {notebooks}")
    for path in chapters + solutions:
        stage_notebook(path, root, src, extra)
    glossary = notebooks / "glossary.md"
    if glossary.is_file():
        (src / "notebooks" / "glossary.md").write_text(relink(glossary.read_text(encoding="utf-8"), "notebooks", root),
                                                       encoding="utf-8")
    else:
        print(f"warning: {glossary} does not exist; the site has no glossary", file=sys.stderr)
    if (root / IMAGES).is_dir():
        shutil.copytree(root / IMAGES, src / IMAGES)
    manual = manual_pages(root)
    for name in manual:
        text = (root / f"{name}.md").read_text(encoding="utf-8")
        (src / f"{name}.md").write_text(relink(text, "docs", root), encoding="utf-8")

    chapter_pages = [p.relative_to(root).with_suffix("").as_posix() for p in chapters]
    solution_pages = [p.relative_to(root).with_suffix("").as_posix() for p in solutions]
    start_here = relink(start.read_text(encoding="utf-8"), "docs", root, "").rstrip()
    index = [start_here, "", toctree("Chapters", chapter_pages)]
    if solution_pages:
        index.append(toctree("Solutions", solution_pages))
    index.append(toctree("The manual", manual))
    if glossary.is_file():
        index.append(toctree("Reference", ["notebooks/glossary"]))
    (src / "index.md").write_text("\n".join(index), encoding="utf-8")
    print(f"{len(chapters)} chapters, {len(solutions)} solutions, glossary: {'yes' if glossary.is_file() else 'no'}, "
          f"{len(manual)} manual pages")
    return chapter_pages + solution_pages + manual


def build(root: Path, out: Path) -> Path:
    """Gather the sources under ``out/src`` and build the site into ``out/html``; returns the latter."""
    src, extra, html = out / "src", out / "extra", out / "html"
    gather(root, src, extra)
    if html.exists():
        shutil.rmtree(html)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-c", str(BOOK), "-d", str(out / "doctrees"),
               "-D", f"html_extra_path={extra}", str(src), str(html)]
    subprocess.run(command, check=True)
    print(f"site built: {html / 'index.html'}")
    return html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=BOOK.parent, help="the repository (default: this one)")
    parser.add_argument("--out", type=Path, default=BOOK.parent / "build" / "book", help="default: build/book")
    args = parser.parse_args(argv)
    build(args.root.resolve(), args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
