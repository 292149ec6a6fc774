"""``ragstage annotate phoenix`` against a real Phoenix server on 127.0.0.1.

Chapter 7's LangChain app (eight requests, each built to lose its evidence at a known stage)
exports its spans over OTLP to a Phoenix server started here; ingest reads them back through the
client, ``ragstage annotate phoenix`` writes the diagnoses, and every request's annotations are
read back through Phoenix's own REST API (span annotations) and GraphQL (document annotations):
bucket, reason, the losing stage's span, the gold positions. A re-run leaves one annotation per
span; ``--dry-run`` writes nothing; traces with no source trace id are refused with a count.
One test opens the Phoenix UI in headless Chromium. Skipped locally without Phoenix; a failure
on CI (``CI=true``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_helpers import chromium_or_skip, free_port, require_distributions
from ingest_apps import LangChainApp
from processes import stop_group
from repo_paths import REPO
from stack_apps import LANGCHAIN_CASES, labels, langchain_ask

from ragstage import diagnose
from ragstage.annotate import annotate_phoenix
from ragstage.annotate.plan import LOSING_KIND, NAME, SOURCE_ID
from ragstage.ingest import ingest_spans
from ragstage.trace import Trace, read_traces, write_traces

PROJECT = "annotate-app"
EXPECTED = {c.query_id: c.expected for c in LANGCHAIN_CASES}
NEEDED = ("arize-phoenix", "arize-phoenix-client", "arize-phoenix-otel", "openinference-instrumentation-langchain",
          "langchain-community")
SCREENSHOT = REPO / "docs" / "images" / "phoenix-ragstage-annotation.png"
DOC_QUERY = ("query($id: ID!) { node(id: $id) { ... on Span { documentEvaluations "
             "{ name label documentPosition annotatorKind } } } }")


@dataclass
class Phoenix:
    process: subprocess.Popen
    base: str
    log: Path
    client: object = None
    traces_path: Path | None = None

    def call(self, path: str, body: dict | None = None, **params: object) -> dict:
        query = urllib.parse.urlencode(params, doseq=True)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}{path}?{query}", data=data,
                                         headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read())

    def spans(self) -> list[dict]:
        return self.call(f"/v1/projects/{PROJECT}/spans", limit=1000)["data"]

    def annotations(self, span_ids: list[str]) -> list[dict]:
        """Every span annotation named ragstage on these spans, through the REST API."""
        return self.call(f"/v1/projects/{PROJECT}/span_annotations", span_ids=span_ids,
                         include_annotation_names=NAME, limit=1000)["data"]

    def documents(self, span_gid: str) -> list[dict]:
        reply = self.call("/graphql", {"query": DOC_QUERY, "variables": {"id": span_gid}})
        assert "errors" not in reply, reply
        return [d for d in reply["data"]["node"]["documentEvaluations"] if d["name"] == NAME]

    def stop(self) -> None:
        stop_group(self.process)


def _boot(folder: Path) -> Phoenix:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHOENIX_")}
    env.update(PHOENIX_WORKING_DIR=str(folder), PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
               PHOENIX_GRPC_PORT=str(free_port()), PHOENIX_TELEMETRY_ENABLED="false",
               PHOENIX_ALLOW_EXTERNAL_RESOURCES="false", PHOENIX_AGENTS_DISABLE_BASH="true")
    log = folder / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return Phoenix(process, f"http://127.0.0.1:{port}", log)


def _wait(phx: Phoenix) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert phx.process.poll() is None, phx.log.read_text(errors="replace")[-3000:]
        try:
            with urllib.request.urlopen(phx.base + "/healthz", timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    pytest.fail("the Phoenix server did not answer within 240 s")


def _record(phx: Phoenix) -> int:
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from phoenix.otel import register

    provider = register(endpoint=phx.base + "/v1/traces", project_name=PROJECT, batch=True,
                        set_global_tracer_provider=False, verbose=False)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        app = LangChainApp()
        for case in LANGCHAIN_CASES:
            langchain_ask(app, case)
    finally:
        instrumentor.uninstrument()
        provider.force_flush()
        provider.shutdown()
    return len(LANGCHAIN_CASES)


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory):
    """A Phoenix server holding the app's eight requests, and the traces ingest read from it."""
    require_distributions(NEEDED, "the annotate phoenix tests")
    folder = tmp_path_factory.mktemp("annotate-phoenix")
    phx = _boot(folder)
    try:
        _wait(phx)
        _record(phx)
        from phoenix.client import Client

        phx.client = Client(base_url=phx.base)
        deadline = time.monotonic() + 60
        while True:  # the server stores received spans in the background
            try:
                spans = phx.client.spans.get_spans(project_identifier=PROJECT, limit=100_000)
            except Exception:  # noqa: BLE001 - 404 until the project's first span is stored
                spans = []
            result = ingest_spans(spans, labels=_labels(folder)) if spans else None
            if result is not None and len(result.traces) == len(EXPECTED) and not result.incomplete:
                break
            assert time.monotonic() < deadline, "Phoenix did not store the app's spans within 60 s"
            time.sleep(0.5)
        assert {t.query_id: diagnose(t).stage.value for t in result.traces} == EXPECTED
        phx.traces_path = folder / "traces.jsonl"
        write_traces(phx.traces_path, result.traces)
        yield phx
    finally:
        phx.stop()


def _labels(folder: Path) -> Path:
    path = folder / "labels.jsonl"
    path.write_text("".join(json.dumps(lb) + "\n" for lb in labels(LANGCHAIN_CASES)), encoding="utf-8")
    return path


def _cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", "annotate", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def _by_trace(phx: Phoenix) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for span in phx.spans():
        out.setdefault(span["context"]["trace_id"], []).append(span)
    return out


def _ragstage_annotations(phx: Phoenix) -> list[dict]:
    ids = [s["context"]["span_id"] for s in phx.spans()]
    return [a for a in phx.annotations(ids) if a["identifier"] == SOURCE_ID]


def test_dry_run_writes_nothing(phoenix):
    run = _cli("phoenix", phoenix.traces_path, "--url", phoenix.base, "--project", PROJECT, "--dry-run")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("would write: ") == len(EXPECTED)
    assert f"would write ragstage annotations for {len(EXPECTED)} request(s)" in run.stderr
    assert _ragstage_annotations(phoenix) == []


def _check_written(phx: Phoenix) -> None:
    traces = {t.meta["ingest"]["trace_id"]: t for t in read_traces(phx.traces_path)}
    spans_of = _by_trace(phx)
    annotations = _ragstage_annotations(phx)
    for tid, trace in traces.items():
        spans = {s["context"]["span_id"]: s for s in spans_of[tid]}
        mine = [a for a in annotations if a["span_id"] in spans]
        d = diagnose(trace)
        root = next(s for s in spans.values() if not s.get("parent_id"))
        on_root = [a for a in mine if a["span_id"] == root["context"]["span_id"]]
        assert len(on_root) == 1, (trace.query_id, mine)
        for a in mine:  # every ragstage annotation of the request says its bucket and reason
            r = a["result"]
            assert r["label"] == EXPECTED[trace.query_id] == d.stage.value
            assert r["explanation"] == (d.reason or f"bucket {d.stage.value}")
            assert a["metadata"]["code"] == d.code and a["annotator_kind"] == "CODE"
        losing = [spans[a["span_id"]] for a in mine if a["span_id"] != root["context"]["span_id"]]
        kind = LOSING_KIND.get(d.stage.value)
        if kind == "RETRIEVER":
            assert [s["name"] for s in losing] == ["BM25Retriever"], trace.query_id
        elif kind == "RERANKER":  # LangChain's reranker is a retriever wrapping BM25Retriever
            assert [s["name"] for s in losing] == ["OverlapReranker"], trace.query_id
        elif kind == "LLM":
            assert [s["span_kind"] for s in losing] == ["LLM"], trace.query_id
        elif d.stage.value == "endpoint_unavailable":
            assert len(losing) == 1 and losing[0]["status_code"] == "ERROR"
        else:
            assert losing == [], trace.query_id
        # gold positions: each retriever list's documents marked gold are exactly the gold ids it holds
        for span in spans.values():
            if span["span_kind"] != "RETRIEVER":
                continue
            ids = _chunk_ids(span["attributes"])
            want = sorted(i for i, cid in enumerate(ids) if cid in set(trace.gold))
            got = sorted(d["documentPosition"] for d in phx.documents(span["id"]))
            assert got == want, (trace.query_id, span["name"], ids, trace.gold)
    assert sum(bool(phx.documents(s["id"])) for v in spans_of.values() for s in v) >= 4  # gold was retrieved


def _chunk_ids(attrs: dict) -> list[str]:
    """The app's chunk ids (``<source>@<start_index>``) of a retriever span's documents, from the
    flat attribute keys the REST API returns (``retrieval.documents.<i>.document.metadata``)."""
    ids = []
    for i in range(len(attrs)):
        prefix = f"retrieval.documents.{i}.document.metadata"
        meta = attrs.get(prefix)
        if isinstance(meta, str):
            meta = json.loads(meta)
        if meta is None:
            meta = {k[len(prefix) + 1:]: v for k, v in attrs.items() if k.startswith(prefix + ".")}
        if not meta:
            break
        ids.append(f"{meta['source']}@{meta['start_index']}")
    return ids


def test_annotate_writes_every_request_and_reads_back(phoenix):
    run = _cli("phoenix", phoenix.traces_path, "--url", phoenix.base, "--project", PROJECT)
    assert run.returncode == 0, run.stderr
    assert f"{len(EXPECTED)} written, 0 not written" in run.stderr
    _check_written(phoenix)


def test_rerun_replaces_instead_of_piling_up(phoenix):
    before = _ragstage_annotations(phoenix)
    assert before, "runs after test_annotate_writes_every_request_and_reads_back"
    outcome = annotate_phoenix(phoenix.client, read_traces(phoenix.traces_path), PROJECT)
    assert outcome.complete and len(outcome.written) == len(EXPECTED)
    after = _ragstage_annotations(phoenix)
    assert sorted(a["span_id"] for a in after) == sorted(a["span_id"] for a in before)
    _check_written(phoenix)


def test_a_changed_diagnosis_moves_the_losing_stage_annotation(phoenix, tmp_path):
    """The request lost at reranking, re-diagnosed as a retrieval loss (its retriever list emptied):
    the reranker's ragstage annotation goes, the retriever gets one; other requests are untouched."""
    traces = list(read_traces(phoenix.traces_path))
    i = next(i for i, t in enumerate(traces) if t.query_id == "reranked-away")
    changed = Trace.from_row({**traces[i].to_dict(), "retrieved": [], "retrieved_scores": None,
                              "reranked": [], "reranked_scores": None})
    assert diagnose(changed).stage.value == "retrieval"
    others = [a for a in _ragstage_annotations(phoenix) if a["result"]["label"] != "reranking"]
    outcome = annotate_phoenix(phoenix.client, [changed], PROJECT)
    try:
        assert outcome.complete, outcome.summary()
        tid = changed.meta["ingest"]["trace_id"]
        spans = {s["context"]["span_id"]: s for s in _by_trace(phoenix)[tid]}
        mine = [a for a in _ragstage_annotations(phoenix) if a["span_id"] in spans]
        assert sorted(spans[a["span_id"]]["name"] for a in mine) == ["BM25Retriever", "RunnableSequence"]
        assert {a["result"]["label"] for a in mine} == {"retrieval"}
        assert [a for a in _ragstage_annotations(phoenix) if a["span_id"] not in spans] == others
    finally:  # put the real diagnosis back for the tests that follow
        assert annotate_phoenix(phoenix.client, traces[i:i + 1], PROJECT).complete


def test_a_changed_gold_moves_the_document_annotations(phoenix):
    """The gold of the request answered right moved to another passage of its retriever's list:
    the document annotation at the old position goes, one at the new position comes."""
    traces = list(read_traces(phoenix.traces_path))
    i = next(i for i, t in enumerate(traces) if t.query_id == "correct")
    tid = traces[i].meta["ingest"]["trace_id"]
    bm25 = next(s for s in _by_trace(phoenix)[tid] if s["name"] == "BM25Retriever")
    ids = _chunk_ids(bm25["attributes"])
    old = sorted(d["documentPosition"] for d in phoenix.documents(bm25["id"]))
    assert old == [k for k, cid in enumerate(ids) if cid in traces[i].gold] and len(ids) > len(old)
    new = next(k for k in range(len(ids)) if k not in old)
    changed = Trace.from_row({**traces[i].to_dict(), "gold": [ids[new]]})
    try:
        assert annotate_phoenix(phoenix.client, [changed], PROJECT).complete
        assert [d["documentPosition"] for d in phoenix.documents(bm25["id"])] == [new]
    finally:
        assert annotate_phoenix(phoenix.client, traces[i:i + 1], PROJECT).complete
    assert sorted(d["documentPosition"] for d in phoenix.documents(bm25["id"])) == old


def test_traces_without_a_source_id_are_refused_and_unknown_ids_counted(phoenix, tmp_path):
    traces = list(read_traces(phoenix.traces_path))
    bare = [Trace.from_row({**t.to_dict(), "meta": {}}) for t in traces[:2]]
    ghost = Trace.from_row({**traces[2].to_dict(), "meta": {"ingest": {"trace_id": "0" * 32}}})
    path = tmp_path / "mixed.jsonl"
    write_traces(path, [*bare, ghost, traces[3]])
    before = _ragstage_annotations(phoenix)
    run = _cli("phoenix", path, "--url", phoenix.base, "--project", PROJECT)
    assert run.returncode == 1, run.stderr
    assert "2 trace(s) refused: no source trace id" in run.stderr
    assert "1 trace(s) not written: the server has no trace with their id" in run.stderr
    assert "1 written, 3 not written" in run.stderr
    assert _keys(_ragstage_annotations(phoenix)) == _keys(before)  # the one written was rewritten as it was


def _keys(annotations: list[dict]) -> list[tuple]:
    return sorted((a["id"], a["span_id"], a["result"]["label"], a["result"]["explanation"]) for a in annotations)


def test_an_unreachable_server_is_retried_then_counted(phoenix, tmp_path):
    run = _cli("phoenix", phoenix.traces_path, "--url", f"http://127.0.0.1:{free_port()}", "--project", PROJECT,
               "--attempts", "2")
    assert run.returncode == 1
    assert f"{len(EXPECTED)} trace(s) not written after retries" in run.stderr and "Traceback" not in run.stderr


def test_the_phoenix_ui_shows_the_annotation_on_its_trace(phoenix, tmp_path):
    """The trace page of the request lost at reranking shows the ragstage annotation and its label
    (the screenshot goes to the docs' image when ``RAGSTAGE_DOCS_SCREENSHOTS=1``)."""
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    trace = next(t for t in read_traces(phoenix.traces_path) if t.query_id == "reranked-away")
    tid = trace.meta["ingest"]["trace_id"]
    project = phoenix.call("/v1/projects/" + PROJECT)["data"]["id"]
    assert _ragstage_annotations(phoenix), "runs after the annotate tests"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{phoenix.base}/projects/{project}/traces/{tid}", wait_until="networkidle", timeout=120_000)
            page.get_by_text("reranking").first.wait_for(timeout=60_000)
            assert page.get_by_text(NAME).count() >= 1
            shot = SCREENSHOT if os.environ.get("RAGSTAGE_DOCS_SCREENSHOTS") == "1" else tmp_path / SCREENSHOT.name
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
