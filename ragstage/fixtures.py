"""Find and load the files under ``fixtures/``, from a checkout or an installed package.

A learner edits these files (that is the point of most exercises), so the checkout's own
``fixtures/`` folder wins. An installed wheel carries a copy as ``ragstage/_fixtures``.
``RAGSTAGE_FIXTURES`` points elsewhere, e.g. at a folder of the reader's own cases.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from .trace import Trace, read_traces

__all__ = ["fixtures_dir", "fixture_path", "load_json", "load_traces", "find_case", "edit_case"]

_HERE = Path(__file__).resolve().parent


def fixtures_dir() -> Path:
    """The folder the fixtures are read from (see the module docstring for the order)."""
    candidates = [os.environ.get("RAGSTAGE_FIXTURES"), _HERE.parent / "fixtures", _HERE / "_fixtures"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    raise FileNotFoundError("no fixtures folder found: set RAGSTAGE_FIXTURES to the project's fixtures/ folder")


def fixture_path(*parts: str) -> Path:
    """Path of one fixture file, e.g. ``fixture_path("five_cases", "cases.jsonl")``."""
    path = fixtures_dir().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"no fixture {'/'.join(parts)} under {fixtures_dir()}")
    return path


def load_json(*parts: str) -> Any:
    """A JSON fixture (corpora, published counts) as plain Python data."""
    with open(fixture_path(*parts), encoding="utf-8") as handle:
        return json.load(handle)


def load_traces(*parts: str) -> list[Trace]:
    """A JSON Lines fixture of traces, validated like any other trace file."""
    return list(read_traces(fixture_path(*parts)))


def find_case(traces: Iterable[Trace], query_id: str) -> Trace:
    """The trace with ``query_id`` from a list of traces; a KeyError naming the ids there are."""
    traces = list(traces)
    for trace in traces:
        if trace.query_id == query_id:
            return trace
    known = ", ".join(t.query_id for t in traces[:12]) + (", ..." if len(traces) > 12 else "")
    raise KeyError(f"no case {query_id!r} among {len(traces)} traces ({known})")


def edit_case(traces: Sequence[Trace], query_ids: str | Sequence[str], **changes: Any) -> list[Trace]:
    """A copy of ``traces`` in which the named cases carry ``changes``; the input is untouched.

    The one-call edit the exercises use instead of editing a JSON line by hand:
    ``edit_case(batch, "inc-209", prompt=[...])`` or, for several cases at once,
    ``edit_case(after, ["inc-210", "inc-211"], correct=True)``. Each edited trace is checked
    like a trace file (:meth:`Trace.replace`), so a misspelt field or a bad value raises a
    clear error; an id that is not in ``traces`` raises a KeyError.
    """
    wanted = [query_ids] if isinstance(query_ids, str) else list(query_ids)
    for query_id in wanted:
        find_case(traces, query_id)
    targets = set(wanted)
    return [t.replace(**changes) if t.query_id in targets else t for t in traces]
