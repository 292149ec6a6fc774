"""A real Phoenix server, offline: chapter 7's LangChain app under OpenInference's LangChain
instrumentor exports over OTLP HTTP to a Phoenix server this module starts on 127.0.0.1, and the
spans are read back every way a practitioner reads them, each ingested with default options.

Routes: the client's ``get_spans_dataframe`` (and pulls cut by a too-small ``limit``), the
client's list API ``get_spans``, the two REST endpoints the UI's span downloads are built from
(``/v1/projects/{p}/spans/otlpv1`` wrapped as OTLP JSON, ``/v1/projects/{p}/spans`` as JSON
Lines), the frame saved as Parquet (a file and a folder), and one app run twice into one project.
Every request is built to lose its evidence at a known stage (``tests/stack_apps.py``) and must
land in that bucket. Skipped locally when Phoenix is not installed; a failure on CI (``CI=true``).
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

import orjson
import pytest
from browser_helpers import free_port, require_distributions
from ingest_apps import LangChainApp
from processes import stop_group
from stack_apps import CASES, LANGCHAIN_CASES, labels, langchain_ask

from ragstage import diagnose
from ragstage.ingest import SpanError, ingest_spans
from ragstage.ingest.phoenix import CLIENT_LIMIT
from ragstage.trace import read_traces

EXPECTED = {c.query_id: c.expected for c in LANGCHAIN_CASES}
PROJECT, TWICE = "rag-app", "rag-app-twice"
#: What the module needs (distribution names: importing ``phoenix`` itself takes half a minute).
NEEDED = ("arize-phoenix", "arize-phoenix-client", "arize-phoenix-otel", "openinference-instrumentation-langchain",
          "langchain-community", "pyarrow")
BOOT_SECONDS = 240  # a cold server on a loaded two-core machine runs its migrations in ~40 s


@dataclass
class Server:
    """A Phoenix server process in its own process group, and where it answers."""

    process: subprocess.Popen
    base: str
    log: Path

    def wait_ready(self) -> None:
        deadline = time.monotonic() + BOOT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"the Phoenix server exited with {self.process.returncode}:\n{self._tail()}")
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        pytest.fail(f"the Phoenix server did not answer within {BOOT_SECONDS} s:\n{self._tail()}")

    def get(self, path: str, **params: object) -> dict:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        with urllib.request.urlopen(f"{self.base}{path}?{query}", timeout=30) as reply:
            return json.loads(reply.read())

    def pages(self, path: str, limit: int) -> list[dict]:
        """Every item of a cursor-paged endpoint, as the UI's download fetches them."""
        items, cursor = [], None
        while True:
            page = self.get(path, limit=limit, cursor=cursor)
            items += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def stop(self) -> None:
        stop_group(self.process)

    def _tail(self) -> str:
        return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-30:])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Phoenix server started now on free ports of 127.0.0.1 (waited for by its first user, so
    the slow imports of the app overlap its boot); stopped with its process group afterwards."""
    require_distributions(NEEDED, "the Phoenix server test")
    folder = tmp_path_factory.mktemp("phoenix-server")
    port, grpc_port = free_port(), free_port()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("PHOENIX_")}  # no outside database
    env = {**inherited, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc_port), "PHOENIX_TELEMETRY_ENABLED": "false",
           "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false", "PHOENIX_AGENTS_DISABLE_BASH": "true"}
    log = folder / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    srv = Server(process, f"http://127.0.0.1:{port}", log)
    try:
        yield srv
    finally:
        srv.stop()


def _run_app(server: Server, project: str, cases: list, times: int) -> list:
    """Run the requests ``times`` times into ``project`` over OTLP HTTP; the SDK spans sent."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from phoenix.otel import register

    server.wait_ready()
    provider = register(endpoint=server.base + "/v1/traces", project_name=project, batch=True,
                        set_global_tracer_provider=False, verbose=False)
    sent = InMemorySpanExporter()  # what went out: the test knows when the server has it all
    # phoenix.otel's provider drops its own exporter to Phoenix when given another processor, unless told
    provider.add_span_processor(SimpleSpanProcessor(sent), replace_default_processor=False)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        app = LangChainApp()
        for _ in range(times):
            for case in cases:
                langchain_ask(app, case)
    finally:
        instrumentor.uninstrument()
        provider.force_flush()
        provider.shutdown()
    return list(sent.get_finished_spans())


@dataclass
class Run:
    server: Server
    client: object
    label_path: Path
    spans: list  # the SDK spans sent into PROJECT
    sent_twice: int  # spans sent into TWICE

    @property
    def sent(self) -> int:
        return len(self.spans)

    def frame(self, project: str = PROJECT, **kwargs: object):
        return self.client.spans.get_spans_dataframe(project_identifier=project, **kwargs)


@pytest.fixture(scope="module")
def phoenix_run(server, tmp_path_factory):
    spans = _run_app(server, PROJECT, LANGCHAIN_CASES, 1)
    sent_twice = len(_run_app(server, TWICE, CASES, 2))
    from phoenix.client import Client

    client = Client(base_url=server.base)
    deadline = time.monotonic() + 60  # the server inserts received spans in the background
    for project, n in ((PROJECT, len(spans)), (TWICE, sent_twice)):
        while (stored := len(client.spans.get_spans_dataframe(project_identifier=project, limit=1_000_000))) < n:
            assert time.monotonic() < deadline, f"Phoenix stored {stored} of the {n} spans sent to {project}"
            time.sleep(0.5)
    folder = tmp_path_factory.mktemp("phoenix-labels")
    label_path = folder / "labels.jsonl"
    label_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels(LANGCHAIN_CASES)))
    return Run(server, client, label_path, spans, sent_twice)


def _buckets(traces) -> dict[str, str]:
    return {t.query_id: diagnose(t).stage.value for t in traces}


def _cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *map(str, args)], capture_output=True, text=True)


def _ingest_cli(path: Path, label_path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return _cli("ingest", "spans", path, "--labels", label_path, "--out", out, *extra)


def test_client_dataframe_with_default_options(phoenix_run):
    frame = phoenix_run.frame(limit=1_000_000)
    assert len(frame) == phoenix_run.sent
    result = ingest_spans(frame, labels=phoenix_run.label_path)
    assert _buckets(result.traces) == EXPECTED
    assert not result.incomplete and not result.unlocated and not result.unmatched_labels and not result.warnings
    cut = next(t for t in result.traces if t.query_id == "cut")
    assert cut.truncated and "truncated" in diagnose(cut).reason
    reranked = next(t for t in result.traces if t.query_id == "reranked-away")
    assert len(reranked.reranked) == 1 and "OverlapReranker" in reranked.meta["ingest"]["reranking"]
    # the round trip through the server loses nothing: the spans as the SDK sent them give the same traces
    sdk = ingest_spans(phoenix_run.spans, labels=phoenix_run.label_path)
    assert {t.query_id: t.to_dict() for t in sdk.traces} == {t.query_id: t.to_dict() for t in result.traces}


def test_the_client_default_limit_is_the_one_ingest_warns_about(phoenix_run):
    import inspect

    for method, default in ((phoenix_run.client.spans.get_spans_dataframe, CLIENT_LIMIT),
                            (phoenix_run.client.spans.get_spans, 100)):
        assert inspect.signature(method).parameters["limit"].default == default


def test_every_pull_cut_by_a_limit_is_loud(phoenix_run):
    """Each limit from one span to all but one: a request cut in two is named as incomplete and
    never written; every request written lands in its bucket; the rest are labels with no request.

    A pull with ``limit=n`` is the first n rows of the full pull (checked on real pulls at a few
    limits), so every limit is tried on those rows."""
    full = phoenix_run.frame(limit=1_000_000)
    for limit in (1, phoenix_run.sent // 2, phoenix_run.sent - 1):
        assert list(phoenix_run.frame(limit=limit).index) == list(full.index[:limit])
    spans_of = full["context.trace_id"].value_counts().to_dict()
    for limit in range(1, phoenix_run.sent):
        frame = full.iloc[:limit]
        result = ingest_spans(frame, labels=phoenix_run.label_path)
        seen = frame["context.trace_id"].value_counts().to_dict()
        cut = {trace for trace, n in seen.items() if n < spans_of[trace]}
        assert set(result.incomplete) == cut, limit
        got = _buckets(result.traces)
        assert got == {q: EXPECTED[q] for q in got}, limit
        assert len(got) + len(result.unmatched_labels) == len(EXPECTED), limit
        summary = result.summary()
        if cut:
            assert f"{len(cut)} incomplete request(s) not written" in summary and sorted(cut)[0] in summary


def test_a_cut_pull_saved_as_parquet_is_loud_on_the_command_line(phoenix_run, tmp_path):
    frame = phoenix_run.frame(limit=phoenix_run.sent // 2)
    full = phoenix_run.frame(limit=1_000_000)
    spans_of = full["context.trace_id"].value_counts()
    cut = sorted(t for t, n in frame["context.trace_id"].value_counts().items() if n < spans_of[t])
    assert len(cut) == 1
    path, out = tmp_path / "cut.parquet", tmp_path / "cut.traces.jsonl"
    frame.to_parquet(path)
    run = _ingest_cli(path, phoenix_run.label_path, out)
    assert run.returncode == 0, run.stderr
    assert "1 incomplete request(s) not written" in run.stderr and cut[0] in run.stderr
    assert "label(s) matched no request" in run.stderr
    assert cut[0] not in {t.meta.get("ingest", {}).get("trace_id") for t in read_traces(out)}
    strict = _ingest_cli(path, phoenix_run.label_path, tmp_path / "strict.jsonl", "--strict")
    assert strict.returncode == 1 and "incomplete" in strict.stderr


def test_client_span_list(phoenix_run):
    spans = phoenix_run.client.spans.get_spans(project_identifier=PROJECT, limit=1_000_000)
    assert len(spans) == phoenix_run.sent
    result = ingest_spans(spans, labels=phoenix_run.label_path)
    assert _buckets(result.traces) == EXPECTED and not result.incomplete and not result.warnings


def test_client_span_list_at_its_default_limit_is_loud(phoenix_run):
    assert phoenix_run.sent_twice > 100  # the list API's default limit cuts this project
    spans = phoenix_run.client.spans.get_spans(project_identifier=TWICE)
    result = ingest_spans(spans, labels=phoenix_run.label_path, split_runs=True)
    assert len(spans) == 100
    assert any("limit" in w and "100" in w for w in result.warnings)
    assert result.incomplete or len(result.traces) < 2 * len(CASES)


def test_ui_download_routes_through_the_cli(phoenix_run, tmp_path):
    """The spans of the two REST endpoints the UI's downloads read, paged by cursor, written as
    the UI writes them, through ``ragstage ingest spans``."""
    srv = phoenix_run.server
    otlp = srv.pages(f"/v1/projects/{PROJECT}/spans/otlpv1", limit=7)
    objects = srv.pages(f"/v1/projects/{PROJECT}/spans", limit=7)
    assert len(otlp) == len(objects) == phoenix_run.sent
    otlp_path, jsonl_path = tmp_path / "spans.json", tmp_path / "spans.jsonl"
    otlp_path.write_bytes(orjson.dumps({"resource_spans": [{"scope_spans": [{"spans": otlp}]}]}))
    jsonl_path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objects))
    for path, said in ((otlp_path, "OTLP JSON (snake_case keys)"), (jsonl_path, "Phoenix span JSON Lines")):
        out = tmp_path / (path.stem + path.suffix.replace(".", "-") + ".traces.jsonl")
        run = _ingest_cli(path, phoenix_run.label_path, out)
        assert run.returncode == 0, run.stderr
        assert f"read {path}: {said}, {phoenix_run.sent} span(s)" in run.stderr
        assert "incomplete" not in run.stderr and "warning" not in run.stderr
        assert _buckets(read_traces(out)) == EXPECTED, path


def test_saved_frame_as_parquet_file_and_folder_through_the_cli(phoenix_run, tmp_path):
    frame = phoenix_run.frame(limit=1_000_000)
    file, folder = tmp_path / "spans.parquet", tmp_path / "spans"
    frame.to_parquet(file)
    folder.mkdir()
    third = len(frame) // 3 + 1
    for i in range(3):
        frame.iloc[i * third:(i + 1) * third].to_parquet(folder / f"part-{i}.parquet")
    for path in (file, folder):
        out = tmp_path / f"{path.name}.traces.jsonl"
        run = _ingest_cli(path, phoenix_run.label_path, out)
        assert run.returncode == 0, run.stderr
        assert "a Phoenix spans frame (Parquet)" in run.stderr and "incomplete" not in run.stderr
        assert _buckets(read_traces(out)) == EXPECTED, path


def test_two_runs_in_one_project_name_the_source_and_split(phoenix_run, tmp_path):
    frame = phoenix_run.frame(TWICE, limit=1_000_000)
    assert len(frame) == phoenix_run.sent_twice
    path = tmp_path / "twice.parquet"
    frame.to_parquet(path)
    out = tmp_path / "twice.traces.jsonl"
    run = _ingest_cli(path, phoenix_run.label_path, out)
    assert run.returncode != 0 and str(path) in run.stderr and "--split-runs" in run.stderr
    assert "Traceback" not in run.stderr and not out.exists()
    with pytest.raises(SpanError, match="a Phoenix spans DataFrame") as raised:  # from Python: the frame is named
        ingest_spans(frame, labels=phoenix_run.label_path)
    assert "split_runs=True" in str(raised.value)
    run = _ingest_cli(path, phoenix_run.label_path, out, "--split-runs")
    assert run.returncode == 0, run.stderr
    traces = list(read_traces(out))
    expected = {c.query_id: c.expected for c in CASES}
    for pipeline in ("default", "default#2"):
        assert _buckets(t for t in traces if t.pipeline == pipeline) == expected, pipeline
    assert len(traces) == 2 * len(CASES)
