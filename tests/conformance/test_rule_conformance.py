"""Every interpreter of the rule tables gives every trace the outcome and the flags the rules mean.

As a measure run through several providers must give the same value, each interpreter (the
Python walk, the Python counting loops over records and over JSON lines, the Arrow columns, and
Spark) is given the same random traces (empty lists, repeated ids, nulls, refusals, service
failures, both flags; for the Arrow one also missing columns and dictionary-encoded ids) and must
agree with the meaning of the tables, read here straight from :data:`ragstage.rules.TESTS`.

A Spark job takes seconds, so Spark is given every example at once: the examples are drawn as for
the others, then all their traces go into one DataFrame (each trace a group of its own), counted
by Spark once for each ``require``; the local interpreters are checked example by example, so
hypothesis shrinks a failing one.
"""

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_sets import OPTIONAL, arrow_batch, random_traces

from ragstage import Trace
from ragstage.arrow_rules import COLUMN_TESTS, outcomes
from ragstage.attribution import outcome
from ragstage.python_rules import count_lines
from ragstage.python_rules_source import EXPRESSIONS, GOLD
from ragstage.rules import FLAG_COMBINATIONS, FLAG_RULES, FLAGS, RULES, TESTS, TEXT_TESTS, survives
from ragstage.tally import tally_of_rows, tally_records
from ragstage.trace import trace_line


def holds(test, trace, require, flags=()):
    """What ``test`` means on a trace, by the words of TESTS."""
    value = getattr(trace, test.field, None)
    gold = set(trace.gold)
    meaning = {
        "given": lambda: value is not None,
        "true": lambda: value is True,
        "false": lambda: value is False,
        "empty": lambda: not value,
        "lost": lambda: not survives(gold, value or (), require),
        "holds": lambda: bool(gold & set(value or ())),
        "some_false": lambda: bool(value) and not all(value),
        "flag": lambda: test.field in flags,
        "leaves_out": lambda: any(i not in getattr(trace, test.other) for i in value),
    }
    if test.kind in TEXT_TESTS:
        result = TEXT_TESTS[test.kind](value, getattr(trace, test.other) if test.other else None)
    else:
        result = meaning[test.kind]()
    return result != test.negate


def meant(trace, require):
    """The outcome and the flags the tables mean for a trace: every flag rule tried, the first rule that holds."""
    flags = tuple(dict.fromkeys(rule.outcome for rule in FLAG_RULES
                                if all(holds(t, trace, require) for t in rule.tests)))
    flags = next(c for c in FLAG_COMBINATIONS if set(c) == set(flags))
    rule = next(r for r in RULES if all(holds(t, trace, require, flags) for t in r.tests))
    return rule.outcome.value, flags


def _one(tally):
    """The (bucket, flags) of a tally of one trace."""
    (group,) = tally.buckets
    return _of_group(tally, group)


def _of_group(tally, group):
    """The (bucket, flags) of a group of one trace."""
    (bucket,) = tally.buckets[group]
    return bucket, tuple(name for name in FLAGS if tally.flags[group][name])


def python_walk(traces, require, dropped, dictionary):
    return [(stage.value, flags) for stage, flags in (outcome(t, require) for t in traces)]


def python_count_records(traces, require, dropped, dictionary):
    return [_one(tally_records([t], None, require)) for t in traces]


def python_count_lines(traces, require, dropped, dictionary):
    out = []
    for t in traces:
        rows = {}
        count_lines([[trace_line(t)]], rows, array("I").append, None, require == "any", [0])
        out.append(_one(tally_of_rows(rows)))
    return out


def arrow_columns(traces, require, dropped, dictionary):
    rule, flags = outcomes(arrow_batch(traces, dropped, dictionary), require)
    return [(RULES[r].outcome.value, FLAG_COMBINATIONS[f]) for r, f in zip(rule, flags)]


def spark_rows(cases, spark, folder):
    """Every case's traces in one Parquet file read by Spark, each trace a group of its own (its
    pipeline: the case's ``require``, the case and the trace), counted once per ``require``."""
    from pyspark.sql import functions as F

    from ragstage import spark as on_spark
    from ragstage.parquet import write_parquet

    name = lambda n, k: f"{cases[n][1]}:{n}:{k}"  # noqa: E731
    path = folder / "every_example.parquet"
    write_parquet(path, [t.replace(pipeline=name(n, k)) for n, (traces, _) in enumerate(cases)
                         for k, t in enumerate(traces)])
    df = spark.read.parquet(str(path))
    tallies = {require: on_spark.tally(df.where(F.col("pipeline").startswith(f"{require}:")), "pipeline", require)
               for require in ("any", "all")}
    return [[_of_group(tallies[require], name(n, k)) for k in range(len(traces))]
            for n, (traces, require) in enumerate(cases)]


INTERPRETERS = [python_walk, python_count_records, python_count_lines, arrow_columns, spark_rows]
#: The interpreters given every example at once (``(cases, spark, folder)``, cases ``(traces, require)``).
AT_ONCE = {spark_rows}


@st.composite
def reaching_the_answer(draw):
    """A random trace whose gold evidence survives every logged stage: the rules on the answer decide it."""
    trace = draw(random_traces())
    gold = list(trace.gold) or ["g1"]
    kept = lambda ids: None if ids is None else [*ids, *gold]  # noqa: E731
    return trace.replace(gold=gold, answerable=True, error=None, query_ok=draw(st.sampled_from([None, True])),
                         retrieved=kept(trace.retrieved), reranked=kept(trace.reranked), prompt=kept(trace.prompt))


TRACES = st.lists(random_traces() | reaching_the_answer(), min_size=1, max_size=12)


@pytest.mark.parametrize("interpreter", INTERPRETERS, ids=lambda f: f.__name__)
def test_every_interpreter_gives_each_trace_what_the_rules_mean(interpreter, request, tmp_path):
    at_once = []

    @settings(max_examples=300, deadline=None)
    @given(traces=TRACES, dropped=st.sets(st.sampled_from(OPTIONAL)),
           require=st.sampled_from(["any", "all"]), dictionary=st.booleans())
    def each_example(traces, dropped, require, dictionary):
        defaults = {name: getattr(Trace(query_id="x"), name) for name in dropped}
        traces = [t.replace(**defaults) for t in traces]  # what a file without those columns holds
        if interpreter in AT_ONCE:
            at_once.append((traces, require))
        else:
            assert interpreter(traces, require, dropped, dictionary) == [meant(t, require) for t in traces]

    each_example()
    if interpreter in AT_ONCE:
        got = interpreter(at_once, request.getfixturevalue("spark"), tmp_path)
        for (traces, require), outcomes in zip(at_once, got, strict=True):
            assert outcomes == [meant(t, require) for t in traces], traces


def test_every_kind_of_test_has_a_meaning_in_every_interpreter_and_the_table_ends_with_no_test():
    used = {t.kind for rule in (*RULES, *FLAG_RULES) for t in rule.tests}
    assert used == set(TESTS) == set(EXPRESSIONS) == set(COLUMN_TESTS) | set(TEXT_TESTS)
    assert RULES[-1].tests == () and all(rule.tests for rule in RULES[:-1])


def test_the_gold_ids_are_bound_afresh_for_every_trace():
    # In a counting loop the names of one trace's gold stay bound for the next: a single gold id
    # must not leave the previous trace's set (or its count) for a test to read.
    namespace = {"any_gold": False}
    for gold in (["a", "b"], ["c"]):
        namespace["rec"] = Trace(query_id="q", gold=gold)
        exec(GOLD, namespace)  # noqa: S102
    assert (namespace["gold"], namespace["single"], namespace["need"]) == (None, "c", 1)
