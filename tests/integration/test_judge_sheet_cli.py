"""The labelling sheet end to end through the command line: a judge's verdicts become silver labels
and silver traces, a sample is drawn with its sheet, a person's answers (here: the mini run's real
gold) are read back into gold labels and gold traces, and ``attribute --gold-sample`` accepts them;
a sheet of another draw, a blank verdict and a mixed labels file exit 2 naming what is wrong."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragstage.fixtures import fixture_path

RUN = fixture_path("mini_run") / "bm25" / "traces.jsonl"
CORPUS = fixture_path("mini_scifact") / "corpus.jsonl"


def ragstage(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _gold() -> dict[str, list[str]]:
    return {t["query_id"]: t["gold"] for t in map(json.loads, RUN.read_text().splitlines())}


@pytest.fixture(scope="module")
def silver(tmp_path_factory) -> Path:
    """Silver traces of a toy judge: relevant = the real gold or an id ending in 2 (so it errs)."""
    root = tmp_path_factory.mktemp("judge_cli")
    with open(root / "rel.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["query_id", "doc_id", "relevant"])
        for t in map(json.loads, RUN.read_text().splitlines()):
            for r in t["retrieved"][:5]:
                writer.writerow([t["query_id"], r["id"], "yes" if r["id"] in t["gold"] or r["id"].endswith("2")
                                 else "no"])
    done = ragstage("judge", "convert", "rel.csv", "--name", "toy", "--model", "rule", "--prompt", "none",
                    "--prompt-sha256", "0" * 64, "--traces", RUN, "--out", "silver-labels.jsonl", cwd=root)
    assert done.returncode == 0, done.stderr
    done = ragstage("judge", "apply", RUN, "--labels", "silver-labels.jsonl", "--out", "silver.jsonl", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "13 traces labelled by the judge toy (rule)" in done.stderr
    return root


def test_attribute_and_the_doctor_say_the_labels_are_a_judges(silver: Path) -> None:
    done = ragstage("attribute", "silver.jsonl", cwd=silver)
    assert done.returncode == 0 and "SILVER labels: 13 of 13 traces were labelled by a judge (toy (rule): 13)" \
        in done.stderr
    assert "SILVER" not in ragstage("attribute", RUN, cwd=silver).stderr
    doctor = ragstage("doctor", "silver.jsonl", cwd=silver)
    assert "SILVER labels: 13 of 13" in doctor.stdout + doctor.stderr
    compared = ragstage("compare", RUN, "silver.jsonl", "--intersect", cwd=silver)
    assert "SILVER labels: 13 of 26 traces" in compared.stderr


def _fill(sheet: Path, out: Path) -> None:
    """A person's answers: yes on the real gold, no elsewhere, and a row for gold not among the candidates."""
    gold = _gold()
    rows = list(csv.DictReader(open(sheet, newline="")))
    for row in rows:
        row["relevant"] = "yes" if row["doc_id"] in gold[row["query_id"]] else "no"
    for qid in dict.fromkeys(r["query_id"] for r in rows):
        shown = {r["doc_id"] for r in rows if r["query_id"] == qid}
        rows += [{**rows[0], "query_id": qid, "rank": "", "doc_id": g, "text": "", "relevant": "yes"}
                 for g in gold[qid] if g not in shown]
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_sheet_to_labels_to_gold_traces_to_the_estimate(silver: Path) -> None:
    done = ragstage("sample", "silver.jsonl", "--n", "6", "--seed", "7", "--out", "sample.json", "--sheet",
                    "sheet.csv", "--corpus", CORPUS, "--depth", "3", cwd=silver)
    assert done.returncode == 0, done.stderr
    sample = json.loads((silver / "sample.json").read_text())
    sheet = list(csv.DictReader(open(silver / "sheet.csv", newline="")))
    assert list(dict.fromkeys(r["query_id"] for r in sheet)) == sample["query_ids"]
    assert all(r["relevant"] == "" and r["text"] and r["sample"].startswith("seed=7 n=6 sha256:") for r in sheet)
    _fill(silver / "sheet.csv", silver / "filled.csv")
    done = ragstage("judge", "sheet", "filled.csv", "--sample", "sample.json", "--out", "gold-labels.jsonl", cwd=silver)
    assert done.returncode == 0, done.stderr
    labels = [json.loads(line) for line in (silver / "gold-labels.jsonl").read_text().splitlines()]
    gold = _gold()
    assert [(row["query_id"], sorted(row["gold"])) for row in labels] == [(q, sorted(gold[q]))
                                                                          for q in sample["query_ids"]]
    done = ragstage("judge", "apply", RUN, "--labels", "gold-labels.jsonl", "--only-labelled", "--out", "gold.jsonl",
                    cwd=silver)
    assert done.returncode == 0 and "7 unlabelled trace(s) left out" in done.stderr
    done = ragstage("attribute", "silver.jsonl", "--gold-sample", "gold.jsonl", "--sample", "sample.json",
                    "--format", "json", cwd=silver)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    real = [t for t in map(json.loads, RUN.read_text().splitlines()) if t["query_id"] in sample["query_ids"]]
    assert sum(row["gold_k"] for row in rows) == 6 and all(row["gold_n"] == 6 for row in rows)
    assert "the estimate corrects them with the gold sample" in done.stderr and len(real) == 6


def test_a_blank_verdict_and_a_sheet_of_another_draw_exit_2(silver: Path) -> None:
    assert ragstage("sample", "silver.jsonl", "--n", "6", "--seed", "7", "--out", "s7.json", "--sheet", "s7.csv",
                    "--corpus", CORPUS, cwd=silver).returncode == 0
    done = ragstage("judge", "sheet", "s7.csv", "--sample", "s7.json", "--out", "x.jsonl", cwd=silver)
    assert done.returncode == 2 and "s7.csv, row 2, field 'relevant': not filled in" in done.stderr
    assert ragstage("sample", "silver.jsonl", "--n", "6", "--seed", "8", "--out", "s8.json", cwd=silver
                    ).returncode == 0
    _fill(silver / "s7.csv", silver / "f7.csv")
    done = ragstage("judge", "sheet", "f7.csv", "--sample", "s8.json", "--out", "x.jsonl", cwd=silver)
    assert done.returncode == 2 and "row 2, field 'sample'" in done.stderr
    assert not (silver / "x.jsonl").exists()


def test_a_sheet_needs_every_candidates_text(silver: Path) -> None:
    corpus = silver / "part.jsonl"
    corpus.write_text("".join(line + "\n" for line in CORPUS.read_text().splitlines()[:5]))
    done = ragstage("sample", "silver.jsonl", "--n", "6", "--seed", "7", "--out", "s.json", "--sheet", "s.csv",
                    "--corpus", corpus, cwd=silver)
    assert done.returncode == 2 and "have no text" in done.stderr
    assert not (silver / "s.json").exists() and not (silver / "s.csv").exists()


def test_a_mixed_labels_file_exits_2_naming_the_line(silver: Path) -> None:
    lines = (silver / "silver-labels.jsonl").read_text().splitlines()
    person = json.loads(lines[1])
    del person["judge"]
    (silver / "mixed.jsonl").write_text("\n".join([lines[0], json.dumps(person), *lines[2:]]) + "\n")
    done = ragstage("judge", "apply", RUN, "--labels", "mixed.jsonl", "--out", "m.jsonl", cwd=silver)
    assert done.returncode == 2 and "mixed.jsonl, line 2, field 'judge'" in done.stderr
