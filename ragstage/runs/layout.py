"""The files of a run folder, named in one place: the pipeline writes them, :mod:`ragstage.runs`
reads them, chapter 5 copies them.

A run set is a folder with one sub-folder per pipeline (named by :func:`folder_for`)::

    <pipeline>/
        traces.jsonl         one trace per question (the trace format of the README)
        prompts.jsonl        per question: query_id, query, the assembled passages (context), their
                             ids, token count and the first passage that did not fit (stopped_at)
        receipt.json         data hash, models (stand-ins named), versions, settings, counts, time
        traces-<v>.jsonl     a generation-only re-run on these saved prompts, prompt version <v>
        receipt-<v>.json     its receipt

An oracle run has a folder of its own with the same three files (its prompts differ from the
pipeline's). Every file is written whole or not at all (a temporary file, then a rename), and
the traces before the receipt, so a receipt always has its traces. Stage and generation caches
live outside run folders, under the cache directory a receipt names.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import orjson

from ..atomic import atomic_write_bytes
from ..errors import TraceError
from ..trace import Trace, write_traces

__all__ = ["RunFiles", "find_runs", "trace_files", "folder_for", "settings_folder", "oracle_folder", "is_run_file",
           "copy_runs", "atomic_write_bytes"]

_TRACES, _PROMPTS, _RECEIPT = "traces", "prompts", "receipt"


@dataclass(frozen=True)
class RunFiles:
    """The files of one run: the pipeline's own (``suffix=""``) or a re-run (``suffix`` = prompt version)."""

    folder: Path
    suffix: str = ""

    def _name(self, stem: str, ext: str) -> Path:
        return self.folder / (f"{stem}-{self.suffix}{ext}" if self.suffix else f"{stem}{ext}")

    @property
    def traces(self) -> Path:
        return self._name(_TRACES, ".jsonl")

    @property
    def receipt(self) -> Path:
        return self._name(_RECEIPT, ".json")

    @property
    def prompts(self) -> Path:
        """Always the folder's own ``prompts.jsonl``: a re-run uses the prompts its run saved."""
        return self.folder / f"{_PROMPTS}.jsonl"

    @classmethod
    def from_receipt(cls, path: str | Path) -> "RunFiles":
        """The run a ``receipt[-<suffix>].json`` belongs to."""
        path = Path(path)
        return cls(path.parent, path.stem[len(_RECEIPT):].lstrip("-"))

    def write_prompts(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.prompts, b"".join(orjson.dumps(record) + b"\n" for record in records))

    def write(self, traces: Iterable[Trace], receipt: Mapping[str, Any]) -> None:
        """The traces, then the receipt (see the module docstring)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_traces(self.traces, traces)
        atomic_write_bytes(self.receipt, orjson.dumps(receipt, option=orjson.OPT_INDENT_2))

    def read_receipt(self) -> dict[str, Any]:
        try:
            receipt = orjson.loads(self.receipt.read_bytes())
        except FileNotFoundError:
            raise FileNotFoundError(f"no run receipt at {self.receipt}") from None
        except orjson.JSONDecodeError as exc:
            raise TraceError(f"invalid JSON ({exc})", path=str(self.receipt)) from None
        if not isinstance(receipt, dict):
            raise TraceError("a receipt must be a JSON object", path=str(self.receipt))
        return receipt

    def read_prompts(self) -> dict[str, dict[str, Any]]:
        """The saved prompts by query id; an error names the line that cannot be read."""
        try:
            lines = self.prompts.read_bytes().splitlines()
        except FileNotFoundError:
            raise FileNotFoundError(f"no saved prompts at {self.prompts}") from None
        saved: dict[str, dict[str, Any]] = {}
        for lineno, line in enumerate(lines, start=1):
            try:
                record = orjson.loads(line)
                saved[str(record["query_id"])] = record
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise TraceError("expected a JSON object with a query_id", path=str(self.prompts),
                                 line=lineno) from None
        return saved


def find_runs(root: str | Path) -> list[RunFiles]:
    """Every run with a receipt under ``root``: folder by folder, each pipeline's own run first."""
    receipts = sorted(Path(root).rglob(f"{_RECEIPT}*.json"),
                      key=lambda p: (p.parent, p.name != f"{_RECEIPT}.json", p.name))
    return [RunFiles.from_receipt(path) for path in receipts]


def trace_files(root: str | Path) -> list[Path]:
    """Every trace file under ``root`` (``.jsonl``, ``.jsonl.gz``), leaving out saved prompts and temp files."""
    root = Path(root)
    found = sorted([*root.rglob("*.jsonl"), *root.rglob("*.jsonl.gz")])
    return [path for path in found if not path.name.startswith((_PROMPTS, "."))]


def is_run_file(path: Path) -> bool:
    """A file the layout names (traces, prompts, receipts), not a temporary one."""
    return path.is_file() and not path.name.startswith(".") and \
        bool(re.fullmatch(rf"({_TRACES}|{_PROMPTS})(-.+)?\.jsonl|{_RECEIPT}(-.+)?\.json", path.name))


def copy_runs(source: str | Path, target: str | Path) -> list[Path]:
    """Replace ``target`` with the run files under ``source`` (nothing else: no caches, no temp files)."""
    source, target = Path(source), Path(target)
    files = [path for path in sorted(source.rglob("*")) if is_run_file(path)]
    if not files:
        raise FileNotFoundError(f"no run files under {source}")
    shutil.rmtree(target, ignore_errors=True)
    copied = []
    for path in files:
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        copied.append(destination)
    return copied


def settings_folder(root: str | Path, name: str, settings: Mapping[str, Any], defaults: Mapping[str, Any]) -> Path:
    """``root/name`` for the default settings, else ``root/name-<changed setting>-<value>...``.

    A run with other settings (a bigger budget, fewer pipelines) then never writes into the folder
    of another, so nothing that reads a folder later mixes pipelines from two different runs.
    """
    unknown = set(settings) ^ set(defaults)
    if unknown:
        raise ValueError(f"settings and defaults name different settings: {sorted(unknown)}")
    changed = [f"{key}-{_as_name(value)}" for key, value in settings.items() if value != defaults[key]]
    return folder_for(root, "-".join([name, *changed]).lower())


def oracle_folder(run_folder: str | Path, oracle: str) -> Path:
    """Where an oracle built from the run in ``run_folder`` goes by default: a folder beside it."""
    run_folder = Path(run_folder)
    return folder_for(run_folder.parent, f"{run_folder.name} {oracle}")


def _as_name(value: Any) -> str:
    return "_".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def folder_for(root: str | Path, label: str) -> Path:
    """A pipeline's folder in a run set: its label with every run of other characters as ``_``."""
    name = re.sub(r"[^A-Za-z0-9.-]+", "_", str(label)).strip("_")
    if not name:
        raise ValueError(f"cannot make a folder name from the label {label!r}")
    return Path(root) / name
