"""The answers a learner is likely to give wrong, and the hint each must get.

For every exercise, one or more wrong results a reader plausibly produces (a typing slip, the
edit left out, a step skipped, the right call with a wrong argument) run in the chapter's
namespace, as a reader's cell would. Each must be refused with the hint meant for that mistake
(a fragment of it is named here), and no problem line may show the expected value: a hint says
where to look, never what is there. Chapter 5's wrong answers are built from the committed mini
run, so they need none of the chapter's twenty minutes of generation.
"""

from __future__ import annotations

import re

import pytest
from chapter_namespace import Chapter, run_solution, shared_chapter

from ragstage import exercises as ex_pkg
from ragstage.attribution import BUCKETS
from ragstage.exercises import check, exercise, exercises

# (exercise, the reader's cell binding `result`, a fragment of the hint it must get)
WRONG: list[tuple[str, str, str]] = [
    ("1.1", 'result = "prompt assembly"', "is not a bucket name: the buckets are"),
    ("1.1", 'result = "generation"', "follow d2 through case D's lists in order"),
    ("1.2", 'editor.reset()\neditor.set_case("A", retrieved="d1, d2", reranked="d1, d2")\n'
            'result = editor.diagnoses["A"]', "is d2 in A's retrieved list now"),
    ("1.3", 'editor.reset()\nresult = editor.diagnoses["D"]', "d2 is not in D's prompt yet"),
    ("1.4", 'editor.reset()\neditor.set_case("C", answer_ids="d2")\nresult = editor.table.to_dict("list")',
     "a dict of lists, not a table"),
    ("1.4", 'editor.reset()\nresult = editor.table', "count the cases whose answer names the gold"),
    ("1.5", 'editor.reset()\neditor.set_case("E", answer_ids="")\nresult = editor.diagnoses["E"]',
     "did you tick refused, and only that?"),
    ("1.6", 'editor.reset()\neditor.set_case("G", gold="d2")\nresult = editor.diagnoses["G"]',
     "with a gold id the walk can run"),
    ("1.7", 'editor.reset()\neditor.set_case("E", prompt="")\nresult = editor.diagnoses["E"]',
     "type null (not an empty box)"),
    ("1.8", 'editor.reset()\nresult = editor.warnings["B"]', "the edit has not reached the editor"),
    ("1.8", 'editor.reset()\neditor.set_case("B", reranked="d1, d3")\nresult = editor.warnings["B"]',
     "the warning names another id"),
    ("2.1", "explorer.n_slider.value = 15\nexplorer.k_slider.value = 14\nresult = explorer",
     "drag the k slider to its right end"),
    ("2.2", "explorer.n_slider.value = 15\nexplorer.k_slider.value = 220\nexplorer.n_slider.value = 300\n"
            "result = explorer", "set n first (k cannot exceed n), then k"),
    ("2.3", 'result = str(sample_size(plan["p"], 0.03))', "is a string, not a number"),
    ("2.3", 'result = sample_size(plan["p"], 0.3)', "a half-width of 0.03, not 0.3 or 3"),
    ("2.4", 'result = funnel_from_counts({"illustration": {**illustration, "retrieval": 150, "none": 40}})'
            '.to_dict("list")', "a dict of lists, not a table"),
    ("2.4", 'result = funnel_from_counts({"illustration": {**illustration, "retrieval": 150}})',
     "the total stays"),
    ("2.5", "result = mcnemar(158, 150)", "only the flipped questions enter the test"),
    ("2.5", 'result = f"{mcnemar(10, 2):.3f}"', "is a string, not a number"),
    ("2.6", 'row = pairs[(pairs.before == "minilm") & (pairs.after == "minilm+ce")].iloc[0]\n'
            "result = mcnemar_sample_size(row.fixed / N, row.broken / N)", "and power=0.9"),
    ("2.7", "result = holm(list(pairs.p_value))", "pass every published p-value and the new one"),
    ("3.1", 'result = diagnose(find_case(audit, "retrieval-miss"), "all")', "not in the retrieved list yet"),
    ("3.2", 'fourth = spec["exercises"][3]\nresult = diagnose(by_id[fourth["case"]].replace(**fourth["edit"]), "all")',
     'under "any" one gold id in the prompt is enough'),
    ("3.3", 'result = diagnose(find_case(audit, "supported-answer"), "all")', "which part of the system"),
    ("3.4", 'edited = edit_case(audit, "supported-answer", correct=False)\n'
            'result = diagnose(find_case(edited, "supported-answer"), "all")', "set both fields"),
    ("3.5", 'result = edit_case(batch, "inc-209", prompt=["handbook:leave"])',
     "lost the passages it was logged with"),
    ("3.5", 'before = find_case(batch, "inc-209")\n'
            'result = replay(edit_case(batch, "inc-209", prompt=[*before.prompt, "handbook:leave"]))',
     "a Counter, not the traces"),
    ("3.6", 'result = compare(batch, edit_case(batch, ["inc-210", "inc-211", "inc-212"], correct=True))',
     "edit the after run (after_fix), not the batch"),
    ("3.7", 'edited = edit_case(batch, "inc-231", answer="You get 25 days [1]. Part-timers get 12.")\n'
            'result = diagnose(find_case(edited, "inc-231"))', "is the evidence in inc-231's prompt?"),
    ("4.1", "result = [t.replace() for t in qu]", "qu-1 is the rewrite that dropped 'parental leave'"),
    ("4.2", 'rates = {**systems["readings"]["loss upstream"], "reranking": 1.0}\n'
            'result = measure_table({"loss upstream": rates})', "the first one after query understanding"),
    ("4.2", 'rates = {**systems["readings"]["loss upstream"], "retrieval": 1.0}\n'
            'result = measure_table({"loss upstream": rates}).to_dict("list")', "a dict of lists, not a table"),
    ("4.3", 'rates = {**systems["readings"]["loss upstream"], "generation": 0.5}\n'
            'result = measure_table({"loss upstream": rates})', "the oracle measures the generator alone"),
    ("4.4", 'result = Counter(generation_kind(t) for t in simulate_pipeline(N, types=systems["question_types"], '
            'seed=SEED, pipeline="mixed").traces if t.meta["qtype"] == "specific-rare" and generation_kind(t))',
     "give all the weight to one kind"),
    ("4.5", "bigger = measure_table(systems['readings'], n=2000)\n"
            "ratio = (bigger.high - bigger.low).mean() / (oracles.high - oracles.low).mean()\n"
            "result = {'n': int(bigger.n.max()), 'width_ratio': ratio}", "four times the chapter's N"),
    ("5.1", 'result = compare(run.traces["minilm"], run.traces["minilm"])', "double the budget"),
    ("5.2", "result = {'top': 3, 'lost': []}", "go down until assembly may use only the single best-ranked"),
    ("5.3", 'result = comparison_table(run.traces, [("minilm", "minilm+rrf")])',
     "the second label is the revised-prompt run"),
    ("6.1", "result = mcnemar(107, 151)", "the published comparison fixed 32 claims and broke 9"),
    ("6.1", 'result = f"{mcnemar(32, 9):.4f}"', "is a string, not a number"),
    ("6.2", 'counts = dict(published.buckets["minilm+ce/revised-prompt"])\ncounts["reranking"] -= 20\n'
            'result = prompt_ceiling({"what if": counts})', "do not add or drop any"),
    ("6.2", 'counts = dict(published.buckets["minilm+ce/revised-prompt"])\ncounts["reranking"] -= 20\n'
            'counts["generation"] += 20\nresult = prompt_ceiling({"what if": counts}).to_dict("list")',
     "a dict of lists, not a table"),
    ("6.3", 'result = "1, 2"', "not a list of query ids"),
    ("6.3", 'result = ["13"]', "its bucket is none in oracle_traces"),
    ("6.4", "result = points", "count the claims the judge called sufficient"),
    ("6.5", "own_folder = Path(tempfile.mkdtemp(prefix='own-logs-'))\n"
            "shutil.copy(fixtures_dir() / 'incidents' / 'batch.jsonl', own_folder)\n"
            "result = attribution_table(load_run(own_folder).all_traces(), by=None)",
     "by=None pools every pipeline into one group"),
    ("6.5", "result = attribution_table(load_run(RUN_FOLDER).all_traces())", "load the folder you copied the batch"),
    ("6b.1", 'result = sum(r.bucket == "none" for r in outside) / len(outside)',
     "that is the judge's rate alone"),
    ("6b.1", 'B = "none"\nresult = sum(r.bucket == B for r in outside) / len(outside) + sum('
             "(r.bucket == B) - (labelled[r.query_id] == B) for r in inside) / len(inside)",
     "gold minus judge"),
    ("6b.2", "result = gold_needed(0.10, 0.04, 8000, 0.0)", "this is the gold-only number"),
    ("6b.2", "result = gold_needed(0.10, 0.08, 8000, indicator_correlation(0.10, 0.85, 0.03))",
     "half the interval's width"),
    ("6b.3", 'result = next(r for r in app_result.rows if r.stage == "generation")', "draw the larger sample"),
    ("7.1", "result = before", "set budget=None in the settings"),
    ("7.2", "result = before", "set k=2 in the settings"),
    ("7.3", 'labels = edited_labels("q12", gold=["1033"])\n'
            "result = (labels, ingest_openinference(before_spans, labels=labels, judge=judge_contains).traces)",
     "still holds its span"),
    ("7.3", "result = (LABELS, ingest_openinference(before_spans, labels=LABELS, judge=judge_contains).traces)",
     "does not name the document yet"),
    ("7.4", 'labels = edited_labels("q07", gold=["1042"])\n'
            "result = ingest_openinference(before_spans, labels=labels, judge=judge_contains).traces",
     "remove the gold_spans key of q07"),
    ("7.5", "result = compare(before, before)", "compare the 500-character run with the first run"),
    ("7.6", "result = before", "keep 2 of 10 retrieved chunks"),
    ("7.7", 'result = quote_label("q37", "By how much did zinc lozenges shorten common colds in adults?", texts, '
            '"1042", "zinc lozenges taken within a day of symptom onset shortened the duration of common colds '
            'by 33%")', "pass reference= with the short answer"),
    ("7.8", "result = agreement(verdicts.exact.tolist(), verdicts.judge.tolist())",
     "a question your judge calls right and the exact rule wrong"),
]

# Chapter 5's wrong answers read the committed mini run, not the chapter's own twenty-minute run.
CHAPTER_5 = ("from ragstage import compare\nfrom ragstage.fixtures import fixtures_dir\n"
             "from ragstage.report import comparison_table\nfrom ragstage.runs import load_run\n"
             "run = load_run(fixtures_dir() / 'mini_run')\n")


def _chapter(chapter: int | str, tmp_path) -> Chapter:
    if chapter != 5:
        return shared_chapter(ex_pkg.notebook(chapter))
    made = Chapter({}, tmp_path)
    run_solution(made, CHAPTER_5 + "result = run", "5 prelude")
    return made


def _gives_away(ex_id: str, problems: tuple[str, ...]) -> list[str]:
    """Expected values that a problem line's hint shows (the part after the reader's own value)."""
    shown = []
    for line in problems:
        for expect in exercise(ex_id).expects:
            head = f"{expect.what} is "
            if not line.startswith(head) or isinstance(expect.value, bool):
                continue
            hint = line.split(": ", 1)[1] if ": " in line else ""
            value = expect.value
            for form in ({f"{value:.3f}", f"{value:g}"} if isinstance(value, float) else {str(value)}):
                if re.search(rf"(?<![\w.']){re.escape(form)}(?![\w.'])", hint):
                    shown.append(form)
    return shown


def test_every_exercise_has_a_likely_wrong_answer():
    assert {ex.id for ex in exercises()} <= {ex_id for ex_id, _, _ in WRONG}


@pytest.mark.parametrize(("ex_id", "code", "hint"), WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_a_likely_wrong_answer_gets_its_hint_and_never_the_answer(ex_id, code, hint, tmp_path):
    chapter = _chapter(exercise(ex_id).chapter, tmp_path)
    outcome = check(ex_id, run_solution(chapter, code, ex_id))
    text = "\n".join(outcome.problems)
    assert not outcome.ok, f"{ex_id}: the wrong answer passed"
    assert hint in text, f"{ex_id}: expected the hint {hint!r}, got:\n{text}"
    if "the buckets are" in text:  # the slip lists every bucket name, the answer among the rest
        assert all(bucket in text for bucket in BUCKETS)
        return
    assert not _gives_away(ex_id, outcome.problems), f"{ex_id}: a hint shows the answer: {text}"
