"""``ragstage.run_labels``: who labelled a run's traces, and the note ``compare`` prints for a judge's."""

from __future__ import annotations

import pytest
from judged_runs import JUDGE, trace

from ragstage.run_labels import LabelCounter, RunLabels, judge_note, require_gold, run_labels


def test_run_labels_counts_each_judge_and_people():
    other = {**JUDGE, "judge": "second", "model": "m2"}
    traces = ([trace(f"a{i}", True, "p", JUDGE) for i in range(3)] + [trace(f"b{i}", True, "p", other)
                                                                        for i in range(2)]
              + [trace("c", True, "p"), trace("d", True, "p", {"by": "people"})])
    labels = run_labels(traces, "run.jsonl")
    assert labels.traces == 7 and labels.judged == 5
    assert labels.judges == {"stand-in, model labelled-stand-in, prompt evidence-v1": 3,
                             "second, model m2, prompt evidence-v1": 2}
    assert labels.describe() == ("run.jsonl: labelled by a judge (stand-in, model labelled-stand-in, prompt "
                                 "evidence-v1: 3; second, model m2, prompt evidence-v1: 2) on 5 of 7 traces")


@pytest.mark.parametrize("labels", [{"by": "robot"}, {"judge": "x"}, "judge", ["judge"]])
def test_run_labels_refuses_labels_that_are_neither_a_judge_s_nor_people_s(labels):
    with pytest.raises(ValueError, match=r"^run.jsonl: query_id 'q\\\\n1': field meta\['labels'\]\['by'\]"):
        run_labels([trace("q\n1", True, "p", labels)], "run.jsonl")


def test_judge_note_names_the_judge_and_the_count_and_is_none_for_people():
    assert judge_note(RunLabels("r", 4, {})) is None
    note = judge_note(RunLabels("r\x1b", 4, {"j\n, model m, prompt p": 4}))
    assert note.startswith("note: r\\x1b: labelled by a judge (j\\n, model m, prompt p) on 4 of 4 traces: its fixed, "
                           "broken and p are the judge's")
    assert "\n" not in note and "--gold-sample-before" in note


@pytest.mark.parametrize("judged_count, gold, sample, match", [
    (10, None, None, "would pass or fail on the judge's errors; give this run its gold sample: --gold-sample-after"),
    (10, "g", None, "give this run its gold sample"),
    (0, "g", "s", "is labelled by people, not by a judge: --gold-sample-after"),
    (4, "g", "s", "the other 6 by people: a run is labelled one way"),
])
def test_require_gold_refuses(judged_count, gold, sample, match):
    labels = run_labels([trace(f"q{i}", True, "p", JUDGE if i < judged_count else None) for i in range(10)], "R")
    with pytest.raises(ValueError, match=match):
        require_gold(labels, gold, sample, "after")


def test_require_gold_says_whether_the_run_needs_its_sample():
    judged_run = run_labels([trace("q", True, "p", JUDGE)], "R")
    people = run_labels([trace("q", True, "p")], "R")
    assert require_gold(judged_run, "g", "s", "before") is True
    assert require_gold(people, None, None, "before") is False


def test_label_counter_counts_what_streams_through_it_unchanged():
    traces = [trace("a", True, "p", JUDGE), trace("b", False, "p")]
    counter = LabelCounter("run.jsonl")
    assert list(counter.watch(iter(traces))) == traces
    assert counter.result() == run_labels(traces, "run.jsonl") == RunLabels(
        "run.jsonl", 2, {"stand-in, model labelled-stand-in, prompt evidence-v1": 1})
