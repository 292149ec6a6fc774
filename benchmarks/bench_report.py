"""Benchmark: the HTML report beside ``attribute`` at 100,000 and 1,000,000 traces (and the gate), in one run.

Writes two runs of synthetic traces per size (seeded; 10 retrieved ids with scores and
sections, 5 reranked, 1-3 in the prompt, a question and an answer text with citation markers)
where the second run fixes and breaks a few percent of the questions. For each size it times,
each in a fresh subprocess and alternating which goes first, ``rounds`` times:

* ``ragstage attribute BEFORE --format json`` (the peer: the same numbers, no page);
* ``ragstage report BEFORE --out report.html``;

and prints the medians of wall time, CPU time (user + system, every process) and peak
memory (RSS of the largest process), and the page's size. With Chromium and Playwright
installed it opens each page headless and prints the median time to load it until its tables
are drawn. ``--compare`` also times, at each size, ``compare --format json`` beside ``report --compare``
(medians of the rounds, the page's size and its open time), and at the first size ``compare
--gate --summary --junit`` and a reader's first steps on both pages (a filter, a search,
opening a trace). Speed is measured here, never asserted in
a test.

    python benchmarks/bench_report.py [--traces 100000 1000000] [--rounds 3] [--compare [--compare-only]]
"""

from __future__ import annotations

import argparse
import random
import statistics
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


def open_times(pages: dict[str, Path], rounds: int) -> dict[str, float] | None:
    """The median seconds headless Chromium takes to load each page until its tables are drawn
    (a fresh tab each round), or None without Chromium or Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("\n(no playwright: the pages were not opened)")
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from browser_helpers import CHROMIUM_ARGS, find_chromium

    chromium = find_chromium()
    if chromium is None:
        print("\n(no Chromium: the pages were not opened)")
        return None
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        for name, path in pages.items():
            seconds = []
            for _ in range(rounds):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                t0 = time.perf_counter()
                page.goto(path.resolve().as_uri(), timeout=600_000)
                page.wait_for_selector("body[data-ready=true]", timeout=600_000)
                seconds.append(time.perf_counter() - t0)
                page.close()
            out[name] = statistics.median(seconds)
        browser.close()
    return out


def browse(pages: dict[str, Path]) -> None:
    """Open each page in headless Chromium and time what a reader does first."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from browser_helpers import CHROMIUM_ARGS, find_chromium

    print(f"\n{'in headless Chromium':44} {'seconds':>8}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS, headless=True)
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


def median_rows(runs: list[list[dict]]) -> list[dict]:
    """Per command, the median of each measure over the rounds."""
    return [{"label": rounds[0]["label"], **{k: statistics.median(r[k] for r in rounds)
                                             for k in ("wall", "cpu", "peak_mb")}} for rounds in zip(*runs)]


def report_beside_attribute(traces: Path, folder: Path, rounds: int) -> Path:
    """``attribute`` and ``report`` on one file, alternating, ``rounds`` times; prints the medians."""
    cli = [sys.executable, "-m", "ragstage.cli"]
    page = folder / f"report-{traces.stem}.html"
    runs = []
    for i in range(rounds):
        pair = [timed([*cli, "attribute", str(traces), "--format", "json"], "attribute --format json"),
                timed([*cli, "report", str(traces), "--out", str(page)], "report --out report.html")]
        runs.append(pair if i % 2 == 0 else pair[::-1])
    runs = [sorted(r, key=lambda row: row["label"]) for r in runs]
    show(median_rows(runs), reference="attribute --format json")
    return page


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per size (medians are shown)")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/ragstage-bench-report"))
    parser.add_argument("--compare", action="store_true",
                        help="also time compare, the comparison page and the gate (at the first size)")
    parser.add_argument("--no-browser", action="store_true", help="do not open the pages in Chromium")
    parser.add_argument("--compare-only", action="store_true", help="with --compare: skip the one-run report")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    pages = {}
    for n in args.traces:
        before, after = args.folder / f"before-{n}.jsonl", args.folder / f"after-{n}.jsonl"
        if not before.exists():
            t0 = time.perf_counter()
            write_runs(before, after, n)
            print(f"wrote 2 x {n:,} traces ({before.stat().st_size / 1e6:.1f} MB each) "
                  f"in {time.perf_counter() - t0:.1f} s")
        if args.compare_only:
            continue
        print(f"\n{n:,} traces, median of {args.rounds} rounds")
        page = report_beside_attribute(before, args.folder, args.rounds)
        pages[f"report of {n:,}"] = page
        print(f"{'page size':44} {page.stat().st_size / 1e6:8.1f} MB")
    if pages and not args.no_browser:
        opened = open_times(pages, args.rounds)
        if opened:
            print(f"\n{'open in headless Chromium (median)':44} {'seconds':>8}")
            for name, seconds in opened.items():
                print(f"{name:44} {seconds:8.2f}")
    if args.compare:
        compared = {}
        for n in args.traces:
            compared[f"comparison of {n:,}"] = comparison_beside_compare(args.folder, n, args.rounds)
        if not args.no_browser:
            opened = open_times(compared, args.rounds)
            if opened:
                print(f"\n{'open in headless Chromium (median)':44} {'seconds':>8}")
                for name, seconds in opened.items():
                    print(f"{name:44} {seconds:8.2f}")
        compare_pages(args.folder, args.traces[0], args.no_browser)
    return 0


def comparison_beside_compare(folder: Path, n: int, rounds: int) -> Path:
    """``compare --format json`` and ``report --compare`` on ``n`` pairs, alternating, ``rounds`` times;
    prints the medians and the page's size."""
    before, after = folder / f"before-{n}.jsonl", folder / f"after-{n}.jsonl"
    cli = [sys.executable, "-m", "ragstage.cli"]
    page = folder / f"compare-{n}.html"
    runs = []
    for i in range(rounds):
        pair = [timed([*cli, "compare", str(before), str(after), "--format", "json"], "compare --format json"),
                timed([*cli, "report", str(before), str(after), "--compare", "--out", str(page)],
                      "report --compare --out compare.html")]
        runs.append(pair if i % 2 == 0 else pair[::-1])
    runs = [sorted(r, key=lambda row: row["label"]) for r in runs]
    print(f"\n{n:,} paired questions, median of {rounds} rounds")
    show(median_rows(runs), reference="compare --format json")
    print(f"{'page size':44} {page.stat().st_size / 1e6:8.1f} MB")
    return page


def compare_pages(folder: Path, n: int, no_browser: bool) -> None:
    """``compare``, the comparison page and the gate on ``n`` traces, beside ``compare --format json``."""
    before, after = folder / f"before-{n}.jsonl", folder / f"after-{n}.jsonl"
    cli = [sys.executable, "-m", "ragstage.cli"]
    report, comparison = folder / "report.html", folder / "compare.html"
    rows = [
        timed([*cli, "compare", str(before), str(after), "--format", "json"], "compare --format json"),
        timed([*cli, "report", str(before), str(after), "--compare", "--out", str(comparison)],
              "report --compare --out compare.html"),
    ]
    allow_1 = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode > 1)"  # 1: the gate failed
    rows.append(timed([sys.executable, "-c", allow_1,
                       *cli, "compare", str(before), str(after), "--gate", "--summary", str(folder / "summary.md"),
                       "--junit", str(folder / "gate.xml")], "compare --gate --summary --junit"))
    print(f"\n{n:,} paired questions")
    show(rows, reference="compare --format json")
    print(f"\nverdict: {rows[2]['stdout'].strip().splitlines()[-1]}")
    print(f"\n{'file':44} {'MB':>8}")
    for path in (comparison, folder / "summary.md", folder / "gate.xml"):
        print(f"{path.name:44} {path.stat().st_size / 1e6:8.1f}")
    if not no_browser:
        timed([*cli, "report", str(before), "--out", str(report)], "report")
        browse({"report": report, "compare": comparison})


if __name__ == "__main__":
    sys.exit(main())
