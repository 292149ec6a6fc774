"""The regression gate: ``ragstage compare --gate`` through a subprocess, ``ragstage.gate`` and ``ragstage.testing``.

Each rule gets a pair of runs built to fail it and one built to pass it; the exit code, the
verdict line, the Markdown summary and the JUnit XML (validated against ``tests/junit.xsd``,
the testsuite/testcase/failure schema CI systems read) are checked on each.
"""

from __future__ import annotations

import html
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from repo_paths import JUNIT_XSD
from scipy.stats import binomtest

from ragstage import Trace, write_traces
from ragstage.atomic import OutputError, atomic_write_bytes
from ragstage.gate import CRITICAL, format_p, gate
from ragstage.report import compare
from ragstage.testing import assert_no_regression

XSD = JUNIT_XSD

# Fields that put a question (gold "d1") into a bucket, with or without a critical flag.
OUTCOMES = {
    "right": {"retrieved": ["d1"], "prompt": ["d1"], "answer_ids": ["d1"]},
    "retrieval": {"retrieved": ["d2"], "prompt": ["d2"], "answer_ids": ["d2"]},
    "fabricated": {"retrieved": ["d1"], "prompt": ["d1"], "answer": "Yes [3].", "correct": True},
    "refused": {"answerable": False, "refused": True, "gold": []},
    "missing_refusal": {"answerable": False, "refused": False, "gold": [], "answer": "Sure."},
    "unjudged": {"retrieved": ["d1"], "prompt": ["d1"]},
}


def trace(qid: str, outcome: str) -> Trace:
    fields = {"gold": ["d1"], "query": f"question {qid}", **OUTCOMES[outcome]}
    return Trace(query_id=qid, **fields)


def runs(*moves: tuple[str, str, int]) -> tuple[list[Trace], list[Trace]]:
    """Two runs from ``(outcome before, outcome after, how many questions)`` triples."""
    before, after = [], []
    for a, b, k in moves:
        for _ in range(k):
            qid = f"q{len(before):03d}"
            before.append(trace(qid, a))
            after.append(trace(qid, b))
    return before, after


def write_pair(tmp_path: Path, *moves: tuple[str, str, int]) -> tuple[str, str]:
    before, after = runs(*moves)
    a, b = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    write_traces(a, before)
    write_traces(b, after)
    return str(a), str(b)


def ragstage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *args], capture_output=True, text=True)


def validate_junit(path: Path) -> ET.Element:
    import xmlschema

    xmlschema.XMLSchema(str(XSD)).validate(str(path))
    return ET.parse(path).getroot()


def cases(root: ET.Element) -> dict[tuple[str, str], bool]:
    """``{(classname, name): failed}`` for every test case."""
    return {(c.get("classname"), c.get("name")): c.find("failure") is not None for c in root.iter("testcase")}


# Per rule: (moves, extra options, exit code, rule named in the verdict or None for a pass).
CASES = {
    "pass: 3 fixed, 2 broken": ([("retrieval", "right", 3), ("right", "retrieval", 2), ("right", "right", 5)],
                                [], 0, None),
    "McNemar: 0 fixed, 8 broken": ([("right", "retrieval", 8), ("right", "right", 4)], [], 1,
                                   "paired exact McNemar"),
    "McNemar at a stricter alpha passes": ([("right", "retrieval", 8), ("right", "right", 4)],
                                           ["--alpha", "0.001"], 0, None),
    "broken > fixed but not significant": ([("right", "retrieval", 2), ("right", "right", 4)], [], 0, None),
    "max broken: 3 > 2": ([("retrieval", "right", 5), ("right", "retrieval", 3)], ["--max-broken", "2"], 1,
                          "max broken"),
    "max broken: 3 <= 3": ([("retrieval", "right", 5), ("right", "retrieval", 3)], ["--max-broken", "3"], 0, None),
    "critical: a new fabricated citation": ([("right", "fabricated", 1), ("right", "right", 6)], [], 1, "critical"),
    "critical: a new missing refusal": ([("refused", "missing_refusal", 1), ("retrieval", "right", 3)], [], 1,
                                        "critical"),
    "critical: off": ([("right", "fabricated", 1), ("right", "right", 6)], ["--no-critical"], 0, None),
    "critical: already critical before": ([("fabricated", "fabricated", 2), ("right", "right", 3)], [], 0, None),
    "undecided questions are not broken": ([("right", "unjudged", 6), ("right", "right", 2)], [], 0, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gate_exit_code_verdict_markdown_and_junit(tmp_path, name):
    moves, options, code, rule = CASES[name]
    before, after = write_pair(tmp_path, *moves)
    summary, junit = tmp_path / "summary.md", tmp_path / "gate.xml"
    done = ragstage("compare", before, after, "--gate", "--summary", str(summary), "--junit", str(junit), *options)
    assert done.returncode == code, done.stdout + done.stderr
    verdict = done.stdout.strip().splitlines()[-1]
    b, a = runs(*moves)
    result = compare(b, a)
    counts = f"{result.fixed} fixed, {result.broken} broken, p = {format_p(result.p_value)}"
    if rule is None:
        assert verdict.startswith(f"PASS: not significantly worse: {counts}")
    else:
        assert verdict.startswith(f"FAIL ({rule}): ") and counts in verdict
    assert done.stderr == ""

    markdown = summary.read_text()
    assert markdown.startswith(f"## ragstage gate: {'PASS' if code == 0 else 'FAIL'}\n")
    rendered = MarkdownIt("commonmark").enable("table").render(markdown)
    assert f"<strong>{html.escape(verdict, quote=False)}</strong>" in rendered
    assert f"| {result.n} | {result.both_right + result.broken} | {result.both_right + result.fixed} | " \
           f"{result.fixed} | {result.broken} | {result.undecided} | {format_p(result.p_value)} |" in markdown

    root = validate_junit(junit)
    listed = cases(root)
    assert listed[("ragstage.gate", "verdict")] is (code == 1)
    broken = {(f"q{i:03d}") for i, (x, y) in enumerate(zip(b, a)) if _right(x) and not _right(y)
              and "unjudged" not in (_bucket(x), _bucket(y))}
    fixed = {(f"q{i:03d}") for i, (x, y) in enumerate(zip(b, a)) if not _right(x) and _right(y)}
    assert {n for (c, n), failed in listed.items() if c == "ragstage.gate.broken" and failed} == broken
    assert {n for (c, n), failed in listed.items() if c == "ragstage.gate.fixed" and not failed} == fixed
    assert len(broken) == result.broken and len(fixed) == result.fixed
    for q in sorted(broken)[:50]:
        assert f"`{q}`" in markdown
    suite = root.find("testsuite")
    assert int(suite.get("tests")) == len(listed)
    assert int(suite.get("failures")) == sum(listed.values())


def _bucket(t: Trace) -> str:
    from ragstage import diagnose

    return diagnose(t).stage.value


def _right(t: Trace) -> bool:
    return _bucket(t) in {"none", "correct_refusal"}


def test_gate_json_format_keeps_stdout_json_and_puts_the_verdict_on_stderr(tmp_path):
    import json

    before, after = write_pair(tmp_path, ("right", "retrieval", 8))
    done = ragstage("compare", before, after, "--gate", "--format", "json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == json.loads(ragstage("compare", before, after, "--format", "json").stdout)
    assert done.stderr.startswith("FAIL (paired exact McNemar)")


def test_without_gate_the_summary_is_written_and_the_exit_code_stays_0(tmp_path):
    before, after = write_pair(tmp_path, ("right", "retrieval", 8))
    done = ragstage("compare", before, after, "--summary", str(tmp_path / "s.md"))
    assert done.returncode == 0
    assert (tmp_path / "s.md").read_text().startswith("## ragstage gate: FAIL")


def test_gate_bad_input_is_compare_s_one_line_error(tmp_path):
    good = tmp_path / "good.jsonl"
    write_traces(good, [trace("q1", "right")])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q1", "gold": "d1"}\n')
    other = tmp_path / "other.jsonl"
    write_traces(other, [trace("q2", "right")])
    for pair in ((str(bad), str(good)), (str(good), str(other)), (str(good), str(tmp_path / "missing.jsonl"))):
        plain = ragstage("compare", *pair)
        gated = ragstage("compare", *pair, "--gate", "--junit", str(tmp_path / "j.xml"))
        assert plain.returncode == gated.returncode == 2
        assert gated.stderr == plain.stderr and len(gated.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "j.xml").exists()


@pytest.mark.parametrize("option", [["--alpha", "0"], ["--alpha", "1.5"], ["--max-broken", "-1"]])
def test_gate_bad_thresholds_exit_2(tmp_path, option):
    before, after = write_pair(tmp_path, ("right", "right", 2))
    done = ragstage("compare", before, after, "--gate", *option)
    assert done.returncode == 2 and "error" in done.stderr


def test_junit_escapes_question_ids(tmp_path):
    weird = 'q<&>"\u00e9'
    result = gate([trace(weird, "right")], [trace(weird, "retrieval")], max_broken=0)
    path = tmp_path / "j.xml"
    path.write_text(result.to_junit(), encoding="utf-8")
    assert ("ragstage.gate.broken", weird) in cases(validate_junit(path))
    assert "`q<&>\"\u00e9`" in result.to_markdown()


def test_markdown_lists_at_most_50_questions():
    before, after = runs(("right", "retrieval", 70), ("retrieval", "right", 60))
    markdown = gate(before, after).to_markdown()
    assert "### Broken (70)" in markdown and "... and 20 more" in markdown


# -- ragstage.testing -----------------------------------------------------------------------------
def test_assert_no_regression_passes_and_returns_the_result():
    before, after = runs(("retrieval", "right", 3), ("right", "retrieval", 2))
    result = assert_no_regression(before, after)
    assert result.passed and result.verdict.line == "PASS: not significantly worse: 3 fixed, 2 broken, p = 1.0"


def test_assert_no_regression_lists_the_broken_questions(tmp_path):
    before, after = write_pair(tmp_path, ("right", "retrieval", 8), ("right", "right", 2))
    with pytest.raises(AssertionError) as info:
        assert_no_regression(before, after)
    message = str(info.value)
    assert message.startswith("FAIL (paired exact McNemar)")
    assert "broken questions (8):" in message
    for i in range(8):
        assert f"q{i:03d}: none -> retrieval" in message


@pytest.mark.parametrize("kwargs,rule", [({"max_broken": 1}, "max broken"), ({}, "critical")])
def test_assert_no_regression_same_rules_as_the_command(kwargs, rule):
    before, after = runs(("right", "fabricated", 1), ("right", "retrieval", 2), ("retrieval", "right", 3))
    with pytest.raises(AssertionError, match=rf"^FAIL \({rule}\)"):
        assert_no_regression(before, after, **kwargs)


def test_assert_no_regression_bad_input_raises_compare_s_error():
    with pytest.raises(ValueError, match="different questions"):
        assert_no_regression([trace("a", "right")], [trace("b", "right")])


# -- the rules as properties ---------------------------------------------------------------------
moves_strategy = st.lists(st.tuples(st.sampled_from(sorted(OUTCOMES)), st.sampled_from(sorted(OUTCOMES))),
                          min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(moves=moves_strategy, alpha=st.sampled_from([0.01, 0.05, 0.2]),
       max_broken=st.one_of(st.none(), st.integers(0, 10)))
def test_verdict_is_the_three_rules(moves, alpha, max_broken):
    before, after = runs(*((a, b, 1) for a, b in moves))
    result = gate(before, after, alpha=alpha, max_broken=max_broken)
    c = compare(before, after)
    assert result.paired.comparison.to_dict() == c.to_dict()
    assert len(result.paired.broken) == c.broken and len(result.paired.fixed) == c.fixed
    if c.fixed + c.broken:
        assert c.p_value == pytest.approx(binomtest(c.broken, c.fixed + c.broken, 0.5).pvalue, abs=1e-12)
    critical_of = {"fabricated": "fabricated_citation", "missing_refusal": "missing_refusal"}
    newly = [i for i, (a, b) in enumerate(moves) if critical_of.get(b) not in (None, critical_of.get(a))]
    expected = {"paired exact McNemar": c.broken > c.fixed and c.p_value <= alpha,
                "max broken": max_broken is not None and c.broken > max_broken,
                "critical": bool(newly)}
    assert result.verdict.failed == tuple(r for r, fired in expected.items() if fired)
    assert result.passed == (not any(expected.values()))
    assert len(result.paired.newly_critical) == len(newly)
    assert all(set(p.newly_critical) <= CRITICAL for p in result.paired.pairs)


# -- atomic writes -----------------------------------------------------------------------------------
def test_an_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.html"
    target.write_text("old")
    atomic_write_bytes(target, "new")
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["out.html"]


def test_a_failed_write_keeps_the_earlier_file(tmp_path, monkeypatch):
    import os

    target = tmp_path / "gate.xml"
    target.write_text("earlier")

    def boom(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, "later")
    assert target.read_text() == "earlier" and [p.name for p in tmp_path.iterdir()] == ["gate.xml"]


def test_an_atomic_write_into_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(OutputError, match="no such folder"):
        atomic_write_bytes(tmp_path / "nowhere" / "x.md", "text")


@pytest.mark.parametrize("broken_xml", [
    '<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase name="q1"/></testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="1" failures="1" errors="0"><testcase name="q" classname="c">'
    '<failure/><failure/></testcase></testsuite></testsuites>',
    '<testsuites><testsuite name="s" tests="x" failures="0" errors="0"/></testsuites>',
])
def test_the_schema_rejects_what_ci_systems_cannot_read(tmp_path, broken_xml):
    import xmlschema

    path = tmp_path / "bad.xml"
    path.write_text(broken_xml)
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        validate_junit(path)


def test_the_gate_never_writes_its_summary_over_an_input(tmp_path):
    before, after = write_pair(tmp_path, ("right", "retrieval", 8))
    kept = Path(before).read_bytes()
    for option in ("--summary", "--junit"):
        done = ragstage("compare", before, after, "--gate", option, before)
        assert done.returncode == 2 and "must not be the input" in done.stderr
        assert Path(before).read_bytes() == kept
