"""Writing an HTML page from a notebook cell shows none of the page's figures below the cell.

The report and the comparison page draw their figures to embed them as SVG. In a Jupyter
kernel every figure the package makes is shown at the end of the cell unless it was made inside
``plots.no_display()``; a page's figures are the page's, so a cell that only writes the page
must show nothing (chapter 6's gate cell once showed the comparison page's heatmap and flow).
The kernel is stood in for by a shell that records what the figure module registers.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ragstage import write_traces
from ragstage.fixtures import load_traces
from ragstage.html import comparison_html, report_html
from ragstage.plots import _figure, migration_heatmap


class _Formatter:
    def for_type(self, *args):
        return None


@pytest.fixture
def kernel(monkeypatch):
    """A stand-in kernel shell: figures made outside ``no_display`` are noted in ``_pending``."""
    shell = SimpleNamespace(kernel=object(), display_formatter=SimpleNamespace(formatters={"image/png": _Formatter()}),
                            events=SimpleNamespace(register=lambda *a: None))
    monkeypatch.setattr(_figure, "_kernel_shell", lambda: shell)
    monkeypatch.setattr(_figure, "_hooked", set())
    _figure._pending.clear()
    yield _figure._pending
    _figure._pending.clear()


@pytest.fixture
def two_runs(tmp_path):
    before = load_traces("incidents", "batch.jsonl")
    after = [t.replace(pipeline="after") for t in before]
    write_traces(tmp_path / "before.jsonl", before)
    write_traces(tmp_path / "after.jsonl", after)
    return tmp_path / "before.jsonl", tmp_path / "after.jsonl"


def test_the_stand_in_kernel_notes_a_figure(kernel, two_runs):
    from ragstage import compare

    before = load_traces("incidents", "batch.jsonl")
    migration_heatmap(compare(before, before))
    assert len(kernel) == 1


def test_the_comparison_page_shows_no_figure_in_the_cell(kernel, two_runs):
    page, n = comparison_html(*two_runs)
    assert n > 0 and "<svg" in page
    assert kernel == []


def test_the_report_shows_no_figure_in_the_cell(kernel, two_runs):
    page, _ = report_html([two_runs[0]])
    assert "<svg" in page
    assert kernel == []
