"""Chapter 5's run: the folder its settings write to, and the checks a finished run must pass.

The chapter's reader sets a few plain names (``BUDGET = 2048``); :func:`run_folder` turns them
into the folder the run writes to, so a run with other settings never mixes its pipelines into
the folder of the chapter's own run. :func:`verify_run` is the test the chapter's last cell
runs: the invariants every run must keep, receipts that name the data actually read, and, for
the chapter's own offline run on the unedited mini corpus, identity with the committed copy
under ``fixtures/mini_run/`` (greedy decoding on the same inputs gives the same answers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..fixtures import fixtures_dir
from ..runs import check_run, diff_runs, load_run
from ..runs.layout import copy_runs, settings_folder
from .data import BeirData

__all__ = ["CHAPTER_DEFAULTS", "run_folder", "verify_run"]

# The chapter's own settings, apart from OFFLINE_MODELS (its default is "not in Colab").
CHAPTER_DEFAULTS: Mapping[str, Any] = {"LIMIT": None, "RETRIEVERS": ("bm25", "dense"), "RERANK": (False, True),
                                       "BUDGET": 1024, "REVISED_ON": ("dense", True)}


def _plain(value: Any) -> Any:
    # A list the reader typed and the tuple of the defaults are the same setting.
    return tuple(value) if isinstance(value, list) else value


def run_folder(data: str, *, in_colab: bool, root: str | Path = "runs", **settings: Any) -> Path:
    """``root/<data>`` for the chapter's own settings, else a folder named after what changed.

    ``settings`` are the chapter's names (``LIMIT``, ``OFFLINE_MODELS``, ``RETRIEVERS``,
    ``RERANK``, ``BUDGET``, ``REVISED_ON``); a missing or unknown name is an error, so a typo
    cannot silently fall back to a default.
    """
    defaults = {**CHAPTER_DEFAULTS, "OFFLINE_MODELS": not in_colab}
    given = {name: _plain(value) for name, value in settings.items()}
    return settings_folder(root, data, given, defaults)


def verify_run(folder: str | Path, data: BeirData, *, committed: str | Path | None = None,
               refresh: bool = False) -> str:
    """Check the run in ``folder``; raise ``AssertionError`` naming every problem, else say what held.

    Always: one trace per claim per pipeline, each stage passing on only what it received, and
    receipts whose corpus hash (and, for an archive checked on download such as BEIR SciFact
    against ``SCIFACT_MD5``, md5) match ``data``. For the chapter's own
    offline run on the unedited mini corpus (``folder`` named ``mini``, stand-in models, the
    committed copy's data): no difference from ``committed`` (default ``fixtures/mini_run``).
    ``refresh=True`` first replaces the committed copy with this run, e.g. after editing the mini
    corpus on purpose.
    """
    folder = Path(folder)
    committed = Path(committed) if committed is not None else fixtures_dir() / "mini_run"
    run = load_run(folder)
    problems = check_run(run, data.queries)
    md5 = data.meta.get("md5")  # set when the data came from a checked archive (BEIR SciFact)
    for label, receipt in run.receipts.items():
        if receipt["data"]["corpus_hash"] != data.corpus_hash:
            problems.append(f"{label}: the receipt's corpus hash is not the data's")
        if md5 is not None and receipt["data"].get("md5") != md5:
            problems.append(f"{label}: the receipt's md5 {receipt['data'].get('md5')!r} is not the archive's {md5!r}")
    assert not problems, problems
    lines = [f"{folder}: {len(run.labels)} runs, {len(data.queries)} traces each; invariants hold; "
             "receipts match the data"]
    own_offline_run = folder.name == "mini" and run.uses_stand_ins
    if own_offline_run and refresh:
        copy_runs(folder, committed)
    reference = load_run(committed)
    same_data = all(r["data"]["corpus_hash"] == data.corpus_hash and r["data"]["queries"] == len(data.queries)
                    for r in reference.receipts.values())
    if own_offline_run and same_data:
        differences = diff_runs(reference, run)
        assert not differences, differences
        lines.append(f"no difference from the committed copy in {committed.name}/")
    else:
        lines.append("a run of your own: not compared with the committed mini run")
    return "\n".join(lines)
