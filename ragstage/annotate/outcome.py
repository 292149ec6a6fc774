"""Retries with a bound, and the count of what was and was not written.

A write-back talks to a server over the network: a dropped connection or a busy server (HTTP
429 or 5xx) is tried again, a bounded number of times with a growing pause; anything else (a
refused request, a bad id) is not retried. Whatever happens, :class:`Outcome` ends with a count:
written, refused for want of a source trace id, unknown to the server, failed (with why).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

__all__ = ["Outcome", "retry", "transient", "why"]

T = TypeVar("T")


def transient(exc: BaseException) -> bool:
    """True for a failure worth trying again: the network, a timeout, HTTP 429 or 5xx."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        return status == 429 or status >= 500
    name = type(exc).__name__  # httpx's and requests' transport errors, without importing either
    return name in {"ConnectError", "ReadError", "WriteError", "RemoteProtocolError", "ReadTimeout", "WriteTimeout",
                    "ConnectTimeout", "PoolTimeout", "ConnectionError", "Timeout"}


def why(exc: BaseException) -> str:
    """An error on one line, its type first, cut at 300 characters (a server may send a page)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def retry(call: Callable[..., T], *args: Any, attempts: int = 3, pause: float = 0.5,
          sleep: Callable[[float], None] = time.sleep, **kwargs: Any) -> T:
    """``call(*args, **kwargs)``, tried up to ``attempts`` times while it fails with a :func:`transient`
    error, pausing ``pause`` seconds, then twice as long, and so on."""
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    for attempt in range(1, attempts + 1):
        try:
            return call(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - re-raised unless transient and attempts remain
            if attempt == attempts or not transient(exc):
                raise
            sleep(pause * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass
class Outcome:
    """What a write-back did, request by request (query ids)."""

    target: str  # "Phoenix project 'x' at URL" or "MLflow at URI"
    dry_run: bool = False
    written: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # no source trace id in the trace
    unknown: list[str] = field(default_factory=list)  # the server does not know the trace id
    failed: dict[str, str] = field(default_factory=dict)  # query id -> the error
    lines: list[str] = field(default_factory=list)  # what was (or, dry, would be) written

    @property
    def complete(self) -> bool:
        """True when every trace was written (or, dry, would be)."""
        return not (self.refused or self.unknown or self.failed)

    def summary(self) -> str:
        verb = "would write" if self.dry_run else "wrote"
        parts = [f"{verb} ragstage annotations for {len(self.written)} request(s) to {self.target}"]
        if self.refused:
            parts.append(f"{len(self.refused)} trace(s) refused: no source trace id in meta.ingest.trace_id "
                         f"(not read from a tracing server by `ragstage ingest`), e.g. {self.refused[0]!r}")
        if self.unknown:
            parts.append(f"{len(self.unknown)} trace(s) not written: the server has no trace with their id, "
                         f"e.g. {self.unknown[0]!r}")
        if self.failed:
            qid, error = next(iter(self.failed.items()))
            parts.append(f"{len(self.failed)} trace(s) not written after retries, e.g. {qid!r}: {error}")
        not_written = len(self.refused) + len(self.unknown) + len(self.failed)
        parts.append(f"{len(self.written)} written, {not_written} not written" if not self.dry_run
                     else f"{len(self.written)} to write, {not_written} that could not be")
        return "\n".join(parts)
