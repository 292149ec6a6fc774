"""The glossary: one entry for every bucket, flag and method, and every chapter link lands on one."""

from __future__ import annotations

import re

import nbformat
import pytest
from repo_paths import REPO

from ragstage.attribution import BUCKETS, FLAGS, GENERATION_KINDS

NOTEBOOKS = REPO / "notebooks"
GLOSSARY = NOTEBOOKS / "glossary.md"
ANCHOR = re.compile(r'<a id="([a-z0-9_]+)"></a>\s*\n\s*### (\S+)')
LINK = re.compile(r"\(glossary\.md#([^)\s]+)\)")
CHAPTER_LINK = re.compile(r"\[chapter (\d[a-z]?)\]\((0\d[a-z]?_[a-z0-9_]+\.ipynb)\)")


def entries() -> dict[str, str]:
    """anchor -> the entry's text (up to the next anchor)."""
    text = GLOSSARY.read_text(encoding="utf-8")
    found = {}
    pieces = ANCHOR.split(text)
    for i in range(1, len(pieces), 3):
        anchor, heading, body = pieces[i], pieces[i + 1], pieces[i + 2]
        assert anchor == heading, f"anchor {anchor!r} is not its heading {heading!r}"
        found[anchor] = body.split('<a id="', 1)[0]
    return found


def test_every_bucket_flag_and_method_has_an_entry():
    wanted = set(BUCKETS) | set(FLAGS) | {"severity", "generation_kind", "recall", "retention", "support",
                                          "wilson_interval", "normal_interval", "mcnemar", "holm", "power",
                                          "bootstrap", "migration", "hit_rate", "recall_at_k", "silver_label",
                                          "gold_sample", "ppi"}
    assert wanted - set(entries()) == set()
    assert all(kind in entries()["generation_kind"] for kind in GENERATION_KINDS)


def test_every_entry_names_a_chapter_that_exists():
    for anchor, body in entries().items():
        links = CHAPTER_LINK.findall(body)
        assert links, f"{anchor}: no chapter named"
        for number, name in links:
            assert (NOTEBOOKS / name).exists() and name.startswith(f"0{number}_"), f"{anchor}: bad link {name}"


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")) + sorted(NOTEBOOKS.glob("solutions/*.ipynb")),
                         ids=lambda p: p.name)
def test_glossary_links_in_the_notebooks_land_on_an_entry(path):
    known = set(entries())
    nb = nbformat.read(path, as_version=4)
    links = [a for cell in nb.cells if cell.cell_type == "markdown" for a in LINK.findall(cell.source)]
    assert set(links) - known == set(), f"{path.name} links to glossary entries that do not exist"
