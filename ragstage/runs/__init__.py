"""Run folders: what ``ragstage run`` and chapter 5 write, and what chapters 6 and 7 read back.

* :mod:`~ragstage.runs.labels`: run labels such as ``minilm+ce/revised``, and the comparisons a run set invites;
* :mod:`~ragstage.runs.layout`: the files of a run folder, named in one place;
* :mod:`~ragstage.runs.loading`: a run folder read back (every pipeline's traces and receipt), its
  invariants, and the differences between two runs;
* :mod:`~ragstage.runs.summary`: what a run says beyond its bucket table (prompt fill, the
  ceiling of a generation change, where the points are).

Reading a run needs no model and imports no torch.
"""

from .loading import RunSet, check_run, diff_runs, load_run

__all__ = ["RunSet", "load_run", "check_run", "diff_runs"]
