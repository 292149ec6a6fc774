"""Reader faults of issue 22, one test each: every one is an error naming file, line or row, and field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragstage.ingest.gold import LabelIndex, read_labels
from ragstage.ingest.spans import SpanError

REPO = Path(__file__).resolve().parents[1]
SPANS = REPO / "fixtures" / "ingest" / "langchain_spans.jsonl"
GOOD = REPO / "fixtures" / "incidents" / "batch.jsonl"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def _labels(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("line, field", [
    ('{"query_id": "a", "gold": false}', "gold"),
    ('{"query_id": "a", "gold": 0}', "gold"),
    ('{"query_id": "a", "gold": ""}', "gold"),
    ('{"query_id": "a", "gold_spans": false}', "gold_spans"),
    ('{"query_id": "a", "gold_spans": [{"id": ["d"], "start": 0, "end": 3}]}', "gold_spans"),
    ('{"query_id": "a", "gold_spans": [{"id": true, "start": 0, "end": 3}]}', "gold_spans"),
])
def test_label_values_are_never_coerced(tmp_path, line, field):
    """Before: `gold: false` or `0` became no gold, a span id ["d"] the text "['d']"."""
    path = _labels(tmp_path, '{"query_id": "ok", "gold": ["d"]}', line)
    with pytest.raises(SpanError) as info:
        read_labels(path)
    assert info.value.field == field and info.value.line == 2 and str(path) in str(info.value)


def test_null_gold_is_still_no_gold(tmp_path):
    (label,) = read_labels(_labels(tmp_path, '{"query_id": "a", "gold": null, "gold_spans": null}'))
    assert label.gold == () and label.gold_spans == ()


def test_a_label_given_twice_names_its_file_and_both_lines(tmp_path):
    """Before: "query_id 'a' labelled twice (lines 1 and 3)", with no file."""
    path = _labels(tmp_path, '{"query_id": "a", "gold": ["d"]}', '{"query_id": "b"}', '{"query_id": "a"}')
    with pytest.raises(SpanError) as info:
        LabelIndex(read_labels(path))
    assert str(info.value).startswith(f"{path}, line 3, field 'query_id'") and "(lines 1 and 3)" in str(info.value)
    run = _cli("ingest", "openinference", SPANS, "--labels", path, "--out", tmp_path / "t.jsonl")
    assert run.returncode == 2 and f"{path}, line 3, field 'query_id'" in run.stderr
