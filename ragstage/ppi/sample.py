"""The gold sample: which requests people label, drawn at random with a seed, and the file that records it.

A prediction-powered estimate is only as good as the randomness of its gold sample: a
hand-picked set (the requests someone found interesting) carries its own bias that nothing
corrects. So the draw is seeded and written down (:func:`draw`, :func:`write_sample`), together
with a digest of the requests it was drawn from, and the estimate (:mod:`ragstage.ppi.estimate`)
refuses gold rows that are not the drawn ones and a sample drawn from other traces.

The sample file is a JSON object: ``format``, ``seed``, ``n``, ``population`` (requests drawn
from), ``pipeline``, ``require``, ``ids_digest`` (SHA-256 of the population's sorted query ids),
``query_ids`` (the drawn ones, in the order drawn), ``by_bucket``, and with ``by_bucket`` the
``strata``: per silver bucket its ``population``, ``drawn`` and ``weight`` (its share of the
population). One pipeline per sample: the requests are paired by ``query_id`` and ``pipeline``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import orjson

from ..attribution import BUCKETS, diagnose
from ..formats import input_files, read_any

__all__ = ["FORMAT", "Request", "Sample", "read_requests", "ids_digest", "draw", "allocate", "write_sample",
           "read_sample", "sample_command", "add_sample_parser"]

FORMAT = "ragstage-gold-sample/1"


@dataclass(frozen=True)
class Request:
    """One request of a traces file: its key and the bucket its labels give it."""

    query_id: str
    pipeline: str
    bucket: str


@dataclass(frozen=True)
class Sample:
    """A drawn gold sample (see the module's docstring for the file's fields)."""

    seed: int
    n: int
    population: int
    pipeline: str
    require: str
    ids_digest: str
    query_ids: tuple[str, ...]
    by_bucket: bool = False
    strata: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT, "seed": self.seed, "n": self.n, "population": self.population,
                               "pipeline": self.pipeline, "require": self.require, "ids_digest": self.ids_digest,
                               "by_bucket": self.by_bucket, "query_ids": list(self.query_ids)}
        if self.by_bucket:
            out["strata"] = self.strata
        return out


def read_requests(path: str | Path, require: str = "any") -> list[Request]:
    """Every request of a traces file with its bucket; a repeated (query_id, pipeline) is an error
    naming the file and the id (a request counted twice would be drawn or labelled twice)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for trace in read_any(path):
        key = (trace.query_id, trace.pipeline)
        if key in seen:
            raise ValueError(f"{path}: query_id {trace.query_id!r} of pipeline {trace.pipeline!r} appears twice")
        seen.add(key)
        out.append(Request(trace.query_id, trace.pipeline, diagnose(trace, require).stage.value))
    if not out:
        raise ValueError(f"{path}: no traces")
    return out


def ids_digest(query_ids: Iterable[str]) -> str:
    """SHA-256 of the sorted query ids, one per line: the same requests give the same digest in any order."""
    h = hashlib.sha256()
    for query_id in sorted(query_ids):
        h.update(query_id.encode("utf-8") + b"\n")
    return "sha256:" + h.hexdigest()


def _one_pipeline(requests: Sequence[Request], path: str | Path) -> str:
    pipelines = sorted({r.pipeline for r in requests})
    if len(pipelines) > 1:
        raise ValueError(f"{path}: {len(pipelines)} pipelines ({', '.join(pipelines[:5])}); a gold sample is drawn "
                         "from one pipeline's requests: split the file by pipeline first")
    return pipelines[0]


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Gold labels per stratum: proportional to its size (largest remainders), at least 2 in every
    stratum (or all of it when smaller), so each stratum's variance can be estimated."""
    total = sum(sizes.values())
    floor = {k: min(2, v) for k, v in sizes.items()}
    if sum(floor.values()) > n:
        raise ValueError(f"--n {n} is too small for {len(sizes)} strata: each needs 2 gold labels "
                         f"({sum(floor.values())} in all)")
    if n > total:
        raise ValueError(f"--n {n} exceeds the {total} requests")
    share = {k: n * v / total for k, v in sizes.items()}
    out = {k: max(floor[k], min(sizes[k], math.floor(share[k]))) for k in sizes}
    # hand out what is left by the largest remainder, taking back from the largest where floors overshot
    while sum(out.values()) < n:
        k = max((k for k in sizes if out[k] < sizes[k]), key=lambda k: (share[k] - out[k], sizes[k]))
        out[k] += 1
    while sum(out.values()) > n:
        k = max((k for k in sizes if out[k] > floor[k]), key=lambda k: (out[k] - share[k], sizes[k]))
        out[k] -= 1
    return out


def draw(requests: Sequence[Request], n: int, seed: int, *, by_bucket: bool = False, require: str = "any",
         source: str | Path = "traces") -> Sample:
    """A seeded uniform random sample of ``n`` requests (without replacement), or with
    ``by_bucket`` a stratified one: each silver bucket a stratum, sizes from :func:`allocate`.

    The requests are sorted by query id first, so the file's order does not change the draw.
    """
    import numpy as np

    if isinstance(n, bool) or n < 2:
        raise ValueError(f"--n must be at least 2, got {n}")
    pipeline = _one_pipeline(requests, source)
    ordered = sorted(requests, key=lambda r: r.query_id)
    if n > len(ordered):
        raise ValueError(f"--n {n} exceeds the {len(ordered)} requests of {source}")
    rng = np.random.default_rng(seed)
    digest = ids_digest(r.query_id for r in ordered)
    if not by_bucket:
        picked = rng.choice(len(ordered), size=n, replace=False)
        return Sample(seed, n, len(ordered), pipeline, require, digest, tuple(ordered[i].query_id for i in picked))
    groups: dict[str, list[Request]] = {}
    for r in ordered:
        groups.setdefault(r.bucket, []).append(r)
    buckets = [b for b in BUCKETS if b in groups]
    sizes = allocate({b: len(groups[b]) for b in buckets}, n)
    drawn: list[str] = []
    strata = {}
    for b in buckets:
        picked = rng.choice(len(groups[b]), size=sizes[b], replace=False)
        drawn.extend(groups[b][i].query_id for i in picked)
        strata[b] = {"population": len(groups[b]), "drawn": sizes[b], "weight": len(groups[b]) / len(ordered)}
    return Sample(seed, n, len(ordered), pipeline, require, digest, tuple(drawn), True, strata)


def write_sample(sample: Sample, out: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """Write the sample file whole or not at all (:func:`ragstage.atomic.atomic_write_bytes`)."""
    from ..atomic import atomic_write_bytes

    return atomic_write_bytes(out, orjson.dumps(sample.to_json(), option=orjson.OPT_INDENT_2) + b"\n", inputs)


def _field(data: dict, name: str, kind: type | tuple[type, ...], path: str | Path) -> Any:
    if name not in data:
        raise ValueError(f"{path}: field '{name}': missing")
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{path}: field '{name}': expected {getattr(kind, '__name__', kind)}, "
                         f"got {type(value).__name__}")
    return value


def read_sample(path: str | Path) -> Sample:
    """Read and check a sample file; any fault is a ``ValueError`` naming the file and the field."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a JSON sample file ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a sample file holds a JSON object")
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: field 'format': expected {FORMAT!r}, got {data.get('format')!r}")
    ids = _field(data, "query_ids", list, path)
    for i, q in enumerate(ids):
        if not isinstance(q, str):
            raise ValueError(f"{path}: field 'query_ids', item {i}: expected a string, got {type(q).__name__}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: field 'query_ids': a query id is listed twice")
    n = _field(data, "n", int, path)
    if n != len(ids):
        raise ValueError(f"{path}: field 'n' is {n} but 'query_ids' lists {len(ids)}")
    by_bucket = _field(data, "by_bucket", bool, path)
    strata = _field(data, "strata", dict, path) if by_bucket else {}
    for bucket, s in strata.items():
        if bucket not in BUCKETS or not isinstance(s, dict) or not all(
                isinstance(s.get(k), int) and not isinstance(s.get(k), bool) for k in ("population", "drawn")):
            raise ValueError(f"{path}: field 'strata', stratum {bucket!r}: a known bucket with whole numbers "
                             "'population' and 'drawn'")
    if by_bucket and sum(s["drawn"] for s in strata.values()) != n:
        raise ValueError(f"{path}: field 'strata': the strata's 'drawn' add up to "
                         f"{sum(s['drawn'] for s in strata.values())}, not n = {n}")
    require = _field(data, "require", str, path)
    if require not in ("any", "all"):
        raise ValueError(f"{path}: field 'require': 'any' or 'all', got {require!r}")
    return Sample(_field(data, "seed", int, path), n, _field(data, "population", int, path),
                  _field(data, "pipeline", str, path), require, _field(data, "ids_digest", str, path), tuple(ids),
                  by_bucket, strata)


def sample_command(args: Any) -> int:
    """``ragstage sample``: draw, write (with ``--sheet``, the labelling sheet first: a candidate
    without text stops it before anything is written), and say what was drawn (on stderr)."""
    import sys

    requests = read_requests(args.silver, args.require)
    sample = draw(requests, args.n, args.seed, by_bucket=args.by_bucket, require=args.require, source=args.silver)
    if args.sheet:
        from ..judge.passages import read_passages
        from ..judge.sheet import write_sheet

        passages = read_passages(args.corpus or (), args.prompts or ())
        write_sheet(read_any(args.silver), sample, passages, args.sheet, args.depth)
    write_sample(sample, args.out, input_files(args.silver))
    how = f"in {len(sample.strata)} strata by silver bucket" if sample.by_bucket else "uniformly"
    print(f"drew {sample.n} of {sample.population} requests {how} (seed {sample.seed}) to {args.out}", file=sys.stderr)
    if args.sheet:
        print(f"labelling sheet of the {sample.n} drawn requests to {args.sheet}: fill it in, then "
              f"`ragstage judge sheet {args.sheet} --sample {args.out} --out LABELS`", file=sys.stderr)
    return 0


def add_sample_parser(sub: Any) -> None:
    """The ``sample`` command's arguments (registered by :mod:`ragstage.cli`)."""
    p = sub.add_parser("sample", help="draw a seeded random sample of requests to label with gold")
    p.add_argument("silver", metavar="SILVER_TRACES", help="traces of every request, labelled by a judge")
    p.add_argument("--n", type=int, required=True, help="how many requests to draw")
    p.add_argument("--seed", type=int, required=True, help="the random seed (recorded in the sample file)")
    p.add_argument("--by-bucket", action="store_true",
                   help="stratify by silver bucket (proportional, at least 2 per bucket); weights recorded")
    p.add_argument("--require", choices=["any", "all"], default="any", help="the buckets' convention (as attribute)")
    p.add_argument("--out", required=True, metavar="FILE", help="the sample file to write (JSON)")
    p.add_argument("--sheet", metavar="FILE", help="also write a labelling sheet of the drawn requests "
                   "(.csv for a spreadsheet, else JSON Lines); needs --corpus or --prompts for the passages' text")
    p.add_argument("--corpus", action="append", metavar="FILE",
                   help="JSON Lines of passages: _id (or id), text, optional title (a BEIR corpus.jsonl)")
    p.add_argument("--prompts", action="append", metavar="FILE", help="a ragstage run's prompts.jsonl")
    p.add_argument("--depth", type=int, default=None,
                   help="the sheet shows the first K candidates of each ranked list (default: all)")
    p.set_defaults(func=sample_command)
