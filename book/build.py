"""Build the workbook's website from the committed notebooks, without executing them.

``python book/build.py [--root REPO] [--out build/book]`` (what ``make book`` runs) gathers the
pages into ``OUT/src`` and runs Sphinx on them (configuration: ``book/conf.py``) into
``OUT/html``, a static site whose links are all relative: open ``OUT/html/index.html`` or serve
the folder from anywhere. The pages:

* every chapter ``notebooks/*.ipynb`` and solution ``notebooks/solutions/*.ipynb``, copied as
  committed, at the same paths as in the repository (so a page's Colab link is its notebook's path);
* ``notebooks/glossary.md``;
* the README's practitioner sections (:data:`PRACTITIONER_SECTIONS`), one page each under
  ``guide/``, with links to repository files turned into links to the repository;
* ``index.md``: the README's opening paragraphs and the table of contents.

It prints what it gathered and fails when a page it is told to build is missing.
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

#: The README's ``##`` sections for someone attributing their own system, in reading order.
PRACTITIONER_SECTIONS = (
    "What runs offline, and what needs the network",
    "The trace format",
    "The command line",
    "From Python",
    "Attribute your own system",
    "Pointing chapter 6 at your own run",
    "Traces at warehouse scale: Parquet and Spark",
)

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def slug(title: str) -> str:
    """A file name for a section title: lower case, words joined by ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")


def readme_sections(text: str) -> tuple[str, dict[str, str]]:
    """The README's text before its first ``##`` heading, and each ``##`` section by title."""
    parts = re.split(r"^## +(.+?)\s*$", text, flags=re.MULTILINE)
    intro, sections = parts[0], {}
    for title, body in zip(parts[1::2], parts[2::2]):
        sections[title] = body
    return intro, sections


def is_page(path: str) -> bool:
    """Whether a repository path (relative to the root) is a page of the site."""
    return (path.startswith("notebooks/") and path.endswith(".ipynb") and path.count("/") <= 2) or \
        path == "notebooks/glossary.md"


def relink(markdown: str, folder: str, root: Path, page_folder: str | None = None) -> str:
    """Relative links of a text that sits in repository folder ``folder`` and is shown on a page
    in site folder ``page_folder`` (default: the same folder): a link to a page of the site
    becomes a link to that page, a link to any other repository file a link to the file in the
    repository, so no link of the site points at a file the site does not hold."""
    page_folder = folder if page_folder is None else page_folder

    def fix(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path, hash_, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(folder, path)) if path else ""
        if not resolved or resolved.startswith("..") or not (root / resolved).exists():
            return match.group(0)
        if is_page(resolved):
            new = posixpath.relpath(resolved, page_folder or ".")
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
    folder = rel.parent.as_posix()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = relink(text, folder, root)
    (src / rel).write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")


def gather(root: Path, src: Path, extra: Path) -> list[str]:
    """Lay out the site's sources in ``src`` and the downloadable notebooks in ``extra``;
    returns the table of contents' entries, in order."""
    for folder in (src, extra):
        if folder.exists():
            shutil.rmtree(folder)
    (src / "guide").mkdir(parents=True)
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

    intro, sections = readme_sections((root / "README.md").read_text(encoding="utf-8"))
    missing = [t for t in PRACTITIONER_SECTIONS if t not in sections]
    if missing:
        raise SystemExit(f"README.md has no section(s) {missing}: update PRACTITIONER_SECTIONS in {__file__}")
    guide = []
    for title in PRACTITIONER_SECTIONS:
        name = f"guide/{slug(title)}"
        body = re.sub(r"^#(#{2,}) ", r"\1 ", sections[title], flags=re.MULTILINE)  # ### -> ## under the page's #
        (src / f"{name}.md").write_text(f"# {title}\n{relink(body, '', root, 'guide')}", encoding="utf-8")
        guide.append(name)

    def toctree(caption: str, entries: list[str]) -> str:
        return "```{toctree}\n:caption: " + caption + "\n:maxdepth: 1\n\n" + "\n".join(entries) + "\n```\n"

    chapter_pages = [p.relative_to(root).with_suffix("").as_posix() for p in chapters]
    solution_pages = [p.relative_to(root).with_suffix("").as_posix() for p in solutions]
    index = [relink(intro, "", root).strip(), "", toctree("Chapters", chapter_pages)]
    if solution_pages:
        index.append(toctree("Solutions", solution_pages))
    index.append(toctree("For practitioners", guide))
    if glossary.is_file():
        index.append(toctree("Reference", ["notebooks/glossary"]))
    (src / "index.md").write_text("\n".join(index), encoding="utf-8")
    print(f"{len(chapters)} chapters, {len(solutions)} solutions, glossary: {'yes' if glossary.is_file() else 'no'}, "
          f"{len(guide)} practitioner pages")
    return chapter_pages + solution_pages + guide


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
