"""The README's coverage table is the simulation's, computed, never copied.

The table under README.md's "Gold for a few questions" is the uniform judge's part of
``ragstage.ppi.coverage.coverage_table()`` (its default seed, 2,000 draws per cell: the same
numbers as the manual's full table), one row per bucket rate and one column per gold sample
size, each cell the PPI++ coverage and, in brackets, the PPI++ width as a share of gold-only
Wilson's. This test recomputes it; when the simulation changes, regenerate the README's rows
with ``python tests/integration/test_readme_coverage_table.py``.
"""

from __future__ import annotations

import re

from repo_paths import REPO

from ragstage.ppi.coverage import simulate

README = REPO / "README.md"


def readme_coverage_table() -> str:
    """The README's table, from the simulation (the uniform judge of ``coverage_table()``, seed 20261205)."""
    table = simulate("uniform", seed=20261205)
    sizes = sorted(set(table.n))
    lines = ["| bucket rate | " + " | ".join(f"{n} gold labels" for n in sizes) + " |",
             "|---:|" + "---:|" * len(sizes)]
    for rate in sorted(set(table.rate)):
        cells = []
        for n in sizes:
            row = table[(table.rate == rate) & (table.n == n)].iloc[0]
            shown = f"{row.ppi_coverage:.3f}"
            cells.append(f"{'**' + shown + '**' if row.ppi_coverage < 0.93 else shown} ({row.width_ratio:.2f})")
        lines.append(f"| {rate:.0%} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def test_the_readme_shows_the_simulation_s_table():
    text = README.read_text(encoding="utf-8")
    assert readme_coverage_table() in text, (
        "README.md's coverage table is not the simulation's: regenerate it with "
        "python tests/integration/test_readme_coverage_table.py")


def test_the_table_marks_exactly_the_cells_below_93_percent():
    bold = re.findall(r"\*\*(0\.\d{3})\*\*", readme_coverage_table())
    assert bold and all(float(b) < 0.93 for b in bold)
    plain = re.findall(r"(?<!\*)\b(0\.\d{3}) \(", readme_coverage_table())
    assert plain and all(float(p) >= 0.93 for p in plain)


if __name__ == "__main__":
    print(readme_coverage_table(), end="")
