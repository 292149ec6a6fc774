"""The conformance matrix: the same kinds of requests through every instrumentor that installs here.

Each stack's app (``tests/ingest_apps.py``, ``tests/stack_apps.py``) runs offline under a real
instrumentor (scripted models, BM25 retrieval), recorded once per test session in memory and as
an OTLP JSON Lines file (MLflow: its ``Trace`` objects); every request is built to lose its
evidence at a known stage, and every route must land every request in that bucket with default
options. Under ``CI=true`` a missing package fails the test instead of skipping it: the matrix is
only worth what it runs.

Routes: LangChain x (OpenInference, OpenLLMetry, MLflow autolog); LlamaIndex x (OpenInference,
OpenLLMetry) with a custom postprocessor, ``SimilarityPostprocessor`` and ``LLMRerank``; Haystack x
OpenInference; DSPy x OpenInference. OpenLIT and Ragas itself are not installed beside this
environment (docs/stacks.md names the requirement that clashes). ``pytest -s -k matrix_table`` prints
the table of every route's requests in their bucket (docs/stacks.md).
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Callable

import orjson
import pytest

from ragstage import diagnose
from ragstage.ingest import ingest_spans


def need(module: str) -> Any:
    """The module, or a skip (a failure under ``CI=true``)."""
    if os.environ.get("CI") == "true":
        return importlib.import_module(module)
    return pytest.importorskip(module)


def capture(folder: Any, instrumentor: Any, run: Callable[[], Any]) -> tuple[list[Any], Any]:
    need("opentelemetry.sdk")
    from stack_apps import capture as record

    return record(folder, instrumentor, run)


def _labels(folder: Any, rows: list[dict]) -> Any:
    path = folder / "labels.jsonl"
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def _record_langchain_openinference(folder: Any) -> tuple[list, list, Any, dict]:
    need("langchain_community")
    oi = need("openinference.instrumentation.langchain")
    from ingest_apps import LangChainApp
    from stack_apps import LANGCHAIN_CASES, labels, langchain_ask

    app = LangChainApp()
    memory, path = capture(folder, oi.LangChainInstrumentor(), lambda: [langchain_ask(app, c) for c in LANGCHAIN_CASES])
    return [memory, path], LANGCHAIN_CASES, _labels(folder, labels(LANGCHAIN_CASES)), {}


def _record_in_child(route: str, folder: Any) -> Any:
    """A route recorded in a process of its own (:data:`stack_apps.RECORDERS`): its OTLP file."""
    import subprocess
    import sys

    from repo_paths import REPO, TESTS

    path = folder / "spans.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS)])}
    run = subprocess.run([sys.executable, str(TESTS / "stack_apps.py"), route, str(path)], capture_output=True,
                         text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    return path


def _record_langchain_openllmetry(folder: Any) -> tuple[list, list, Any, dict]:
    """Recorded in a process of its own (see :func:`stack_apps.record_langchain_openllmetry`): the
    OTLP file is the one form; the SDK spans stay in that process."""
    need("langchain_community")
    need("opentelemetry.instrumentation.langchain")
    from stack_apps import LANGCHAIN_CASES, labels

    path = _record_in_child("langchain/openllmetry", folder)
    return [path, path], LANGCHAIN_CASES, _labels(folder, labels(LANGCHAIN_CASES)), {}


def _record_llamaindex_openllmetry(folder: Any) -> tuple[list, list, Any, dict]:
    """OpenLLMetry's LlamaIndex instrumentor, the question id set with Traceloop's association
    properties (see :func:`stack_apps.record_llamaindex_openllmetry`). A request that raises is
    never exported (the instrumentor does not end a span that failed): ``failing`` matches no
    request, and the summary names its label."""
    need("llama_index.core")
    need("opentelemetry.instrumentation.llamaindex")
    need("traceloop.sdk")
    from stack_apps import LLAMAINDEX_CASES, LLAMAINDEX_LINE_CASES, labels

    path = _record_in_child("llamaindex/openllmetry", folder)
    cases = LLAMAINDEX_CASES + LLAMAINDEX_LINE_CASES
    why = ("OpenLLMetry's LlamaIndex instrumentor never ends a span that raised, so the request is not exported; "
           "its label is named on stderr as matching no request")
    return [path, path], cases, _labels(folder, labels(cases)), {"failing": why}


def _record_langchain_mlflow(folder: Any) -> tuple[list, list, Any, dict]:
    """``mlflow.langchain.autolog()`` into a local store, the question id passed the LangChain way."""
    need("langchain_community")
    need("mlflow")
    from stack_apps import LANGCHAIN_CASES, labels, langchain_ask, mlflow_record

    _, traces = mlflow_record(folder, langchain_ask, LANGCHAIN_CASES)
    return [traces], LANGCHAIN_CASES, _labels(folder, labels(LANGCHAIN_CASES)), {}


def _record_llamaindex_openinference(folder: Any) -> tuple[list, list, Any, dict]:
    need("llama_index.core")
    oi = need("openinference.instrumentation.llama_index")
    from ingest_apps import LlamaIndexApp
    from stack_apps import LLAMAINDEX_CASES, LLAMAINDEX_LINE_CASES, labels, llamaindex_ask

    def run() -> None:
        app, lines = LlamaIndexApp(), LlamaIndexApp(line_breaks=True)
        for case in LLAMAINDEX_CASES:
            llamaindex_ask(app, case)
        for case in LLAMAINDEX_LINE_CASES:
            llamaindex_ask(lines, case)

    memory, path = capture(folder, oi.LlamaIndexInstrumentor(), run)
    cases = LLAMAINDEX_CASES + LLAMAINDEX_LINE_CASES
    return [memory, path], cases, _labels(folder, labels(cases)), {}


def _record_haystack_openinference(folder: Any) -> tuple[list, list, Any, dict]:
    need("haystack")
    oi = need("openinference.instrumentation.haystack")
    from stack_apps import HAYSTACK_CASES, HaystackApp, labels

    app = HaystackApp()
    memory, path = capture(folder, oi.HaystackInstrumentor(), lambda: [app.ask(c) for c in HAYSTACK_CASES])
    return [memory, path], HAYSTACK_CASES, _labels(folder, labels(HAYSTACK_CASES)), {}


def _record_dspy_openinference(folder: Any) -> tuple[list, list, Any, dict]:
    need("dspy")
    oi = need("openinference.instrumentation.dspy")
    from stack_apps import DSPY_CASES, DSPyApp, text_labels

    app = DSPyApp()
    memory, path = capture(folder, oi.DSPyInstrumentor(), lambda: [app.ask(c) for c in DSPY_CASES])
    return [memory, path], DSPY_CASES, _labels(folder, text_labels(DSPY_CASES)), {}


#: route -> how to record it: ([the export in each form read], the cases, the labels' path, the query
#: ids that may land in a not-observed bucket instead, each with a warning naming it: {id: why})
ROUTES: dict[str, Callable[[Any], tuple[list, list, Any, dict]]] = {
    "langchain/openinference": _record_langchain_openinference,
    "langchain/openllmetry": _record_langchain_openllmetry,
    "langchain/mlflow": _record_langchain_mlflow,
    "llamaindex/openinference": _record_llamaindex_openinference,
    "llamaindex/openllmetry": _record_llamaindex_openllmetry,
    "haystack/openinference": _record_haystack_openinference,
    "dspy/openinference": _record_dspy_openinference,
}


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: Any) -> Callable[[str], tuple[list, list, Any, dict]]:
    """Each route's export, recorded the first time a test asks for it in the session."""
    done: dict[str, tuple[list, list, Any, dict]] = {}

    def get(route: str) -> tuple[list, list, Any, dict]:
        if route not in done:
            done[route] = ROUTES[route](tmp_path_factory.mktemp(route.replace("/", "_")))
        return done[route]

    return get


def route_buckets(recorded_route: tuple[list, list, Any, dict], form: int) -> tuple[dict[str, str], Any]:
    """Each case's bucket by its query id (Haystack's requests are found by their question), and the result."""
    exports, cases, labels, _ = recorded_route
    result = ingest_spans(exports[form], labels)
    by_id = {t.query_id: t for t in result.traces}
    by_question = {t.query: t for t in result.traces}
    got = {}
    for case in cases:
        trace = by_id.get(case.query_id) or by_question.get(case.question)
        got[case.query_id] = diagnose(trace).stage.value if trace is not None else "(no trace)"
    return got, result


_ONE_FORM = {"langchain/mlflow": 0, "langchain/openllmetry": 1, "llamaindex/openllmetry": 1}  # Trace objects; OTLP
FORMS = [(route, _ONE_FORM[route]) if route in _ONE_FORM else (route, form) for route in ROUTES
         for form in ((0,) if route in _ONE_FORM else (0, 1))]


@pytest.mark.parametrize("route, form", FORMS, ids=[f"{r}-{'memory' if f == 0 else 'otlp'}" for r, f in FORMS])
def test_every_route_lands_every_request_in_its_bucket(recorded: Any, route: str, form: int) -> None:
    """Default options; a request the export cannot show may only land in a not-observed bucket,
    with a warning naming it."""
    got, result = route_buckets(recorded(route), form)
    _, cases, _, unobservable = recorded(route)
    expected = {c.query_id: c.expected for c in cases}
    wrong = {q: (got[q], expected[q]) for q in expected if got[q] != expected[q] and q not in unobservable}
    assert not wrong, f"{route}: (got, expected) {wrong}\n{result.summary()}"
    assert not result.incomplete
    assert {label.query_id for label in result.unmatched_labels} <= set(unobservable)
    summary = result.summary()
    for q in unobservable:  # not in its bucket: then named on stderr
        assert got[q] == expected[q] or f"'{q}'" in summary, f"{route}: {q} not named\n{summary}"


def matrix_table(recorded: Any) -> list[str]:
    """The conformance matrix as a Markdown table, from the routes' actual results: for each route,
    its requests in the bucket they were built for, and the others with what they got and why."""
    rows = ["| stack | instrumentor | requests in their bucket | not in it (got; why) |", "|---|---|---|---|"]
    for route in ROUTES:
        _, cases, _, unobservable = recorded(route)
        got, _ = route_buckets(recorded(route), _ONE_FORM.get(route, 1))
        off = [f"`{c.query_id}`: {got[c.query_id]}; {unobservable.get(c.query_id, 'WRONG BUCKET')}"
               for c in cases if got[c.query_id] != c.expected]
        inside = len(cases) - len(off)
        stack, instrumentor = route.split("/")
        rows.append(f"| {stack} | {instrumentor} | {inside} of {len(cases)} | {'<br>'.join(off) or '-'} |")
    return rows


def test_matrix_table(recorded: Any) -> None:
    """Every route in the table; no request outside its bucket without a reason (``-s`` prints it)."""
    rows = matrix_table(recorded)
    print("\n" + "\n".join(rows))
    assert len(rows) == 2 + len(ROUTES) and not any("WRONG BUCKET" in row for row in rows)


def test_llamaindex_llm_reranker_call_is_the_rerankers(recorded: Any) -> None:
    """LLMRerank's choice prompt (every candidate in full) is its own model call, said in the trace."""
    _, result = route_buckets(recorded("llamaindex/openinference"), 0)
    cut = next(t for t in result.traces if t.query_id == "llm-kept-then-cut")
    assert "stage_models" in cut.meta["ingest"] and cut.truncated


def test_dspy_answer_is_the_answer_field(recorded: Any) -> None:
    _, result = route_buckets(recorded("dspy/openinference"), 1)
    answers = {t.query_id: t.answer for t in result.traces}
    assert answers["unanswerable"] == "I don't know."  # not "[[ ## answer ## ]]\nI don't know."
    assert not result.unlocated


def test_openllmetry_is_named_in_the_summary_of_its_file(recorded: Any) -> None:
    exports, _, _, _ = recorded("langchain/openllmetry")
    _, result = route_buckets(recorded("langchain/openllmetry"), 1)
    line = next(x for x in result.summary().splitlines() if x.startswith(f"{exports[1]}: spans by convention: "))
    assert "OpenLLMetry (traceloop.*)" in line and not result.warnings


def test_field_answer_reads_the_answer_field() -> None:
    from ragstage.ingest.frameworks import field_answer

    assert field_answer("[[ ## answer ## ]]\nI don't know.\n\n[[ ## completed ## ]]") == "I don't know."
    assert field_answer("[[ ## reasoning ## ]]\nsteps\n[[ ## answer ## ]]\nTwo weeks.") == "Two weeks."
    assert field_answer("[[ ## summary ## ]]\nno answer field") == "[[ ## summary ## ]]\nno answer field"
    assert field_answer("Plain text.") == "Plain text."


def test_gold_text_label_is_checked() -> None:
    from ragstage.ingest.gold import parse_label
    from ragstage.ingest.spans import SpanError

    assert parse_label({"query_id": "q", "gold_text": ["A sentence."]}).targets == ("text:A sentence.",)
    for bad in ("A sentence.", [""], [3]):
        with pytest.raises(SpanError) as err:
            parse_label({"query_id": "q", "gold_text": bad})
        assert err.value.field == "gold_text"


def test_doctor_names_the_convention_and_what_it_cannot_show(recorded: Any) -> None:
    from ragstage.ingest.doctor import doctor_files

    exports, cases, labels, _ = recorded("langchain/openllmetry")
    report = doctor_files([str(exports[1])], labels=str(labels), recover_prompt=True)
    assert report.n == len(cases)  # every request read, not one
    assert any("OpenLLMetry (traceloop.*)" in n and "cannot show document ids" in n for n in report.notes)
