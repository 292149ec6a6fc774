"""``ragstage compare --gate`` on judge-labelled runs, through a subprocess as a CI job runs it: the verdict
on the PPI++ estimate (against ppi_py to 1e-9), its outputs, its refusals, and hostile judge names."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from judged_runs import JUDGE, gold_options, judged, ragstage, write_runs
from markdown_it import MarkdownIt
from repo_paths import JUNIT_XSD, REPO

from ragstage import read_traces, write_traces

XSD = JUNIT_XSD


@pytest.fixture(scope="module")
def better(tmp_path_factory):
    """A change that fixes 10% and breaks 5%, judged 85% right with shared errors; 200 gold labels per run."""
    return write_runs(tmp_path_factory.mktemp("better"), judged())


@pytest.fixture(scope="module")
def worse(tmp_path_factory):
    """A change that breaks 10% and fixes 2%, judged by a judge that calls 30% of the new run's wrong answers right."""
    return write_runs(tmp_path_factory.mktemp("worse"), judged(fixed=0.02, broken=0.10, lenient_after=0.3))


def refused(*args, match: str) -> str:
    done = ragstage(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert match in done.stderr, done.stderr
    return done.stderr


def test_a_regression_the_judge_calls_an_improvement_fails_on_the_estimate(worse, tmp_path):
    p = worse.paths
    done = ragstage("compare", p["before"], p["after"], "--gate", *gold_options(worse))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("FAIL (paired PPI++): significantly worse (the 95% PPI++ interval lies below 0)")
    assert "judge only +0.073 (75 fixed, 31 broken" in lines[-1]
    assert any(line.startswith("PPI++ (the verdict)") for line in lines)
    assert any(line.startswith("judge only (biased)") for line in lines)
    assert "the counts above are the judge's (biased)" in done.stdout
    # the same traces, their labels passed off as people's: the McNemar gate on the judge's counts passes
    for side in ("before", "after"):
        write_traces(tmp_path / f"{side}.jsonl", [dataclasses.replace(t, meta={}) for t in read_traces(p[side])])
    plain = ragstage("compare", tmp_path / "before.jsonl", tmp_path / "after.jsonl", "--gate")
    assert plain.returncode == 0 and plain.stdout.splitlines()[-1].startswith("PASS"), plain.stdout


def ppi_py_figures(runs):
    """ppi_py's interval of (fixed − broken) / questions, from the files a user has."""
    ppi_py = pytest.importorskip("ppi_py")
    p = runs.paths
    right = {side: {t.query_id: t.gold == ("a",) for t in read_traces(p[side])} for side in ("before", "after")}
    gold = {side: {t.query_id: t.gold == ("a",) for t in read_traces(p[f"gold_{side}"])} for side in right}
    drawn = json.loads(p["sample_before"].read_text())["query_ids"]
    rest = [q for q in right["before"] if q not in set(drawn)]
    y = np.array([gold["after"][q] - gold["before"][q] for q in drawn], dtype=float)
    yhat = np.array([right["after"][q] - right["before"][q] for q in drawn], dtype=float)
    u = np.array([right["after"][q] - right["before"][q] for q in rest], dtype=float)
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, u)))
    low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(y, yhat, u, alpha=0.05))
    gold_low, gold_high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(y, yhat, u, alpha=0.05, lam=0))
    return point, low, high, gold_low, gold_high


@pytest.mark.parametrize("name", ["better", "worse"])
def test_json_carries_the_estimate_ppi_py_computes(name, request):
    runs = request.getfixturevalue(name)
    p = runs.paths
    done = ragstage("compare", p["before"], p["after"], "--gate", "--format", "json", *gold_options(runs))
    assert done.returncode == (0 if name == "better" else 1), done.stderr
    data = json.loads(done.stdout)
    plain = json.loads(ragstage("compare", p["before"], p["after"], "--format", "json").stdout)
    assert {k: v for k, v in data.items() if k != "ppi"} == plain
    ppi = data["ppi"]
    point, low, high, gold_low, gold_high = ppi_py_figures(runs)
    assert abs(ppi["estimate"] - point) <= 1e-9 and abs(ppi["low"] - low) <= 1e-9 and abs(ppi["high"] - high) <= 1e-9
    assert abs(ppi["gold_low"] - gold_low) <= 1e-9 and abs(ppi["gold_high"] - gold_high) <= 1e-9
    assert ppi["judge_estimate"] == pytest.approx((plain["fixed"] - plain["broken"]) / plain["n"], abs=1e-12)
    assert ppi["gold_n"] == 200 and ppi["questions"] == 600
    assert done.stderr.splitlines()[-1].startswith("PASS" if name == "better" else "FAIL (paired PPI++)")
    assert any(line.startswith("PPI++ (the verdict)") for line in done.stderr.splitlines())


def test_the_summary_and_junit_carry_the_interval_and_the_judge_only_figure(worse, tmp_path):
    import xmlschema

    p = worse.paths
    summary, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    done = ragstage("compare", p["before"], p["after"], "--gate", "--summary", summary, "--junit", junit,
                    "--format", "json", *gold_options(worse))
    assert done.returncode == 1, done.stderr
    ppi = json.loads(done.stdout)["ppi"]
    markdown = summary.read_text()
    assert f"| PPI++ (the verdict) | {ppi['estimate']:+.3f} | {ppi['low']:+.3f} to {ppi['high']:+.3f} |" in markdown
    assert f"| judge only (biased) | {ppi['judge_estimate']:+.3f} | - |" in markdown
    assert "| paired PPI++ | the 95% PPI++ interval of (fixed − broken) / questions lies below 0 |" in markdown
    assert "### Broken by the judge's labels (31)" in markdown
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    suite = ET.parse(junit).getroot().find("testsuite")
    props = {e.get("name"): e.get("value") for e in suite.iter("property")}
    assert float(props["ppi_low"]) == ppi["low"] and float(props["ppi_high"]) == ppi["high"]
    assert float(props["judge_estimate"]) == ppi["judge_estimate"] and props["labels"] == "judge"
    assert "labelled by a judge (stand-in, model labelled-stand-in, prompt evidence-v1) on 600 of 600" in \
        props["judge_after"]
    verdict = next(c for c in suite.iter("testcase") if c.get("name") == "verdict")
    assert verdict.find("failure").get("message").startswith("FAIL (paired PPI++)")


def test_without_a_gold_sample_a_gate_on_a_judge_s_labels_is_refused(better, tmp_path):
    p = better.paths
    for extra in (["--gate"], ["--summary", str(tmp_path / "s.md")], ["--gate", "--junit", str(tmp_path / "j.xml")],
                  ["--gate", *gold_options(better)[:4]]):
        refused("compare", p["before"], p["after"], *extra,
                match="labelled by a judge (stand-in, model labelled-stand-in, prompt evidence-v1) on 600 of 600 "
                      "traces: a gate on a judge's labels would pass or fail on the judge's errors")
    assert not (tmp_path / "s.md").exists() and not (tmp_path / "j.xml").exists()


def test_plain_compare_names_the_judge_and_its_count_on_stderr(better):
    p = better.paths
    done = ragstage("compare", p["before"], p["after"])
    assert done.returncode == 0, done.stderr
    notes = done.stderr.splitlines()
    assert len(notes) == 2 and all("labelled by a judge (stand-in, model labelled-stand-in, prompt evidence-v1) "
                                   "on 600 of 600 traces: its fixed, broken and p are the judge's" in n for n in notes)
    assert str(p["before"]) in notes[0] and str(p["after"]) in notes[1]
    refused("compare", p["before"], p["after"], *gold_options(better), match="go with --gate")


def test_gold_rows_and_samples_that_do_not_fit_are_refused(better, tmp_path):
    p = better.paths
    options = gold_options(better)

    def swap(option: str, value) -> list[str]:
        out = list(options)
        out[out.index(option) + 1] = str(value)
        return out

    drawn = set(json.loads(p["sample_after"].read_text())["query_ids"])
    picked = tmp_path / "picked.jsonl"
    undrawn = [dataclasses.replace(t, meta={}) for t in read_traces(p["after"]) if t.query_id not in drawn]
    write_traces(picked, undrawn[:5] + list(read_traces(p["gold_after"])))
    refused("compare", p["before"], p["after"], "--gate", *swap("--gold-sample-after", picked),
            match=f"{picked} has 5 row(s) that were not drawn in {p['sample_after']}")
    refused("compare", p["before"], p["after"], "--gate", *swap("--sample-before", p["sample_after"]),
            match=f"{p['sample_after']} was drawn from pipeline 'fix'; {p['before']} holds 'base'")
    other = tmp_path / "other.json"
    assert ragstage("sample", p["after"], "--n", 200, "--seed", 8, "--out", other).returncode == 0
    refused("compare", p["before"], p["after"], "--gate", *swap("--sample-after", other),
            match="the two samples draw other questions")
    stratified = tmp_path / "stratified.json"
    assert ragstage("sample", p["after"], "--n", 200, "--seed", 7, "--by-bucket", "--out", stratified).returncode == 0
    refused("compare", p["before"], p["after"], "--gate", *swap("--sample-after", stratified),
            match="stratified by silver bucket (--by-bucket)")
    judged_gold = tmp_path / "judged_gold.jsonl"
    write_traces(judged_gold, [dataclasses.replace(t, meta={"labels": JUDGE}) for t in read_traces(p["gold_after"])])
    refused("compare", p["before"], p["after"], "--gate", *swap("--gold-sample-after", judged_gold),
            match="a gold sample is labelled by people")
    refused("compare", p["before"], p["after"], "--gate", "--intersect", *options,
            match="--intersect does not combine with gold samples")
    people = tmp_path / "people.jsonl"
    write_traces(people, [dataclasses.replace(t, meta={"labels": {"by": "people"}}) for t in read_traces(p["before"])])
    refused("compare", people, p["after"], "--gate", *options, match="is labelled by people, not by a judge")
    bad = tmp_path / "bad.jsonl"
    write_traces(bad, [dataclasses.replace(t, meta={"labels": {"by": "robot"}}) for t in read_traces(p["before"])])
    refused("compare", bad, p["after"], match="query_id 'q0000': field meta['labels']['by']: 'judge' or 'people'")


def test_a_run_labelled_by_people_pairs_with_a_judged_run(better, tmp_path):
    p = better.paths
    people = tmp_path / "people.jsonl"
    write_traces(people, [dataclasses.replace(t, meta={"labels": {"by": "people"}}) for t in read_traces(p["before"])])
    done = ragstage("compare", people, p["after"], "--gate", "--format", "json", *gold_options(better)[4:])
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["ppi"]["judges"]) == ["after"]


HOSTILE_JUDGE = {**JUDGE, "judge": "x\n::error title=injected::boom <img src=x onerror=alert(1)> [l](http://e) |",
                 "model": "m`\u202e`", "prompt": "## FAKE\r\n"}


def test_hostile_judge_and_file_names_stay_inert(tmp_path):
    import xmlschema

    folder = tmp_path / "a`<img src=x>`|b"
    folder.mkdir()
    runs = write_runs(folder, judged(questions=200, n=50, judge=HOSTILE_JUDGE))
    summary, junit = tmp_path / "s.md", tmp_path / "j.xml"
    done = ragstage("compare", runs.paths["before"], runs.paths["after"], "--gate", "--summary", summary,
                    "--junit", junit, *gold_options(runs))
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith(("PASS: ", "FAIL ("))  # the verdict, the one line that starts so
    for line in lines[:-1] + done.stderr.splitlines():
        assert not line.lstrip().startswith(("::", "#", "PASS", "FAIL")), line
    assert "! paired PPI++: 50 gold labels" in done.stdout  # a small sample is warned
    page = MarkdownIt("commonmark").enable("table").render(summary.read_text())
    assert "<img" not in page and "<a " not in page and "FAKE</h2>" not in page
    headings = [line for line in page.splitlines() if line.startswith("<h")]
    assert headings[:2] == ["<h2>ragstage gate: " + ("PASS" if done.returncode == 0 else "FAIL") + "</h2>",
                            "<h3>The estimate the verdict is made on (PPI++: a judge on every question, gold on a "
                            "sample)</h3>"]
    assert "x\\n::error title=injected::boom" in html.unescape(page)
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    props = {e.get("name"): e.get("value") for e in ET.parse(junit).getroot().iter("property")}
    assert "\n" not in props["judge_before"] and "x\\n::error" in props["judge_before"]


def test_the_docs_example_is_what_the_command_prints(worse):
    """The example of "Gating on a judge" in docs/gold-for-a-few.md, re-run on the same synthetic runs."""
    import os
    import subprocess
    import sys

    docs = (REPO / "docs" / "gold-for-a-few.md").read_text(encoding="utf-8")
    section = docs.split("\n## Gating on a judge\n", 1)[1].split("\n## ", 1)[0]
    example, refusal, note = [block.splitlines() for block in re.findall(r"```(?:text|output)\n(.*?)\n```", section,
                                                                          re.S)]

    def run(*args):
        return subprocess.run([sys.executable, "-m", "ragstage.cli", *args], capture_output=True, text=True,
                              cwd=worse.paths["before"].parent, env=os.environ)

    names = ["--gold-sample-before", "gold_before.jsonl", "--sample-before", "sample_before.json",
             "--gold-sample-after", "gold_after.jsonl", "--sample-after", "sample_after.json"]
    done = run("compare", "before.jsonl", "after.jsonl", "--gate", *names)
    assert done.returncode == 1, done.stderr
    printed = done.stdout.splitlines()
    assert printed[printed.index(example[0]):] == example
    assert run("compare", "before.jsonl", "after.jsonl", "--gate").stderr.splitlines() == refusal
    assert run("compare", "before.jsonl", "after.jsonl").stderr.splitlines()[0] == note[0] and len(note) == 1
