"""Writes :mod:`ragstage.python_rules`, the Python interpreter of the rule tables, as plain source.

The tables of :mod:`ragstage.rules` are written out once, here, as a chain of ``if`` over a
trace's attributes, and the chain is placed in the functions that run it: the first-match walk
(:func:`~ragstage.python_rules.rule_of`), the flags (:func:`~ragstage.python_rules.flags_of`) and the
two counting loops, over records and over the lines of a JSON Lines file. Written into the loops,
the walk costs no call per rule or per trace (about a fifth of a line's instructions), and the
module is ordinary source: its tracebacks show its lines, and a reader can open it.

``python -m ragstage.python_rules_source`` rewrites ``ragstage/python_rules.py``;
``tests/conformance/test_python_rules_source.py`` checks that the committed module is what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from .count_key import CODES, count_code
from .rules import BUCKETS, FLAG_BITS, FLAG_RULES, RULES, Rule, Test

__all__ = ["EXPRESSIONS", "GOLD", "source", "main"]

#: How the Python interpreter writes each kind of test (:data:`~ragstage.rules.TESTS`), as an
#: expression over ``rec`` (the checked trace), the gold ids as the walk holds them (``single``:
#: the one gold id, else None; ``gold``: the set of distinct gold ids when there is not exactly
#: one, else None; ``need``: how many of them a stage must keep) and ``found`` (the flag mask).
EXPRESSIONS: dict[str, str] = {
    "given": "rec.{f} is not None",
    "true": "rec.{f} is True",
    "false": "rec.{f} is False",
    "empty": "not rec.{f}",
    "lost": "(single not in rec.{f} if single is not None else len(gold.intersection(rec.{f})) < need)",
    "holds": "bool(rec.{f}) and (single in rec.{f} if single is not None else not gold.isdisjoint(rec.{f}))",
    "some_false": "bool(rec.{f}) and not all(rec.{f})",
    "flag": "found & {bit}",
    "leaves_out": "(rec.{f}[0] not in rec.{o} if len(rec.{f}) == 1 else leaves_out(rec.{f}, rec.{o}))",
    "cites_outside": "'[' in rec.{f} and cites_outside(rec.{f}, rec.{o})",  # no "[", no marker: no call
    "numeric_unmarked": "numeric_unmarked(rec.{f})",
}

#: The gold ids as the tests read them, bound on every path for every trace: with one gold id
#: (the usual case) it is tested by membership, with no set built.
GOLD = """\
gold_ids = rec.gold
if len(gold_ids) == 1:
    gold, single, need = None, gold_ids[0], 1
else:
    gold, single = frozenset(gold_ids), None
    need = 1 if any_gold else len(gold)"""

#: One line decoded into ``rec`` by the steps of :func:`ragstage.typed_record.decode_record`, a blank line
#: skipped and any other line that is not JSON an error.
_DECODE = """\
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
    raise"""

_HEAD = '''\
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
'''


def _indent(text: str, depth: int) -> str:
    return "\n".join(" " * (4 * depth) + line if line else line for line in text.splitlines())


def _expression(test: Test) -> str:
    expr = EXPRESSIONS[test.kind].format(f=test.field, o=test.other, bit=FLAG_BITS.get(test.field, 0))
    return f"not ({expr})" if test.negate else f"({expr})"


def _all(tests: tuple[Test, ...]) -> str:
    return " and ".join(map(_expression, tests))


def _flags() -> str:
    """``found``: the mask of the flags whose rules hold (only an answer with text or ids can
    carry one: every flag rule reads a non-empty answer or answer id)."""
    lines = ["found = 0", "if rec.answer or rec.answer_ids:"]
    set_before = 0  # the bits an earlier row can have set: a flag found makes its later rows moot
    for rule in FLAG_RULES:
        bit = FLAG_BITS[rule.outcome]
        unset = [f"not found & {bit}"] if set_before & bit else []
        lines += [f"    if {' and '.join([*unset, _all(rule.tests)])}:", f"        found |= {bit}"]
        set_before |= bit
    return "\n".join(lines)


def _first_match(value: Callable[[int, Rule], str], returns: bool) -> str:
    """The walk down :data:`~ragstage.rules.RULES`: for the first rule whose tests hold, ``return`` (or
    assign to ``decided``) ``value(index, rule)``."""
    if RULES[-1].tests or not all(rule.tests for rule in RULES[:-1]):
        raise ValueError("the last rule, and it alone, must have no test: every trace gets a bucket")
    lines = []
    for i, rule in enumerate(RULES):
        act = f"return {value(i, rule)}" if returns else f"decided = {value(i, rule)}"
        if not rule.tests:
            lines += [act] if returns else ["else:", f"    {act}"]
        else:
            lines += [f"{'if' if returns or i == 0 else 'elif'} {_all(rule.tests)}:", f"    {act}"]
    return "\n".join(lines)


def _count() -> str:
    """The counting of one checked trace ``rec``: its key's digest pair into ``append``, one into its
    group's row of codes (:mod:`ragstage.count_key`)."""
    bucket = {rule.outcome: BUCKETS.index(rule.outcome.value) for rule in RULES}
    return "\n".join([
        'key = f"{rec.query_id}\\x00{rec.pipeline}".encode()',
        "append(crc32(key))",
        "append(adler32(key))",
        GOLD,
        _flags(),
        "# decided: the count code of the bucket alone",
        _first_match(lambda i, rule: str(count_code(bucket[rule.outcome], 0, 0, 0)), returns=False),
        "group = rec.pipeline if group_of is None else group_of(rec)",
        "row = rows.get(group)",
        "if row is None:",
        f"    row = rows[group] = [0] * {CODES}",
        "# the count code of (bucket, flags, query judged, reranked), ragstage.count_key.count_code: a sum",
        f"row[decided + found * {count_code(0, 1, 0, 0)} + (rec.query_ok is not None) * {count_code(0, 0, 1, 0)}"
        f" + (rec.reranked is not None) * {count_code(0, 0, 0, 1)}] += 1",
    ])


def source() -> str:
    """The text of ``ragstage/python_rules.py``."""
    return "\n".join([
        _HEAD,
        "",
        "def rule_of(rec, found, any_gold):",
        '    """The index in RULES of the rule that decides a checked trace; ``found``: its flags\' mask."""',
        _indent(GOLD, 1),
        _indent(_first_match(lambda i, rule: str(i), returns=True), 1),
        "",
        "",
        "def flags_of(rec):",
        '    """The mask of FLAG_BITS of the flags of a checked trace."""',
        _indent(_flags(), 1),
        "    return found",
        "",
        "",
        "def count_records(records, rows, append, group_of, any_gold):",
        '    """Count checked traces into ``rows`` ({group: a row of count codes}), each key\'s CRC-32 and',
        "    Adler-32 into ``append``; the group is ``rec.pipeline``, or ``group_of(rec)`` unless it is None.\"\"\"",
        "    for rec in records:",
        _indent(_count(), 2),
        "",
        "",
        "def count_lines(blocks, rows, append, group_of, any_gold, read):",
        '    """:func:`count_records` of the lines of ``blocks`` (lists of JSON lines), each decoded as by',
        "    :func:`ragstage.typed_record.decode_record`; ``read[0]`` counts the lines taken, up to and including one",
        '    that raised."""',
        "    lines = 0",
        "    try:",
        "        for block in blocks:",
        "            for line in block:",
        "                lines += 1",
        _indent(_DECODE, 4),
        _indent(_count(), 4),
        "    finally:",
        "        read[0] = lines",
        "",
    ])


def main() -> int:
    """Rewrite ``ragstage/python_rules.py`` (``--check``: exit 1 if it differs instead)."""
    target = Path(__file__).with_name("python_rules.py")
    text = source()
    if "--check" in sys.argv[1:]:
        if target.read_text() == text:
            return 0
        print(f"{target} is not what the rule tables give: run python -m ragstage.python_rules_source",
              file=sys.stderr)
        return 1
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
