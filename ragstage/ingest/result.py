"""The result of an ingest: the traces, and everything that could not be read as asked, with counts.

Nothing is dropped or guessed silently: labels that matched no request, labels whose chunks
cannot be located with the chunk keys (with the metadata keys seen), incomplete requests
(never written with an empty stage), spans in a convention this does not read, requests
with no LLM span, and a gold span that reached the prompt only in part are all counted here,
and :meth:`IngestResult.summary` says them on the terminal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..trace import Trace, write_traces
from .conventions import OPENINFERENCE
from .gold import Label

__all__ = ["IngestResult", "LLM_WITHOUT_RETRIEVER"]

#: Why a request with an LLM span but no retriever span is incomplete.
LLM_WITHOUT_RETRIEVER = "an LLM span but no retriever span"
_LOST_PARENT = ("a parent span not in the export (an export cut by a limit, a run still in flight, or an "
                "instrumentor that did not export it)")


@dataclass
class _TraceCounts:
    """What :meth:`IngestResult.summary` needs of the traces, gathered as they go by."""

    n: int = 0
    by_source: Counter[str] = field(default_factory=Counter)  # prompt_source (or "not logged") -> traces
    truncated: list[str] = field(default_factory=list)  # query ids of traces with a truncated passage
    labelled: int = 0  # traces with gold

    def add(self, trace: Trace) -> None:
        self.n += 1
        self.by_source[trace.prompt_source or "not logged"] += 1
        if trace.truncated:
            self.truncated.append(trace.query_id)
        if trace.gold:
            self.labelled += 1

    def merge(self, other: "_TraceCounts") -> None:
        """Add the counts of traces gathered elsewhere (a part of the input read by another process)."""
        self.n += other.n
        self.by_source.update(other.by_source)
        self.truncated += other.truncated
        self.labelled += other.labelled


@dataclass
class IngestResult:
    """The traces, and everything that could not be read as asked (reported, not dropped)."""

    traces: list[Trace]
    unmatched_labels: list[Label]
    without_llm: list[str]  # query ids of requests with no LLM span
    skipped: list[str] = field(default_factory=list)  # trace ids with no retriever, reranker or LLM span
    incomplete: dict[str, list[str]] = field(default_factory=dict)  # trace id -> why; not written
    unlocated: list[str] = field(default_factory=list)  # query ids whose label no chunk could be tested against
    unrecorded: list[str] = field(default_factory=list)  # query ids whose gold may be in documents not recorded
    chunk_metadata_keys: list[str] = field(default_factory=list)  # every metadata key seen on a chunk
    partial: list[str] = field(default_factory=list)  # query ids whose gold span reached the prompt in part
    read: list[str] = field(default_factory=list)  # "<source>: <format>, N spans" per input
    warnings: list[str] = field(default_factory=list)  # whatever else a user must know
    written: int | None = None  # traces written straight to a file (ingest_spans_to), not kept in `traces`
    # input -> its spans by the convention read ("... (not read)": a convention no adapter reads)
    conventions: dict[str, Counter[str]] = field(default_factory=dict)
    # every trace ingest produced, counted as it went by (the traces themselves may go to a file)
    counts: _TraceCounts = field(default_factory=_TraceCounts, repr=False, compare=False)

    def merge(self, part: "IngestResult") -> None:
        """Add what reading a later part of the same input found (its traces went to a file)."""
        self.without_llm += part.without_llm
        self.skipped += part.skipped
        self.incomplete.update(part.incomplete)
        self.unlocated += part.unlocated
        self.unrecorded += part.unrecorded
        self.partial += part.partial
        self.warnings += part.warnings
        self.counts.merge(part.counts)

    def write(self, path: str | Path) -> int:
        """Write the traces as JSON Lines; returns the count."""
        return write_traces(path, self.traces)

    @property
    def loud(self) -> bool:
        """True when something would put traces in a wrong bucket (``--strict`` exits 1)."""
        return bool(self.unmatched_labels or self.without_llm or self.incomplete or self.unlocated
                    or self.unrecorded or self.warnings)

    def summary(self) -> str:
        """One paragraph for a terminal: counts and what was left unmatched."""
        counts = self.counts
        lines = [f"read {r}" for r in self.read]
        for where, by in self.conventions.items():  # said when a file holds another convention than OpenInference
            if set(by) - {OPENINFERENCE}:
                lines.append(f"{where}: spans by convention: "
                             + ", ".join(f"{n} {name}" for name, n in by.most_common()))
        lines.append(f"{counts.n} trace(s)")
        lines.append("prompt ids: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.by_source.items())))
        partial = set(self.partial)
        truncated = sum(1 for query_id in counts.truncated if query_id not in partial)
        if truncated:
            lines.append(f"{truncated} trace(s) with a passage that reached the prompt only in part")
        if self.partial:
            lines.append(f"{len(self.partial)} trace(s) whose gold span the prompt holds only in part (partial "
                         "coverage: prompt_assembly): " + _some(self.partial))
        if self.without_llm:
            lines.append(f"{len(self.without_llm)} request(s) with no LLM span (prompt and answer not logged): "
                         + _some(self.without_llm))
        if self.incomplete:
            why = Counter(r for reasons in self.incomplete.values() for r in reasons)
            # model spans with no retriever beside retriever spans with no model: one request split in two traces
            cause = (f"each request's retriever and model spans in separate traces ({len(self.without_llm)} request(s) "
                     "above have a retriever but no LLM span): an instrumentor that opens no span around a request "
                     "(OpenLIT's LangChain instrumentation) needs the application to open one"
                     if self.without_llm and set(why) == {LLM_WITHOUT_RETRIEVER} else _LOST_PARENT)
            lines.append(f"{len(self.incomplete)} incomplete request(s) not written ("
                         + "; ".join(f"{n} with {r}" for r, n in why.most_common())
                         + f"): {cause}: " + _some(list(self.incomplete)))
        if self.skipped:
            lines.append(f"{len(self.skipped)} trace id(s) skipped: no retriever, reranker or LLM span "
                         "(indexing or other work, not a request)")
        if self.unmatched_labels:
            shown = [f"{lb.query_id or lb.query!r} (line {lb.line})" for lb in self.unmatched_labels]
            lines.append(f"{len(self.unmatched_labels)} label(s) matched no request: " + _some(shown))
        if self.unlocated:
            n_labelled = counts.labelled
            keys = ", ".join(self.chunk_metadata_keys) or "none"
            lines.append(f"{len(self.unlocated)} of {n_labelled + len(self.unlocated)} labelled request(s) have no "
                         "chunk the chunk keys locate, so their stage cannot be observed: written as label_missing, "
                         f"not as a retrieval loss; chunk metadata keys: {keys} (pass --doc-key/--start-key/--end-key, "
                         "Python: chunk_keys=ChunkKeys(...)): " + _some(self.unlocated))
        if self.unrecorded:
            lines.append(f"{len(self.unrecorded)} labelled request(s) with no gold among the retrieved documents the "
                         "export records, while the retriever returned more (OpenLIT records the first three): "
                         "their stage cannot be observed: written as label_missing, not as a retrieval loss: "
                         + _some(self.unrecorded))
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _some(items: list[str], k: int = 5) -> str:
    return ", ".join(items[:k]) + (" ..." if len(items) > k else "")
