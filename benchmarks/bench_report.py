"""Benchmark: the HTML report and the gate on 100,000 traces, next to ``attribute`` and ``compare`` in one run.

Writes two runs of synthetic traces (seeded; 10 retrieved ids with scores and sections, 5
reranked, 1-3 in the prompt, a question and an answer text with citation markers) where
the second run fixes and breaks a few percent of the questions, then times, each in a
fresh subprocess:

* ``ragstage attribute BEFORE --format json`` (the peer: the same numbers, no page);
* ``ragstage report BEFORE --out report.html``;
* ``ragstage compare BEFORE AFTER --format json`` (the peer of the next two);
* ``ragstage report BEFORE AFTER --compare --out compare.html``;
* ``ragstage compare BEFORE AFTER --gate --summary ... --junit ...``;

and prints the size of each page. With Chromium and Playwright installed it also opens
both pages headless and times loading them, a bucket filter, a text search and opening a
trace (the page renders 100 rows at a time). Speed is measured here, never asserted in a test.

    python benchmarks/bench_report.py [--traces 100000] [--folder /tmp/ragstage-bench-report]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import show, timed  # noqa: E402

WORDS = ("leave parental policy budget travel expense remote pension allowance claim receipt holiday days "
         "weeks limit equipment office meal mileage health dental cover company add").split()
SECTIONS = ("policy", "faq", "handbook", "benefits", None)


def write_runs(before: Path, after: Path, n: int, seed: int = 0) -> None:
    """Two runs over the same ``n`` questions; about 6% of the questions change outcome."""
    rng = random.Random(seed)
    with open(before, "wb") as a, open(after, "wb") as b:
        for i in range(n):
            docs = [f"doc{rng.randrange(50_000)}" for _ in range(10)]
            scores = sorted((round(rng.random(), 4) for _ in docs), reverse=True)
            gold = [docs[rng.randrange(10)] if rng.random() < 0.85 else "doc-missing"]
            reranked = docs[:5]
            prompt = reranked[: rng.randint(1, 3)]
            cite = rng.randint(1, 4)
            rec = {
                "query_id": f"q{i:06d}",
                "pipeline": "app",
                "query": " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12))) + "?",
                "gold": gold,
                "retrieved": [{"id": d, "score": s, "section": rng.choice(SECTIONS)} for d, s in zip(docs, scores)],
                "reranked": reranked,
                "prompt": prompt,
                "prompt_source": "logged",
                "answer": f"You can claim up to {rng.randint(1, 900)} a year [{cite}].",
                "correct": gold[0] in prompt and rng.random() < 0.8,
                "model": "model-a",
                "prompt_version": "v1",
                "timestamp": "2026-10-15T13:12:00Z",
            }
            a.write(orjson.dumps(rec) + b"\n")
            r = rng.random()
            if r < 0.03:
                rec["correct"] = not rec["correct"]
            elif r < 0.06:
                rec["prompt"] = reranked[:3]
            rec["prompt_version"] = "v2"
            b.write(orjson.dumps(rec) + b"\n")


def browse(pages: dict[str, Path]) -> None:
    """Open each page in headless Chromium and time what a reader does first."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("\n(no playwright: the pages were not opened)")
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from browser_helpers import CHROMIUM_ARGS, find_chromium

    chromium = find_chromium()
    if chromium is None:
        print("\n(no Chromium: the pages were not opened)")
        return
    print(f"\n{'in headless Chromium':44} {'seconds':>8}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        for name, path in pages.items():
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            page.goto(path.resolve().as_uri(), timeout=600_000)
            page.wait_for_selector("body[data-ready=true]", timeout=600_000)
            steps = [(f"{name}: load until the table is drawn", time.perf_counter() - t0)]
            select, value = ("#filter-bucket", "retrieval") if name == "report" else ("#filter-status", "broken")
            for label, action, done in (
                    (f"{name}: filter {value}", lambda p=page, s=select, v=value: p.select_option(s, v),
                     "#match-count"),
                    (f"{name}: open the first question's trace",
                     lambda p=page: p.click("#question-table tbody tr:first-child"), "#trace-view .trace"),
                    (f"{name}: search 'parental'", lambda p=page: p.fill("#search", "parental"),
                     "#match-count")):
                t0 = time.perf_counter()
                action()
                page.wait_for_selector(done, timeout=600_000)
                steps.append((label, time.perf_counter() - t0))
            for label, seconds in steps:
                print(f"{label:44} {seconds:8.2f}")
            print(f"{name + ': rows matching at the end':44} {page.inner_text('#match-count'):>8}")
            page.close()
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/ragstage-bench-report"))
    parser.add_argument("--no-browser", action="store_true", help="do not open the pages in Chromium")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    before, after = args.folder / "before.jsonl", args.folder / "after.jsonl"
    t0 = time.perf_counter()
    write_runs(before, after, args.traces)
    print(f"wrote 2 x {args.traces:,} traces ({before.stat().st_size / 1e6:.1f} MB each) "
          f"in {time.perf_counter() - t0:.1f} s\n")
    cli = [sys.executable, "-m", "ragstage.cli"]
    report, comparison = args.folder / "report.html", args.folder / "compare.html"
    rows = [
        timed([*cli, "attribute", str(before), "--format", "json"], "attribute --format json"),
        timed([*cli, "report", str(before), "--out", str(report)], "report --out report.html"),
        timed([*cli, "compare", str(before), str(after), "--format", "json"], "compare --format json"),
        timed([*cli, "report", str(before), str(after), "--compare", "--out", str(comparison)],
              "report --compare --out compare.html"),
    ]
    show(rows, reference="attribute --format json")
    allow_1 = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode > 1)"  # 1: the gate failed
    gated = timed([sys.executable, "-c", allow_1,
                   *cli, "compare", str(before), str(after), "--gate", "--summary", str(args.folder / "summary.md"),
                   "--junit", str(args.folder / "gate.xml")], "compare --gate --summary --junit")
    print()
    show([rows[2], gated], reference="compare --format json")
    print(f"\nverdict: {gated['stdout'].strip().splitlines()[-1]}")
    print(f"\n{'file':44} {'MB':>8}")
    for path in (before, report, comparison, args.folder / "summary.md", args.folder / "gate.xml"):
        print(f"{path.name:44} {path.stat().st_size / 1e6:8.1f}")
    if not args.no_browser:
        browse({"report": report, "compare": comparison})
    return 0


if __name__ == "__main__":
    sys.exit(main())
