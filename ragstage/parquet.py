"""Traces as Parquet: the Arrow schema, reading by row group, writing, and counting on every core.

A team whose traces live in a lake should not have to export JSON Lines. A Parquet row is a
trace: each column holds one field of :data:`ragstage.fields.FIELDS` (a null is a JSON
null, so ``gold`` may not be null, exactly as in a JSON line), and every row goes through
the same checks (:func:`~ragstage.fields.check_row`, or the plain-type fast path, see
:func:`batch_records`) as a JSON line, and the same rules: a count (:func:`count_parquet`) runs
the rule table over the columns of each plain batch (:mod:`ragstage.arrow_rules`), and walks any
other batch row by row (:func:`~ragstage.tally.tally_records`). Errors name the file, the row
(1-based, within the file) and the field.

The schema written by :func:`write_parquet` (``ragstage convert``) is :data:`SCHEMA`, built
from the rows of :data:`~ragstage.fields.FIELDS`: ids
as ``list<string>``, the scores and sections of ranked entries in columns of their own
(``retrieved_scores``, ``retrieved_sections``, ``reranked_scores``, ``reranked_sections``),
``error`` as ``struct<stage, message>``, ``meta`` as JSON text. A file may hold any subset
of these columns; a missing column is a field absent from every trace.

pyarrow is imported with this module only: ``import ragstage`` does not load it.
"""

from __future__ import annotations

import os
from array import array
from itertools import chain, repeat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from .arrow_rules import count_batch
from .atomic import atomic_output
from .errors import TraceError
from .fields import COLUMNS, FIELDS, RANKED_PARTS, FirstSeen, check_columns, check_record, check_row
from .parallel_count import PartCount, count_parts
from .rules import check_require
from .tally import Tally, count_rows, plain_group
from .trace import Trace, load_meta_text
from .typed_record import Record, as_record

__all__ = ["SCHEMA", "batch_records", "checked_rows", "parquet_files", "read_parquet_records", "read_parquet",
           "write_parquet", "count_parquet"]

T = TypeVar("T")


def _arrow_type(column: str) -> pa.DataType:
    if column in FIELDS:
        return FIELDS[column].kind.arrow(pa)
    return RANKED_PARTS[column.rpartition("_")[2]](pa)


#: The Arrow schema of a trace, in the documented field order (from :data:`ragstage.fields.FIELDS`).
SCHEMA = pa.schema([(column, _arrow_type(column)) for column in COLUMNS])
_PARTS = frozenset(COLUMNS) - set(FIELDS)  # the scores and sections of ranked lists
_FOLDED = {*_PARTS, "meta"}  # columns that need _check's work before check_record
# Columns no rule reads: skipped when their type and null counts already prove every value valid.
_UNREAD = ("query", "model", "prompt_version", "timestamp")
# A column that is null on every row of a batch, where null is allowed, is left out of the batch.
_DROPPABLE = frozenset(name for name, f in FIELDS.items() if f.nullable) | _PARTS
# A column whose Arrow type is its field's plain type holds only values the check takes as is
# (nulls aside): a batch of such columns is turned into records without a per-row check.
_FAST_COLUMNS = {name: (f.kind.arrow(pa), f.nullable) for name, f in FIELDS.items() if f.kind.arrow_plain}
# The lists of ids, which a count reads as dictionary-encoded strings: plain for the rules too.
_ID_COLUMNS = tuple(name for name, (kind, _) in _FAST_COLUMNS.items() if kind == pa.list_(pa.string()))
_ID_DICTIONARY = pa.list_(pa.dictionary(pa.int32(), pa.string()))
_ROWS_PER_GROUP = 131_072
_BATCH = 8_192  # rows turned into Python objects at a time: a few MB, whatever the row group's size
_COUNT_BATCH = 16_384  # rows a count reads at a time: Arrow memory only, a few MB, for the rules over columns
_SKIPPED_BYTES = 4 << 20  # bytes of a skipped column's text checked at a time
_DEFAULT_PIPELINE = FIELDS["pipeline"].default


def parquet_files(path: str | Path) -> list[Path]:
    """The Parquet files of a path: the file itself, or a folder's ``*.parquet`` files (recursively, sorted)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
        strays = sorted(p for p in path.rglob("*.jsonl*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))
        if strays:  # traces a folder reader would silently leave out
            raise TraceError("a JSON Lines file inside a Parquet folder: read it on its own, or move it out",
                             path=str(strays[0]))
        if not files:
            raise TraceError("no .parquet files in this folder", path=str(path))
        return files
    if not path.is_file():
        raise TraceError("cannot open: No such file or directory", path=str(path))
    return [path]


def _open(path: Path, read_dictionary: Iterable[str] | None = None) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path, read_dictionary=read_dictionary)
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"unreadable Parquet file ({exc})", path=str(path)) from None


def _columns(pf: pq.ParquetFile, path: Path, by: str | None, every: bool) -> list[str]:
    """The columns to read: every trace column, less (unless ``every``) those no rule reads
    whose values the file's schema and statistics prove valid (those fields keep their defaults)."""
    schema = pf.schema_arrow
    try:
        check_columns(schema.names)
    except TraceError as exc:
        raise TraceError(exc.detail, path=str(path), field=exc.field, unit="row") from None
    keep = []
    for name in schema.names:
        if not every and name in _UNREAD and name != by and pa.types.is_string(schema.field(name).type) and (
                FIELDS[name].nullable or _no_nulls(pf, name)):
            continue
        keep.append(name)
    return keep


def _no_nulls(pf: pq.ParquetFile, name: str) -> bool:
    """Whether the file's statistics prove a top-level (not nested) column free of nulls."""
    meta = pf.metadata
    leaf = next((i for i in range(meta.num_columns) if meta.schema.column(i).path == name), None)
    if leaf is None:
        return False
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(leaf).statistics
        if stats is None or not stats.has_null_count or stats.null_count:
            return False
    return True


def _drop_null_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Leave out a column that is null on every row of the batch where null is allowed: that is
    the field's default, the same as a JSON line without it, and costs nothing to convert."""
    names = batch.schema.names
    drop = [i for i, name in enumerate(names) if name in _DROPPABLE and batch.column(i).null_count == batch.num_rows]
    for i in reversed(drop):
        batch = batch.remove_column(i)
    return batch


def _records(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """The raw trace objects of a batch: each row's columns, as a JSON line would decode them."""
    names = batch.schema.names
    values = {name: batch.column(i).to_pylist() for i, name in enumerate(names)}
    if "meta" in values:
        values["meta"] = [None if m is None else _meta(m) for m in values["meta"]]
    keys = list(values)
    return [dict(zip(keys, row)) for row in zip(*values.values())]


def checked_rows(batch: pa.RecordBatch) -> Iterator[dict[str, Any]]:
    """Each row of a batch, checked and normalised (:func:`~ragstage.fields.check_row`), or its TraceError."""
    batch = _drop_null_columns(batch)
    check = _check if _FOLDED.intersection(batch.schema.names) else check_record
    return map(check, _records(batch))


def _plain(batch: pa.RecordBatch) -> bool:
    """Whether every value of the batch is one its field's check takes as is."""
    if "query_id" not in batch.schema.names:
        return False  # check_record names the missing field
    for name, column in zip(batch.schema.names, batch.columns):
        kind, nullable = _FAST_COLUMNS.get(name, (None, False))
        if column.type == _ID_DICTIONARY and name in _ID_COLUMNS:
            if column.values.dictionary.null_count:
                return False
        elif column.type != kind:
            return False
        if not nullable and column.null_count:
            return False
        if pa.types.is_list(kind) and column.values.null_count:  # a null id inside a list
            return False
    return True


def batch_records(batch: pa.RecordBatch) -> Iterator[Record]:
    """The checked :class:`~ragstage.typed_record.Record` of each row of a batch, in order.

    When every column holds only values its check takes as is, the records are built
    straight from the columns; otherwise each row goes through the full check, which
    converts it or raises the :class:`TraceError` naming the field.
    """
    batch = _drop_null_columns(batch)
    if not _plain(batch):
        return map(as_record, checked_rows(batch))
    present = dict(zip(batch.schema.names, batch.columns))
    columns = [present[name].to_pylist() if name in present else iter(dict, None) if name == "meta"
               else repeat(f.default) for name, f in FIELDS.items()]
    return map(Record, *columns)


class _BadMeta(str):
    """meta text that is not JSON: reported as a bad ``meta`` field by :func:`_check`."""


def _meta(text: str) -> Any:
    try:
        return load_meta_text(text)
    except orjson.JSONDecodeError:
        return _BadMeta(text)


def _check(raw: dict[str, Any]) -> dict[str, Any]:
    if type(raw.get("meta")) is _BadMeta:
        raise TraceError(f"expected JSON text of an object, got {raw['meta']!r:.60}", field="meta")
    return check_row(raw)


def _groups(path: str | Path) -> list[tuple[Path, int]]:
    return [(f, g) for f in parquet_files(path) for g in range(_open(f).num_row_groups)]


def _id_leaves(pf: pq.ParquetFile) -> list[str]:
    """The Parquet leaf paths (``gold.list.element``, or as the writer named them) of the file's
    id columns typed ``list<string>``."""
    schema, arrow = pf.metadata.schema, pf.schema_arrow
    plain = {name for name in _ID_COLUMNS if arrow.get_field_index(name) >= 0
             and arrow.field(name).type == pa.list_(pa.string())}
    return [schema.column(i).path for i in range(len(schema)) if schema.column(i).path.split(".")[0] in plain]


def _group_records(groups: Iterable[tuple[Path, int]], by: str | None, every: bool,
                   convert: Callable[[pa.RecordBatch], Iterator[T]], batch_size: int = _BATCH,
                   ids_as_dictionary: bool = False) -> Iterator[tuple[str, int, Iterator[T]]]:
    """For each row group: its file, the row before its first, and its rows through ``convert``
    (``ids_as_dictionary``: the ``list<string>`` id columns read dictionary-encoded, so that only
    a row group's distinct ids are decoded into strings)."""
    current: tuple[Path, pq.ParquetFile, list[str], list[int]] | None = None
    for file, g in groups:
        if current is None or current[0] != file:
            pf = _open(file)
            if ids_as_dictionary:
                pf = _open(file, _id_leaves(pf))
            sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
            current = (file, pf, _columns(pf, file, by, every), [sum(sizes[:i]) for i in range(len(sizes))])
        _, pf, columns, starts = current
        yield str(file), starts[g], _rows(str(file), pf, g, columns, starts[g], convert, batch_size)


def _check_text(table: pa.Table | pa.RecordBatch, file: str, first_row: int) -> None:
    """Every text value of the columns is valid UTF-8 (checked in C; the row found only on a fault).

    Run on the columns a count skips too, so a corrupt text column fails ``attribute`` exactly
    as it fails ``compare``, naming the row and the field.
    """
    for name, column in zip(table.schema.names, table.columns):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            for i in range(len(column)):
                try:
                    column[i].as_py()
                except UnicodeDecodeError:
                    raise TraceError("invalid UTF-8 text", path=file, line=first_row + i + 1, field=name,
                                     unit="row") from None
            raise


def _rows(file: str, pf: pq.ParquetFile, group: int, columns: list[str], row: int,
          convert: Callable[[pa.RecordBatch], Iterator[T]], batch_size: int) -> Iterator[T]:
    """The rows of one row group through ``convert``, batch by batch; ``convert`` may count a
    batch itself and yield nothing for it (the rows are numbered by batch, not by what it yields)."""
    try:
        skipped = [name for name in pf.schema_arrow.names if name not in columns]
        if skipped:  # checked a few megabytes at a time, whatever the texts' size: never a whole column in memory
            at = row
            rows = _rows_in(pf, group, skipped, _SKIPPED_BYTES, batch_size)
            for batch in pf.iter_batches(batch_size=rows, row_groups=[group], columns=skipped):
                _check_text(batch, file, at)
                at += batch.num_rows
        for batch in pf.iter_batches(batch_size=batch_size, row_groups=[group], columns=columns):
            _check_text(batch, file, row)
            rows, at = convert(batch), row
            while True:
                try:
                    rec = next(rows)
                except StopIteration:
                    break
                except TraceError as exc:
                    raise TraceError(exc.detail, path=file, line=at + 1, field=exc.field, unit="row") from None
                at += 1
                yield rec
            row += batch.num_rows
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"unreadable row group {group} ({exc})", path=file, line=row + 1, unit="row") from None


def _rows_in(pf: pq.ParquetFile, group: int, names: list[str], size: int, most: int) -> int:
    """How many rows of a row group's columns ``names`` hold about ``size`` bytes (at most ``most``),
    from the sizes the file's metadata gives."""
    meta = pf.metadata.row_group(group)
    top = {meta.column(i).path_in_schema.split(".")[0]: i for i in range(meta.num_columns)}
    width = sum(meta.column(top[name]).total_uncompressed_size for name in names if name in top)
    return max(1, min(most, size * meta.num_rows // max(width, 1)))


def read_parquet_records(path: str | Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """``(file, row, normalised record)`` for every row, streamed one row group at a time.

    No duplicate check here: see :func:`count_parquet` and :func:`read_parquet`.
    """
    for file, start, records in _group_records(_groups(path), None, True, checked_rows):
        for row, rec in enumerate(records, start=start + 1):
            yield file, row, rec


def _key_columns(files: list[Path]) -> Iterator[tuple[str, int, str, str]]:
    for file in files:
        pf = _open(file)
        columns = [c for c in ("query_id", "pipeline") if c in pf.schema_arrow.names]
        row = 0
        for batch in pf.iter_batches(columns=columns):
            ids = batch.column(0).to_pylist()
            pipes = batch.column(1).to_pylist() if len(columns) == 2 else [_DEFAULT_PIPELINE] * batch.num_rows
            for query_id, pipeline in zip(ids, pipes):
                row += 1
                yield str(file), row, str(query_id), pipeline


def read_parquet(path: str | Path) -> Iterator[Trace]:
    """Stream :class:`~ragstage.trace.Trace` objects from a Parquet file or folder.

    A duplicate (``query_id``, ``pipeline``) within the file or folder is an error, as in a
    JSON Lines file.
    """
    seen = FirstSeen("row")
    for file, row, rec in read_parquet_records(path):
        repeated = seen.repeat(file, row, rec["query_id"], rec["pipeline"])
        if repeated:
            raise TraceError(repeated, path=file, line=row, field="query_id", unit="row")
        yield Trace.from_checked(rec)


def _column_value(name: str, value: Any) -> Any:
    if name == "meta":
        return orjson.dumps(value).decode() if value else None
    return list(value) if isinstance(value, tuple) else value


def write_parquet(path: str | Path, records: Iterable[dict[str, Any] | Trace],
                  rows_per_group: int = _ROWS_PER_GROUP, inputs: Iterable[str | Path] = ()) -> int:
    """Write traces (Trace objects or normalised records) with :data:`SCHEMA`; returns the count.

    Whole or not at all, as :func:`ragstage.trace.write_traces`; ``inputs`` are refused as ``path``.
    """
    names = SCHEMA.names
    n = 0
    with atomic_output(path, inputs) as tmp, pq.ParquetWriter(tmp, SCHEMA, compression="zstd") as writer:
        columns: dict[str, list[Any]] = {name: [] for name in names}
        for item in records:
            rec = vars(item) if isinstance(item, Trace) else item
            for name in names:
                columns[name].append(_column_value(name, rec[name]))
            n += 1
            if len(columns["query_id"]) == rows_per_group:
                writer.write_table(pa.table(columns, schema=SCHEMA), row_group_size=rows_per_group)
                columns = {name: [] for name in names}
        if columns["query_id"] or n == 0:
            writer.write_table(pa.table(columns, schema=SCHEMA), row_group_size=rows_per_group)
    return n


def _count_groups(groups: list[tuple[Path, int]], by: str | None, require: str) -> PartCount:
    """Count row groups: a plain batch by the rules over its columns (when the group is a column
    read), any other checked and walked row by row, a few thousand rows at a time."""
    out = PartCount()
    digests, pairs = array("q"), array("I")
    by_columns = plain_group(by)

    def convert(batch: pa.RecordBatch) -> Iterator[Record]:
        batch = _drop_null_columns(batch)
        if by_columns and _plain(batch):
            count_batch(batch, by, require, out.rows, digests)
            return iter(())
        return chain.from_iterable(batch_records(batch.slice(i, _BATCH)) for i in range(0, batch.num_rows, _BATCH))

    try:
        groups_rows = _group_records(groups, by, False, convert, _COUNT_BATCH, by_columns)
        count_rows(chain.from_iterable(rows for _, _, rows in groups_rows), out.rows, by, require, pairs)
    except TraceError as exc:  # _rows located it: path, row and field
        out.error = exc
    out.digests, out.pairs = digests.tobytes(), pairs.tobytes()
    return out


def count_parquet(path: str | Path, by: str | None = "pipeline", require: str = "any",
                  workers: int | None = None) -> Tally:
    """Bucket and flag counts per group for a Parquet file or folder, row groups split over workers.

    Duplicate keys are checked over the whole file or folder (one table), as digests; a
    suspect digest is confirmed on the keys with a second read of two columns. The cycle
    collector is paused in the process that counts, while it counts (see :mod:`ragstage.collector`).
    """
    check_require(require)
    files = parquet_files(path)
    groups = _groups(path)
    parts = max(1, min(workers or os.cpu_count() or 1, len(groups)))
    shares = [groups[i * len(groups) // parts:(i + 1) * len(groups) // parts] for i in range(parts)]
    return count_parts(_count_groups, [(share, by, require) for share in shares], str(path), "row",
                       lambda: _key_columns(files))
