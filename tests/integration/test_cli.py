"""The console script, run as a user runs it: in a subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragstage import Trace, write_traces
from ragstage.fixtures import fixture_path

FIVE = str(fixture_path("five_cases", "cases.jsonl"))
INCIDENTS = str(fixture_path("incidents", "four_logs.jsonl"))


def ragstage(*args, check=True):
    done = subprocess.run([sys.executable, "-m", "ragstage.cli", *args], capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_attribute_json_has_exactly_the_documented_keys():
    rows = json.loads(ragstage("attribute", FIVE, INCIDENTS, "--format", "json").stdout)
    assert all(set(r) == {"group", "stage", "count", "n", "share", "low", "high"} for r in rows)
    hand = {r["stage"]: r for r in rows if r["group"] == "hand"}
    assert set(hand) == {"retrieval", "reranking", "prompt_assembly", "generation", "none"}
    assert hand["none"]["count"] == 1 and hand["none"]["n"] == 5
    assert hand["none"]["low"] == pytest.approx(0.0362, abs=1e-4)


def test_attribute_table_and_csv():
    table = ragstage("attribute", INCIDENTS).stdout.splitlines()
    assert table[0].split() == ["group", "stage", "count", "n", "share", "low", "high"]
    assert table[1].split()[:4] == ["support-bot", "retrieval", "1", "4"]
    csv_lines = ragstage("attribute", INCIDENTS, "--format", "csv", "--by", "none").stdout.splitlines()
    assert csv_lines[0] == "group,stage,count,n,share,low,high"
    assert csv_lines[1].startswith("all,retrieval,1,4,0.25,")


def test_attribute_flags_counts_flags_per_group_with_intervals(tmp_path):
    path = tmp_path / "flags.jsonl"
    write_traces(path, [
        Trace(query_id="a", gold=["g"], retrieved=["g"], prompt=["g"], answer_ids=["g", "z"]),  # right, fabricated
        Trace(query_id="b", gold=["g"], retrieved=["g"], prompt=["g"], answer="It is 20 weeks.", correct=False),
        Trace(query_id="c", gold=["g"], retrieved=["g"], prompt=["g"], answer="ID: 42", answer_ids=["g"]),
    ])
    rows = json.loads(ragstage("attribute", str(path), "--flags", "--format", "json").stdout)
    assert [(r["flag"], r["severity"], r["count"], r["n"]) for r in rows] == [
        ("fabricated_citation", "critical", 1, 3), ("numeric_unmarked", "medium", 1, 3)]
    assert rows[0]["low"] == pytest.approx(0.0615, abs=1e-4)
    table = ragstage("attribute", str(path), "--flags").stdout.splitlines()
    assert table[0].split() == ["group", "flag", "severity", "count", "n", "share", "low", "high"]
    # the default output keeps its documented keys
    default = json.loads(ragstage("attribute", str(path), "--format", "json").stdout)
    assert all(set(r) == {"group", "stage", "count", "n", "share", "low", "high"} for r in default)


def test_attribute_require_all(tmp_path):
    path = tmp_path / "two.jsonl"
    write_traces(path, [Trace(query_id="q", gold=["a", "b"], retrieved=["a"], prompt=["a"], correct=True)])
    any_rows = json.loads(ragstage("attribute", str(path), "--format", "json").stdout)
    all_rows = json.loads(ragstage("attribute", str(path), "--format", "json", "--require", "all").stdout)
    assert [r["stage"] for r in any_rows] == ["none"] and [r["stage"] for r in all_rows] == ["retrieval"]


@pytest.mark.parametrize("content, expected", [
    ('{"query_id": "a"}\n{"query_id": "b", "promt": []}\n', "line 2, field 'promt': unknown field"),
    ('{"query_id": "a"}\nnot json\n', "line 2: invalid JSON"),
    ('{"gold": ["x"]}\n', "line 1, field 'query_id': missing"),
    ('{"query_id": "a", "gold": "d1"}\n', "line 1, field 'gold': expected a list of ids"),
    ('{"query_id": "a"}\n{"query_id": "a"}\n', "line 2, field 'query_id': duplicate query_id 'a'"),
])
def test_attribute_bad_input_is_one_line_and_exit_2(tmp_path, content, expected):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    done = ragstage("attribute", str(path), check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"{path}, {expected}" in done.stderr


def test_attribute_missing_file_exit_2(tmp_path):
    done = ragstage("attribute", str(tmp_path / "nope.jsonl"), check=False)
    assert done.returncode == 2 and "nope.jsonl" in done.stderr and "Traceback" not in done.stderr


def test_bad_option_exit_2():
    done = ragstage("attribute", FIVE, "--format", "xml", check=False)
    assert done.returncode == 2 and "invalid choice" in done.stderr


@pytest.fixture
def make_run(judged_run):
    """Write a judged run (``{query_id: bucket}``) to a file; returns its path as text."""
    def write(path: Path, outcomes: dict[str, str]) -> str:
        write_traces(path, judged_run(outcomes))
        return str(path)
    return write


def test_compare_json(tmp_path, make_run):
    before = make_run(tmp_path / "b.jsonl", {"q1": "generation", "q2": "generation", "q3": "none"})
    after = make_run(tmp_path / "a.jsonl", {"q1": "none", "q2": "none", "q3": "none"})
    out = json.loads(ragstage("compare", before, after, "--format", "json").stdout)
    assert set(out) == {"n", "fixed", "broken", "undecided", "p_value", "migration"}
    assert (out["n"], out["fixed"], out["broken"]) == (3, 2, 0)
    assert out["p_value"] == pytest.approx(0.5)
    assert out["migration"] == {"generation": {"none": 2}, "none": {"none": 1}}


def test_compare_table_and_intersect(tmp_path, make_run):
    before = make_run(tmp_path / "b.jsonl", {"q1": "generation", "q2": "none"})
    after = make_run(tmp_path / "a.jsonl", {"q1": "none", "q2": "none", "q9": "generation"})
    done = ragstage("compare", before, after, check=False)
    assert done.returncode == 2 and "1 only after" in done.stderr and "--intersect" not in done.stdout
    table = ragstage("compare", before, after, "--intersect").stdout
    assert "questions paired: 2" in table and "fixed: 1" in table and "broken: 0" in table


def test_compare_bad_file_names_file_and_line(tmp_path, make_run):
    before = make_run(tmp_path / "b.jsonl", {"q1": "generation"})
    bad = tmp_path / "a.jsonl"
    bad.write_text('{"query_id": "q1", "correct": "yes"}\n')
    done = ragstage("compare", before, str(bad), check=False)
    assert done.returncode == 2 and f"{bad}, line 1, field 'correct'" in done.stderr


def test_public_imports():
    code = ("from ragstage import Trace, TraceError, diagnose, wilson, mcnemar, read_traces, "
            "attribution_table, funnel, compare; import sys; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_import_and_attribute_start_without_pandas_or_scipy():
    # The command line attributes big files; its start-up should not wait for the notebook stack.
    code = ("import sys, ragstage; assert not {'pandas', 'scipy'} & set(sys.modules), 'import'; "
            "from ragstage.cli import main; main(['attribute', %r, '--format', 'json']); "
            "assert not {'pandas', 'scipy'} & set(m.split('.')[0] for m in sys.modules), 'attribute'") % FIVE
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_attribute_parses_without_the_pipeline_or_ingest_modules():
    code = ("import sys; from ragstage.cli import main; main(['attribute', %r, '--format', 'json']); "
            "assert not {'ragstage.pipeline', 'ragstage.ingest'} & set(sys.modules), sorted(sys.modules)") % FIVE
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("argv", [["attribute"], ["attribute", FIVE, "--bogus"], ["compare", FIVE],
                                  ["convert", "--help"], ["report", FIVE], ["attribute", FIVE, "--require", "most"]])
def test_the_light_parser_parses_and_fails_as_the_full_one(argv, capsys):
    from ragstage.cli import build_parser

    full, light = build_parser(), build_parser(full=False)
    assert light.format_usage() == full.format_usage()
    said = []
    for parser in (full, light):
        try:
            said.append(vars(parser.parse_args(argv)))
        except SystemExit as exc:
            said.append(exc.code)
        said.append(capsys.readouterr())
    assert said[:2] == said[2:]


def test_every_public_name_resolves_lazily():
    import ast

    import ragstage

    # The imports written for type checkers name the same modules as the lazy table.
    tree = ast.parse(Path(ragstage.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    typed = {alias.name: imp.module for imp in block.body for alias in imp.names}
    assert typed == ragstage._MODULES
    assert sorted(ragstage.__all__) == sorted(ragstage._MODULES)  # the literal list linters read
    for name in ragstage.__all__:
        assert getattr(ragstage, name) is not None
    with pytest.raises(AttributeError):
        ragstage.no_such_name  # noqa: B018


def test_console_script_is_installed():
    import shutil

    exe = shutil.which("ragstage") or str(Path(sys.executable).with_name("ragstage"))
    done = subprocess.run([exe, "attribute", FIVE, "--format", "json"], capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)
