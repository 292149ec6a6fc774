"""The case editor and the interval explorer, driven from Python as a reader would edit them."""

from __future__ import annotations

import pytest

from ragstage import BUCKETS, Outcome, Trace, diagnose, read_traces, wilson
from ragstage.fixtures import load_json, load_traces
from ragstage.widgets import CaseEditor, IntervalExplorer, css_name, parse_claims, parse_ids


@pytest.fixture
def editor(five_cases) -> CaseEditor:
    return CaseEditor(five_cases)


def stages(ed: CaseEditor) -> dict[str, str]:
    return {q: d.stage.value for q, d in ed.diagnoses.items()}


def test_five_cases_start_in_five_buckets(editor):
    assert stages(editor) == {"A": "retrieval", "B": "reranking", "C": "generation",
                              "D": "prompt_assembly", "E": "none"}
    assert editor.stage_labels["A"].value == "retrieval"
    assert editor.counts == {"retrieval": 1, "reranking": 1, "prompt_assembly": 1, "generation": 1, "none": 1}
    row = editor.table.set_index("stage").loc["none"]
    assert (row["count"], row["n"]) == (1, 5)
    assert (row["low"], row["high"]) == pytest.approx(wilson(1, 5))
    assert "reranking" in editor.table_html.value


def test_editing_a_field_rediagnoses_that_case_and_the_table(editor):
    editor.fields["A"]["retrieved"].value = "d1, d2, d3"
    assert editor.stage_labels["A"].value == "reranking"
    assert editor.diagnoses["A"].recall == 1.0
    assert editor.counts["reranking"] == 2 and "retrieval" not in editor.counts
    # the rest of the chain for A: keep d2 through reranking and the prompt, then name it
    editor.set_case("A", reranked="d2, d1", prompt="d2, d1")
    assert editor.stage_labels["A"].value == "generation"
    editor.set_case("A", answer_ids=["d2"])
    assert editor.stage_labels["A"].value == "none"
    assert editor.counts["none"] == 2
    row = editor.table.set_index("stage").loc["none"]
    assert (row["low"], row["high"]) == pytest.approx(wilson(2, 5))


def test_case_c_is_fixed_only_by_the_answer(editor):
    assert editor.set_case("C", correct=True).stage.value == "none"
    assert editor.set_case("C", correct=None, answer_ids="d1").stage.value == "generation"
    assert editor.diagnoses["C"].reason == "named a non-gold passage"


def test_judgment_widgets(editor):
    editor.fields["E"]["refused"].value = True
    assert editor.stage_labels["E"].value == "generation"
    assert "refused" in editor.reason_labels["E"].value
    editor.fields["E"]["refused"].value = False
    editor.fields["E"]["answerable"].value = False
    assert editor.stage_labels["E"].value == "missing_refusal"
    editor.fields["E"]["refused"].value = True
    assert editor.stage_labels["E"].value == "correct_refusal"
    editor.fields["E"]["answerable"].value = True
    editor.fields["E"]["refused"].value = False
    editor.fields["E"]["query_ok"].value = "false"
    assert editor.stage_labels["E"].value == "query_understanding"


def test_claims_and_null_prompt(editor):
    editor.set_case("C", answer_ids=None, claims="true, false")
    assert editor.diagnoses["C"].stage.value == "generation"
    assert editor.diagnoses["C"].support == 0.5
    editor.set_case("C", claims=[True, True])
    assert editor.diagnoses["C"].stage.value == "unjudged"  # supported is not correct
    editor.set_case("C", prompt="null")
    assert editor.diagnoses["C"].stage.value == "not_logged"
    assert editor.stage_labels["C"].value == "not_logged"
    assert editor.diagnoses["C"].retention is None
    assert "not logged" in editor.reason_labels["C"].value


def test_complete_is_an_editable_judgment(editor):
    assert editor.fields["A"]["complete"].value == "not set"
    assert "ragstage-field-A-complete" in editor.fields["A"]["complete"]._dom_classes
    editor.set_case("A", complete=False)
    assert editor.traces[0].complete is False
    assert editor.diagnoses["A"] == diagnose(editor.traces[0])
    editor.fields["A"]["complete"].value = "true"
    assert editor.traces[0].complete is True
    editor.reset()
    assert editor.traces[0].complete is None


def test_bucket_table_follows_the_attribution_bucket_order(editor):
    order = [b for b in BUCKETS if b in editor.counts]
    assert list(editor.counts) == order == list(editor.table["stage"])
    assert set(editor.counts) <= {s.value for s in Outcome}


@pytest.mark.parametrize("field,text,words", [
    ("retrieved", "d1 d2", "space"),
    ("claims", "maybe", "not true or false"),
    ("gold", "null", "cannot be null"),
])
def test_bad_input_shows_a_message_and_keeps_the_last_valid_case(editor, field, text, words):
    before = editor.diagnoses["B"]
    editor.fields["B"][field].value = text  # must not raise
    assert words in editor.messages["B"].value
    assert editor.diagnoses["B"] == before
    assert editor.stage_labels["B"].value == "reranking"
    # fixing the input clears the message
    editor.fields["B"][field].value = {"retrieved": "d1, d2", "claims": "", "gold": "d2"}[field]
    assert editor.messages["B"].value == ""


def test_scores_survive_an_edit_that_keeps_the_ids(editor):
    editor.set_case("B", retrieved="d2, d1")
    assert editor.traces[1].retrieved_scores == (10.8, 11.2)
    editor.set_case("B", retrieved="d2, d9")
    assert editor.traces[1].retrieved_scores is None


def test_require_all_and_reset():
    two = Trace(query_id="q", gold=["a", "b"], retrieved=["a", "x"], prompt=["a"], correct=True)
    ed = CaseEditor([two], require="all")
    assert ed.stage_labels["q"].value == "retrieval"
    assert ed.diagnoses["q"].recall == 0.5
    ed.set_case("q", retrieved="a, b", prompt="a, b")
    assert ed.stage_labels["q"].value == "none"
    ed.reset()
    assert ed.stage_labels["q"].value == "retrieval"
    assert ed.fields["q"]["retrieved"].value == "a, x"


def test_save_writes_the_edited_cases(editor, tmp_path):
    editor.set_case("A", retrieved="d1, d2")
    assert editor.save() is None and "file path" in editor.status.value
    target = tmp_path / "edited.jsonl"
    editor.path_box.value = str(target)
    editor.save_button.click()
    assert "saved 5 cases" in editor.status.value
    back = list(read_traces(target))
    assert [t.query_id for t in back] == list("ABCDE")
    assert back[0].retrieved == ("d1", "d2")
    assert back[0].retrieved_scores is None  # case A never had a score for d2
    assert back[1].retrieved_scores == (11.2, 10.8)  # untouched case B keeps its scores
    assert CaseEditor(back).stage_labels["A"].value == "reranking"
    assert editor.save(tmp_path / "no" / "such" / "dir.jsonl") is None
    assert "could not save" in editor.status.value


def test_css_classes_are_stable(editor):
    assert "ragstage-stage-A" in editor.stage_labels["A"]._dom_classes
    assert "ragstage-field-A-retrieved" in editor.fields["A"]["retrieved"]._dom_classes
    assert "ragstage-message-A" in editor.messages["A"]._dom_classes
    assert "ragstage-case-editor" in editor.widget._dom_classes
    assert css_name("handbook:leave") == "handbook_leave"


def test_editor_rejects_unusable_inputs():
    with pytest.raises(ValueError):
        CaseEditor([])
    t = Trace(query_id="q")
    with pytest.raises(ValueError):
        CaseEditor([t, t])
    with pytest.raises(ValueError):
        CaseEditor([t], require="most")
    ed = CaseEditor([t])
    with pytest.raises(KeyError):
        ed.set_case("nope", gold="a")
    with pytest.raises(KeyError):
        ed.set_case("q", colour="red")


def test_parsers():
    assert parse_ids(" d1 , d2, ") == ["d1", "d2"]
    assert parse_ids("") == []
    assert parse_ids("NULL") is None
    with pytest.raises(ValueError):
        parse_ids("null", nullable=False)
    assert parse_claims("T, no, 1") == [True, False, True]
    assert parse_claims("") is None


def test_interval_explorer_starts_at_eleven_of_fifteen():
    ex = IntervalExplorer()
    assert (ex.k, ex.n) == (11, 15)
    assert ex.wilson == pytest.approx((0.480, 0.891), abs=5e-4)
    assert ex.normal[1] > 0.95
    assert "0.480 to 0.891" in ex.text.value
    ax = ex.figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["11 of 15"]


def test_interval_explorer_caps_k_at_n():
    ex = IntervalExplorer(k=11, n=15)
    ex.n_slider.value = 5
    assert ex.k == 5 and ex.k_slider.max == 5
    assert ex.wilson[1] == 1.0
    assert "zero width" in ex.text.value
    ex.n_slider.value = 300
    ex.k_slider.value = 210
    assert ex.wilson == pytest.approx(wilson(210, 300))
    assert "210 of 300" in ex.text.value
    with pytest.raises(ValueError):
        IntervalExplorer(k=16, n=15)


def test_interval_explorer_draws_into_its_output_widget():
    ex = IntervalExplorer(k=3, n=10)
    (out,) = ex.output.outputs
    assert out["output_type"] == "display_data"
    assert out["data"]["image/png"].startswith("iVBOR")  # base64 of a PNG header
    first = ex.figure
    ex.k_slider.value = 4
    assert ex.figure is not first
    assert ex.output.outputs[0]["data"]["text/plain"] == "<interval plot: 4 of 10>"


def test_scores_label_follows_the_retrieved_list(editor):
    assert editor.score_labels["B"].value == "<small>retrieval scores: d1 11.2 · d2 10.8</small>"
    editor.set_case("B", retrieved="d2")
    assert editor.score_labels["B"].value == "<small>retrieval scores: d2 10.8</small>"
    editor.set_case("B", retrieved="d2, d7")
    assert editor.score_labels["B"].value == ""
    assert "ragstage-scores-B" in editor.score_labels["B"]._dom_classes


# -- inconsistent edits -------------------------------------------------------------------------
def test_an_id_no_earlier_stage_passed_on_is_named_in_a_warning(five_cases):
    corpus = [d["id"] for d in load_json("five_cases", "corpus.json")["documents"]]
    editor = CaseEditor(five_cases, corpus=corpus)
    assert all(w.value == "" for w in editor.warnings.values())
    d = editor.set_case("B", reranked="d1, d9")
    warning = editor.warnings["B"].value
    assert "d9" in warning and "never retrieved" in warning and "reranked: d9 not in the corpus" in warning
    assert editor.messages["B"].value == ""  # a warning, not a rejected input: the trace is diagnosed as typed
    assert d.stage.value == "reranking"
    editor.set_case("B", reranked="d2, d1", prompt="d2, d3")
    warning = editor.warnings["B"].value
    assert "prompt holds d3, not in reranked" in warning and "corpus" not in warning
    editor.reset()
    assert editor.warnings["B"].value == ""


def test_without_a_corpus_only_the_stage_order_is_checked(five_cases):
    editor = CaseEditor(five_cases)
    editor.set_case("A", reranked="", prompt="d7")
    warning = editor.warnings["A"].value
    assert "prompt holds d7, not in reranked" in warning and "corpus" not in warning


def test_the_editor_holds_the_not_relevance_cases_too(five_cases):
    others = load_traces("five_cases", "not_relevance.jsonl")
    editor = CaseEditor(five_cases + others)
    assert editor.set_case("G", gold="d3").stage.value == "none"
    assert editor.warnings["G"].value == ""
