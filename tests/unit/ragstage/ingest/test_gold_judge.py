"""The ``judge`` field of a labels line: checked, kept, never mixed with people's lines in one file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.ingest.gold import NO_RELEVANT, JudgeInfo, read_labels
from ragstage.ingest.spans import SpanError

JUDGE = {"name": "j", "model": "m", "prompt": "p", "prompt_sha256": "s"}


def _write(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_judge_line_is_read_with_its_judge(tmp_path: Path) -> None:
    (label,) = read_labels(_write(tmp_path, [{"query_id": "1", "gold": ["d"], "judge": JUDGE}]))
    assert label.judge == JudgeInfo("j", "m", "p", "s") and label.targets == ("d",)
    assert label.judge.meta() == {"by": "judge", "judge": "j", "model": "m", "prompt": "p", "prompt_sha256": "s"}


def test_a_judge_label_without_gold_points_at_no_relevant_candidate(tmp_path: Path) -> None:
    labels = read_labels(_write(tmp_path, [{"query_id": "1", "gold": [], "judge": JUDGE},
                                           {"query_id": "2", "answerable": False, "judge": JUDGE}]))
    assert [label.targets for label in labels] == [(NO_RELEVANT,), ()]


def test_a_person_label_without_gold_stays_without_target(tmp_path: Path) -> None:
    (label,) = read_labels(_write(tmp_path, [{"query_id": "1", "gold": []}]))
    assert label.judge is None and label.targets == ()


def test_mixing_judge_and_people_lines_is_refused_at_the_first_odd_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"query_id": "1", "gold": ["d"], "judge": JUDGE}, {"query_id": "2", "gold": ["d"]},
                             {"query_id": "3", "gold": ["d"]}])
    with pytest.raises(SpanError) as err:
        read_labels(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, "judge")


@pytest.mark.parametrize("judge", [{"name": "j"}, {**JUDGE, "extra": "x"}, {**JUDGE, "model": ""}, "j",
                                   {**JUDGE, "prompt": 3}])
def test_a_malformed_judge_names_the_line_and_the_field(tmp_path: Path, judge) -> None:
    with pytest.raises(SpanError) as err:
        read_labels(_write(tmp_path, [{"query_id": "1", "gold": ["d"], "judge": judge}]))
    assert (err.value.line, err.value.field) == (1, "judge")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(st.sampled_from("abc"), max_size=2)), min_size=1, max_size=6))
def test_a_file_is_read_exactly_when_its_lines_are_of_one_kind(tmp_path_factory, lines) -> None:
    rows = [{"query_id": str(i), "gold": gold, **({"judge": JUDGE} if by_judge else {})}
            for i, (by_judge, gold) in enumerate(lines)]
    path = _write(tmp_path_factory.mktemp("mix"), rows)
    if len({by_judge for by_judge, _ in lines}) == 1:
        assert [label.judge is not None for label in read_labels(path)] == [b for b, _ in lines]
    else:
        with pytest.raises(SpanError, match="not both"):
            read_labels(path)
