"""Figures for the workbook: stage bars, funnels, intervals, migrations, prompt fill, chunkings.

Every function draws with matplotlib's object-oriented API, takes plain inputs (the tables
``ragstage.report`` and ``ragstage.runs.summary`` return, or counts and spans) and returns a
matplotlib :class:`~matplotlib.figure.Figure` (most accept ``ax=`` to draw into axes of your
own). In a notebook each figure shows exactly once, however the cell ends (see
:mod:`ragstage.plots._figure`); :func:`png_bytes` gives reproducible PNG bytes for a report.
The data behind each drawing stays readable from the figure (bar widths, tick labels, text,
patch ids), which is what the tests check.

=========================  ========  ====================================================
function                   chapter   draws
=========================  ========  ====================================================
:func:`stage_bars`         1, 3, 4,  each bucket's share with its Wilson interval
                           6, 7
:func:`lost_bars`          5, 6      the lost questions, stacked by the stage that lost them
:func:`funnel_plot`        2, 4, 6,  stage survival rates, and entered/survived counts
                           7
:func:`funnel_counts`      any       entered/survived counts only
:func:`interval_plot`      2, 4, 6   rates with Wilson (and normal) intervals
:func:`coverage_plot`      2         how often each interval covers the true rate
:func:`ppi_coverage_plot`  6b        PPI++ coverage and width against gold-only Wilson
:func:`migration_heatmap`  3, 6, 7   the migration matrix with its counts
:func:`migration_flow`     3, 6, 7   before buckets -> after buckets, fixed and broken
:func:`bucket_change`      7         each bucket's count in two runs (e.g. two chunk sizes)
:func:`prompt_fill_plot`   5         passages offered against passages in the prompt
:func:`chunking_plot`      7         a document's two chunkings and a gold span over them
:func:`stage_walk`         1         each case's evidence through the five stages, to its stop
:func:`funnel_diagram`     2         each stage's denominator, the last stage's survivors
:func:`paired_table`       2         the paired two-by-two table: fixed, broken and the rest
:func:`span_tree`          7         one request's spans, each coloured by its stage
=========================  ========  ====================================================
"""

from __future__ import annotations

from ._figure import DPI, Figure, no_display, png_bytes
from ._style import BUCKET_COLOURS, STAGE_LABELS
from .chunks import chunking_plot, document_chunks
from .funnel_diagram import funnel_diagram
from .intervals import coverage_plot, interval_plot, interval_rows
from .migration import MOVE_COLOURS, bucket_change, migration_flow, migration_heatmap, migration_matrix, move_kind
from .paired import paired_table
from .power import power_plot
from .ppi import ppi_coverage_plot
from .prompts import prompt_fill_plot
from .span_tree import span_tree
from .stages import FUNNEL_STAGES, funnel_counts, funnel_plot, lost_bars, stage_bars, stage_shares
from .walk import stage_walk

__all__ = [
    "BUCKET_COLOURS",
    "DPI",
    "FUNNEL_STAGES",
    "Figure",
    "MOVE_COLOURS",
    "STAGE_LABELS",
    "bucket_change",
    "chunking_plot",
    "coverage_plot",
    "document_chunks",
    "funnel_counts",
    "funnel_diagram",
    "funnel_plot",
    "interval_plot",
    "interval_rows",
    "lost_bars",
    "migration_flow",
    "migration_heatmap",
    "migration_matrix",
    "move_kind",
    "no_display",
    "paired_table",
    "png_bytes",
    "power_plot",
    "ppi_coverage_plot",
    "prompt_fill_plot",
    "span_tree",
    "stage_bars",
    "stage_shares",
    "stage_walk",
]
