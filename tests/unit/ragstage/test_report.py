"""Attribution tables, the conditional funnel and paired comparisons."""

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_sets import TRACE_FILES, synthetic

from ragstage import (
    Trace,
    attribution_table,
    compare,
    funnel,
    funnel_from_counts,
    read_traces,
    table_from_counts,
    wilson,
)
from ragstage.report import comparison_table, count_buckets, flag_table, funnel_from_tally, stage_entrants
from ragstage.stats import holm

# The published MiniLM + cross-encoder SciFact run (original prompt), as bucket counts.
PUBLISHED = {"minilm+ce": {"retrieval": 22, "reranking": 31, "prompt_assembly": 40, "generation": 100, "none": 107}}


def test_table_rows_in_bucket_order_with_wilson_intervals():
    table = table_from_counts(PUBLISHED)
    assert list(table.columns) == ["group", "stage", "count", "n", "share", "low", "high"]
    assert list(table.stage) == ["retrieval", "reranking", "prompt_assembly", "generation", "none"]
    assert set(table.n) == {300}
    row = table.set_index("stage").loc["none"]
    assert (row["low"], row["high"]) == wilson(107, 300)


def test_empty_buckets_on_request():
    table = table_from_counts(PUBLISHED, empty=True)
    assert len(table) == 13
    zero = table.set_index("stage").loc["unjudged"]
    assert zero["count"] == 0 and zero["low"] == 0.0 and zero["high"] > 0


def test_unknown_bucket_is_rejected():
    with pytest.raises(ValueError, match="unknown bucket"):
        table_from_counts({"x": {"retreival": 3}})


def test_funnel_uses_each_stages_own_denominator():
    f = funnel_from_counts(PUBLISHED).set_index("stage")
    assert list(f.index) == ["retrieval", "reranking", "prompt_assembly", "generation"]
    assert (f.loc["reranking", "entered"], f.loc["reranking", "survived"]) == (278, 247)
    assert (f.loc["prompt_assembly", "entered"], f.loc["prompt_assembly", "survived"]) == (247, 207)
    assert (f.loc["generation", "entered"], f.loc["generation", "survived"]) == (207, 107)
    assert round(1 - f.loc["prompt_assembly", "rate"], 2) == 0.16  # lost to the token budget
    assert (round(f.loc["generation", "low"], 2), round(f.loc["generation", "high"], 2)) == (0.45, 0.58)


def test_funnel_leaves_unanswerable_and_failed_questions_out():
    counts = {"g": {"endpoint_unavailable": 5, "correct_refusal": 3, "unjudged": 2, "retrieval": 1, "none": 4}}
    f = funnel_from_counts(counts).set_index("stage")
    # unjudged answers survived every stage up to the prompt; only generation leaves them out
    assert f.loc["retrieval", "entered"] == 7 and f.loc["prompt_assembly", "survived"] == 6
    assert f.loc["generation", "entered"] == 4


def test_unlogged_prompts_leave_the_later_denominators_only():
    counts = {"g": {"retrieval": 2, "reranking": 1, "not_logged": 30, "prompt_assembly": 1, "none": 6}}
    f = funnel_from_counts(counts).set_index("stage")
    assert (f.loc["reranking", "entered"], f.loc["reranking", "survived"]) == (38, 37)
    assert (f.loc["prompt_assembly", "entered"], f.loc["prompt_assembly", "survived"]) == (7, 6)
    assert f.loc["generation", "entered"] == 6


def test_unmeasured_query_understanding_is_not_a_pass():
    traces = [Trace(query_id=str(i), gold=["g"], retrieved=["g"], prompt=["g"], answer_ids=["g"],
                    query_ok=None if i < 6 else i != 9) for i in range(10)]
    f = funnel(traces).set_index("stage")
    assert (f.loc["query_understanding", "entered"], f.loc["query_understanding", "survived"]) == (4, 3)
    assert f.loc["retrieval", "entered"] == 9
    with pytest.raises(ValueError, match="measured query understanding"):
        funnel_from_counts({"g": {"query_understanding": 3, "none": 5}}, qu_measured={"g": 2})


def test_flag_table_counts_every_flag_with_an_interval():
    traces = [Trace(query_id="a", gold=["g"], retrieved=["g"], prompt=["g"], answer_ids=["g", "z"]),
              Trace(query_id="b", gold=["g"], retrieved=["g"], prompt=["g"], answer="Leave is 20 weeks.",
                    correct=True),
              Trace(query_id="c", gold=["g"], retrieved=["g"], prompt=["g"], answer_ids=["g"])]
    table = flag_table(traces).set_index("flag")
    assert list(table.index) == ["fabricated_citation", "numeric_unmarked"]
    assert table.loc["fabricated_citation", "count"] == 1 and table.loc["fabricated_citation", "n"] == 3
    assert table.loc["fabricated_citation", "severity"] == "critical"
    assert (table.loc["numeric_unmarked", "low"], table.loc["numeric_unmarked", "high"]) == wilson(1, 3)


def test_funnel_from_traces_skips_unmeasured_stages(five_cases):
    f = funnel(five_cases)
    assert list(f.stage) == ["retrieval", "reranking", "prompt_assembly", "generation"]
    no_rerank = [t.replace(reranked=None, pipeline="flat") for t in five_cases]
    assert "reranking" not in set(funnel(no_rerank).stage)
    with_qu = [five_cases[0].replace(query_ok=False, query_id="Q")] + five_cases
    assert funnel(with_qu).stage.iloc[0] == "query_understanding"


def test_attribution_table_groups_by_field_or_meta(five_cases, four_logs):
    traces = five_cases + four_logs
    by_pipeline = attribution_table(traces)
    assert set(by_pipeline.group) == {"hand", "support-bot"}
    assert attribution_table(traces, by=None).n.unique().tolist() == [9]
    tagged = [t.replace(meta={"kind": "rare" if i % 2 else "broad"}) for i, t in enumerate(traces)]
    assert set(attribution_table(tagged, by="kind").group) == {"rare", "broad"}
    assert count_buckets(traces, by="model")["(none)"]["none"] == 1


def test_compare_counts_fixed_broken_and_migrations(judged_run):
    before = judged_run(["none", "generation", "generation", "retrieval", "none"], "before")
    after = judged_run(["none", "none", "retrieval", "retrieval", "generation"], "after")
    result = compare(before, after)
    assert (result.n, result.fixed, result.broken, result.both_right, result.both_wrong) == (5, 1, 1, 1, 2)
    assert result.p_value == 1.0
    assert result.migration.loc["generation", "retrieval"] == 1
    assert result.to_dict() == {"n": 5, "fixed": 1, "broken": 1, "undecided": 0, "p_value": 1.0, "migration": {
        "retrieval": {"retrieval": 1}, "generation": {"retrieval": 1, "none": 1},
        "none": {"generation": 1, "none": 1}}}


def test_compare_refuses_different_question_sets_unless_intersect(judged_run):
    before = judged_run(["none", "generation"], "b")
    after = judged_run(["none", "none", "none"], "a")
    with pytest.raises(ValueError, match="1 only after"):
        compare(before, after)
    result = compare(before, after, intersect=True)
    assert result.n == 2 and result.fixed == 1 and result.only_after == ("q2",)


def test_compare_rejects_a_file_with_two_pipelines(judged_run):
    both = judged_run(["none"], "x") + judged_run(["none"], "y")
    with pytest.raises(ValueError, match="appears twice"):
        compare(both, judged_run(["none"], "z"))


def test_unknown_outcomes_are_undecided_not_broken(judged_run):
    before = judged_run(["none", "none", "generation", "unjudged"], "b")
    after = judged_run(["not_logged", "none", "not_logged", "none"], "a")
    result = compare(before, after)
    assert (result.fixed, result.broken, result.both_right, result.both_wrong, result.undecided) == (0, 0, 1, 0, 3)
    assert result.migration.loc["none", "not_logged"] == 1 and result.migration.loc["unjudged", "none"] == 1


OUTCOMES = st.sampled_from(["none", "generation", "retrieval", "not_logged", "unjudged"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(OUTCOMES, OUTCOMES), min_size=1, max_size=40))
def test_compare_cells_add_up_and_migration_matches(judged_run, pairs):
    result = compare(judged_run([a for a, _ in pairs], "b"), judged_run([b for _, b in pairs], "a"))
    assert (result.fixed + result.broken + result.both_right + result.both_wrong + result.undecided
            == result.n == len(pairs))
    assert int(result.migration.to_numpy().sum()) == len(pairs)
    unknown = {"not_logged", "unjudged"}
    assert result.fixed == sum(1 for a, b in pairs if a not in unknown | {"none"} and b == "none")
    assert result.undecided == sum(1 for a, b in pairs if a in unknown or b in unknown)
    assert isinstance(result.migration, pd.DataFrame)


def test_comparison_table_one_row_per_pair(judged_run):
    runs = {"a": judged_run(["none", "generation", "generation", "none"], "a"),
            "b": judged_run(["none", "none", "none", "generation"], "b"),
            "c": judged_run(["none", "none", "none", "none"], "c")}
    table = comparison_table(runs, [("a", "b"), ("b", "c")])
    assert table.to_dict("records")[0] == {"before": "a", "after": "b", "n": 4, "right_before": 2, "right_after": 3,
                                           "fixed": 2, "broken": 1, "p_value": 1.0}
    assert table.iloc[1]["fixed"] == 1 and table.iloc[1]["broken"] == 0
    with pytest.raises(ValueError, match="no run labelled 'z'"):
        comparison_table(runs, [("a", "z")])
    assert "p_holm" not in table


def test_comparison_table_holm_column_on_request(judged_run):
    runs = {"a": judged_run(["generation"] * 8 + ["none"] * 4, "a"),
            "b": judged_run(["none"] * 8 + ["none"] * 4, "b"),
            "c": judged_run(["none"] * 7 + ["generation"] + ["none"] * 4, "c")}
    table = comparison_table(runs, [("a", "b"), ("b", "c"), ("a", "c")], adjust="holm")
    assert list(table.columns)[-2:] == ["p_value", "p_holm"]
    assert list(table.p_holm) == holm(list(table.p_value))
    assert table.p_holm.iloc[0] == pytest.approx(3 * table.p_value.iloc[0])  # the smallest p, times 3
    with pytest.raises(ValueError, match="adjust"):
        comparison_table(runs, [("a", "b")], adjust="bonferroni")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["any", "all"]))
def test_stage_entrants_are_the_funnels_denominators(seed, require):
    from ragstage.simulate import simulate_pipeline

    rates = {"query_understanding": 0.8, "retrieval": 0.7, "reranking": 0.8, "prompt_assembly": 0.8,
             "generation": 0.6}
    traces = list(simulate_pipeline(60, rates, seed=seed).traces)
    # unmeasured query understanding, unlogged prompts, unjudged answers and a refusal case
    traces = [t.replace(query_ok=None) if i % 5 == 0 else t for i, t in enumerate(traces)]
    traces = [t.replace(prompt=None) if i % 7 == 0 else t for i, t in enumerate(traces)]
    traces = [t.replace(correct=None, answer_ids=None, claims=None) if i % 9 == 0 else t
              for i, t in enumerate(traces)]
    traces.append(Trace(query_id="u", answerable=False, refused=True))
    table = funnel(traces, by=None, require=require).set_index("stage")
    for stage, row in table.iterrows():
        entrants = stage_entrants(traces, stage, require)
        assert len(entrants) == row["entered"], stage


def test_stage_entrants_rejects_an_unknown_stage():
    with pytest.raises(ValueError, match="unknown stage"):
        stage_entrants([], "reranker")


def test_cli_rows_are_the_notebook_tables(four_logs):
    from ragstage.report import count_flags, flag_table_from_counts
    from ragstage.rows import bucket_rows, flag_rows

    counts = count_buckets(four_logs)
    assert [tuple(r) for r in table_from_counts(counts, empty=True).itertuples(index=False)] == \
        bucket_rows(counts, empty=True)
    flags, totals = count_flags(four_logs)
    assert [tuple(r) for r in flag_table_from_counts(flags, totals).itertuples(index=False)] == flag_rows(flags, totals)


@pytest.mark.parametrize("name", TRACE_FILES)
def test_the_funnel_of_a_files_counts_is_the_funnel_of_its_traces(name):
    from ragstage.fixtures import fixtures_dir
    from ragstage.trace_files import count_files

    path = fixtures_dir() / name
    for by in ("pipeline", None):
        counted = funnel_from_tally(count_files([path], by=by))
        assert counted.equals(funnel(read_traces(path), by=by))


def test_the_funnel_from_counts_of_synthetic_traces_matches_the_walk(tmp_path):
    from ragstage import write_traces
    from ragstage.trace_files import count_files

    traces = synthetic(400, seed=3)
    write_traces(tmp_path / "t.jsonl", traces)
    assert funnel_from_tally(count_files([tmp_path / "t.jsonl"])).equals(funnel(traces))
