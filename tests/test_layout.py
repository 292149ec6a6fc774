"""The module map of docs/architecture.md names every module and package of ``ragstage``, and nothing else."""

import re
from pathlib import Path

import ragstage

ROOT = Path(ragstage.__file__).parent
ARCHITECTURE = ROOT.parent / "docs" / "architecture.md"


def test_the_module_map_matches_the_tree():
    text = ARCHITECTURE.read_text(encoding="utf-8").split("\n## The module map", 1)[1].split("\n## ", 1)[0]
    named = {name for row in text.splitlines() if row.startswith("| `")
             for name in re.findall(r"`([\w/]+)`", row.split("|")[1])}
    tree = {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    tree |= {f"{p.name}/" for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert named == tree, f"in the tree only: {sorted(tree - named)}; in the module map only: {sorted(named - tree)}"
