"""The Python interpreter of the rule tables of :mod:`ragstage.rules`, and the counting loops built on it.

Written by :mod:`ragstage.python_rules_source` from the tables: do not edit; run
``python -m ragstage.python_rules_source`` after changing a rule, a test's expression or a loop.
A rule here is the chain of ``if`` its tests make; ``any_gold`` is True for ``require="any"``.
"""

# ruff: noqa: E501, E714

from zlib import adler32, crc32

from msgspec import DecodeError
from orjson import JSONDecodeError

from .fields import missing
from .rules import cites_outside, leaves_out, numeric_unmarked
from .trace import is_blank
from .typed_record import checked_meta, decode_plain_counted, record_of_line

__all__ = ["rule_of", "flags_of", "count_records", "count_lines"]


def rule_of(rec, found, any_gold):
    """The index in RULES of the rule that decides a checked trace; ``found``: its flags' mask."""
    gold_ids = rec.gold
    if len(gold_ids) == 1:
        gold, single, need = None, gold_ids[0], 1
    else:
        gold, single = frozenset(gold_ids), None
        need = 1 if any_gold else len(gold)
    if (rec.error is not None):
        return 0
    if (rec.answerable is False) and (rec.refused is True):
        return 1
    if (rec.answerable is False):
        return 2
    if (not rec.gold):
        return 3
    if (rec.query_ok is False):
        return 4
    if ((single not in rec.retrieved if single is not None else len(gold.intersection(rec.retrieved)) < need)):
        return 5
    if (rec.reranked is not None) and ((single not in rec.reranked if single is not None else len(gold.intersection(rec.reranked)) < need)):
        return 6
    if not (rec.prompt is not None):
        return 7
    if ((single not in rec.prompt if single is not None else len(gold.intersection(rec.prompt)) < need)) and (bool(rec.truncated) and (single in rec.truncated if single is not None else not gold.isdisjoint(rec.truncated))):
        return 8
    if ((single not in rec.prompt if single is not None else len(gold.intersection(rec.prompt)) < need)):
        return 9
    if (rec.refused is True):
        return 10
    if (rec.correct is True):
        return 11
    if not (rec.correct is not None) and (rec.answer_ids is not None) and (bool(rec.answer_ids) and (single in rec.answer_ids if single is not None else not gold.isdisjoint(rec.answer_ids))):
        return 12
    if not (rec.correct is not None) and not (rec.answer_ids is not None) and not (bool(rec.claims) and not all(rec.claims)) and not (rec.complete is False) and not (not rec.claims):
        return 13
    if not (rec.correct is not None) and not (rec.answer_ids is not None) and not (bool(rec.claims) and not all(rec.claims)) and not (rec.complete is False):
        return 14
    if (found & 1):
        return 15
    if (bool(rec.claims) and not all(rec.claims)):
        return 16
    if (rec.complete is False):
        return 17
    if not (not rec.answer_ids) and not (bool(rec.answer_ids) and (single in rec.answer_ids if single is not None else not gold.isdisjoint(rec.answer_ids))):
        return 18
    if not (not rec.claims):
        return 19
    if (found & 2):
        return 20
    if not (not rec.answer_ids):
        return 21
    return 22


def flags_of(rec):
    """The mask of FLAG_BITS of the flags of a checked trace."""
    found = 0
    if rec.answer or rec.answer_ids:
        if (rec.prompt is not None) and (rec.answer_ids is not None) and ((rec.answer_ids[0] not in rec.prompt if len(rec.answer_ids) == 1 else leaves_out(rec.answer_ids, rec.prompt))):
            found |= 1
        if not found & 1 and (rec.prompt is not None) and ('[' in rec.answer and cites_outside(rec.answer, rec.prompt)):
            found |= 1
        if not (rec.answer_ids is not None) and (numeric_unmarked(rec.answer)):
            found |= 2
    return found


def count_records(records, rows, append, group_of, any_gold):
    """Count checked traces into ``rows`` ({group: a row of count codes}), each key's CRC-32 and
    Adler-32 into ``append``; the group is ``rec.pipeline``, or ``group_of(rec)`` unless it is None."""
    for rec in records:
        key = f"{rec.query_id}\x00{rec.pipeline}".encode()
        append(crc32(key))
        append(adler32(key))
        gold_ids = rec.gold
        if len(gold_ids) == 1:
            gold, single, need = None, gold_ids[0], 1
        else:
            gold, single = frozenset(gold_ids), None
            need = 1 if any_gold else len(gold)
        found = 0
        if rec.answer or rec.answer_ids:
            if (rec.prompt is not None) and (rec.answer_ids is not None) and ((rec.answer_ids[0] not in rec.prompt if len(rec.answer_ids) == 1 else leaves_out(rec.answer_ids, rec.prompt))):
                found |= 1
            if not found & 1 and (rec.prompt is not None) and ('[' in rec.answer and cites_outside(rec.answer, rec.prompt)):
                found |= 1
            if not (rec.answer_ids is not None) and (numeric_unmarked(rec.answer)):
                found |= 2
        # decided: the count code of the bucket alone
        if (rec.error is not None):
            decided = 0
        elif (rec.answerable is False) and (rec.refused is True):
            decided = 32
        elif (rec.answerable is False):
            decided = 48
        elif (not rec.gold):
            decided = 16
        elif (rec.query_ok is False):
            decided = 64
        elif ((single not in rec.retrieved if single is not None else len(gold.intersection(rec.retrieved)) < need)):
            decided = 80
        elif (rec.reranked is not None) and ((single not in rec.reranked if single is not None else len(gold.intersection(rec.reranked)) < need)):
            decided = 96
        elif not (rec.prompt is not None):
            decided = 192
        elif ((single not in rec.prompt if single is not None else len(gold.intersection(rec.prompt)) < need)) and (bool(rec.truncated) and (single in rec.truncated if single is not None else not gold.isdisjoint(rec.truncated))):
            decided = 112
        elif ((single not in rec.prompt if single is not None else len(gold.intersection(rec.prompt)) < need)):
            decided = 112
        elif (rec.refused is True):
            decided = 128
        elif (rec.correct is True):
            decided = 160
        elif not (rec.correct is not None) and (rec.answer_ids is not None) and (bool(rec.answer_ids) and (single in rec.answer_ids if single is not None else not gold.isdisjoint(rec.answer_ids))):
            decided = 160
        elif not (rec.correct is not None) and not (rec.answer_ids is not None) and not (bool(rec.claims) and not all(rec.claims)) and not (rec.complete is False) and not (not rec.claims):
            decided = 176
        elif not (rec.correct is not None) and not (rec.answer_ids is not None) and not (bool(rec.claims) and not all(rec.claims)) and not (rec.complete is False):
            decided = 176
        elif (found & 1):
            decided = 128
        elif (bool(rec.claims) and not all(rec.claims)):
            decided = 128
        elif (rec.complete is False):
            decided = 128
        elif not (not rec.answer_ids) and not (bool(rec.answer_ids) and (single in rec.answer_ids if single is not None else not gold.isdisjoint(rec.answer_ids))):
            decided = 128
        elif not (not rec.claims):
            decided = 144
        elif (found & 2):
            decided = 128
        elif not (not rec.answer_ids):
            decided = 128
        else:
            decided = 128
        group = rec.pipeline if group_of is None else group_of(rec)
        row = rows.get(group)
        if row is None:
            row = rows[group] = [0] * 208
        # the count code of (bucket, flags, query judged, reranked), ragstage.count_key.count_code: a sum
        row[decided + found * 4 + (rec.query_ok is not None) * 2 + (rec.reranked is not None) * 1] += 1


def count_lines(blocks, rows, append, group_of, any_gold, read):
    """:func:`count_records` of the lines of ``blocks`` (lists of JSON lines), each decoded as by
    :func:`ragstage.typed_record.decode_record`; ``read[0]`` counts the lines taken, up to and including one
    that raised."""
    lines = 0
    try:
        for block in blocks:
            for line in block:
                lines += 1
                try:
                    try:
                        rec = decode_plain_counted(line)
                    except (DecodeError, RecursionError):  # not the plain types, not JSON, or nested too deep: the full check decides
                        rec = record_of_line(line)
                    else:
                        if rec.query_id is None:  # typed as nullable only so that the error is check_record's 'missing'
                            raise missing("query_id")
                        if rec.meta:
                            rec.meta = checked_meta(rec.meta)
                except JSONDecodeError:
                    if is_blank(line):
                        continue
                    raise
                key = f"{rec.query_id}\x00{rec.pipeline}".encode()
                append(crc32(key))
                append(adler32(key))
                gold_ids = rec.gold
                if len(gold_ids) == 1:
                    gold, single, need = None, gold_ids[0], 1
                else:
                    gold, single = frozenset(gold_ids), None
                    need = 1 if any_gold else len(gold)
                found = 0
                if rec.answer or rec.answer_ids:
                    if (rec.prompt is not None) and (rec.answer_ids is not None) and ((rec.answer_ids[0] not in rec.prompt if len(rec.answer_ids) == 1 else leaves_out(rec.answer_ids, rec.prompt))):
                        found |= 1
                    if not found & 1 and (rec.prompt is not None) and ('[' in rec.answer and cites_outside(rec.answer, rec.prompt)):
                        found |= 1
                    if not (rec.answer_ids is not None) and (numeric_unmarked(rec.answer)):
                        found |= 2
                # decided: the count code of the bucket alone
                if (rec.error is not None):
                    decided = 0
                elif (rec.answerable is False) and (rec.refused is True):
                    decided = 32
                elif (rec.answerable is False):
                    decided = 48
                elif (not rec.gold):
                    decided = 16
                elif (rec.query_ok is False):
                    decided = 64
                elif ((single not in rec.retrieved if single is not None else len(gold.intersection(rec.retrieved)) < need)):
                    decided = 80
                elif (rec.reranked is not None) and ((single not in rec.reranked if single is not None else len(gold.intersection(rec.reranked)) < need)):
                    decided = 96
                elif not (rec.prompt is not None):
                    decided = 192
                elif ((single not in rec.prompt if single is not None else len(gold.intersection(rec.prompt)) < need)) and (bool(rec.truncated) and (single in rec.truncated if single is not None else not gold.isdisjoint(rec.truncated))):
                    decided = 112
                elif ((single not in rec.prompt if single is not None else len(gold.intersection(rec.prompt)) < need)):
                    decided = 112
                elif (rec.refused is True):
                    decided = 128
                elif (rec.correct is True):
                    decided = 160
                elif not (rec.correct is not None) and (rec.answer_ids is not None) and (bool(rec.answer_ids) and (single in rec.answer_ids if single is not None else not gold.isdisjoint(rec.answer_ids))):
                    decided = 160
                elif not (rec.correct is not None) and not (rec.answer_ids is not None) and not (bool(rec.claims) and not all(rec.claims)) and not (rec.complete is False) and not (not rec.claims):
                    decided = 176
                elif not (rec.correct is not None) and not (rec.answer_ids is not None) and not (bool(rec.claims) and not all(rec.claims)) and not (rec.complete is False):
                    decided = 176
                elif (found & 1):
                    decided = 128
                elif (bool(rec.claims) and not all(rec.claims)):
                    decided = 128
                elif (rec.complete is False):
                    decided = 128
                elif not (not rec.answer_ids) and not (bool(rec.answer_ids) and (single in rec.answer_ids if single is not None else not gold.isdisjoint(rec.answer_ids))):
                    decided = 128
                elif not (not rec.claims):
                    decided = 144
                elif (found & 2):
                    decided = 128
                elif not (not rec.answer_ids):
                    decided = 128
                else:
                    decided = 128
                group = rec.pipeline if group_of is None else group_of(rec)
                row = rows.get(group)
                if row is None:
                    row = rows[group] = [0] * 208
                # the count code of (bucket, flags, query judged, reranked), ragstage.count_key.count_code: a sum
                row[decided + found * 4 + (rec.query_ok is not None) * 2 + (rec.reranked is not None) * 1] += 1
    finally:
        read[0] = lines
