"""The gate's outputs (JUnit XML, the Markdown summary, the verdict) carry hostile ids and messages inert.

CI systems read these files and this output as machines: an XML parser, a Markdown renderer
of ``$GITHUB_STEP_SUMMARY``, a runner that takes a line starting with ``::`` as a command.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from repo_paths import JUNIT_XSD

from ragstage import Trace, write_traces
from ragstage.gate import gate
from ragstage.rows import printable

XSD = JUNIT_XSD
HOSTILE_IDS = ["nul\u0000", "soh\u0001", "esc\u001b[31mred", "non\ufffe", "ffff\uffff", "lone\ud800",
               "x\n::error title=injected::boom", "cr\r## FAKE", "<b>&amp;</b>", "C:\\runs", "a|b`c``d",
               "\u202eevil", "line\u2028sep", "del\u007f", "c1\u0085"]
RIGHT = {"gold": ["d1"], "retrieved": ["d1"], "prompt": ["d1"], "answer_ids": ["d1"]}
FABRICATED = {"gold": ["d1"], "retrieved": ["d1"], "prompt": ["d1"], "answer": "Yes [3].", "correct": True}
BROKEN_BY_ERROR = {"gold": ["d1"], "retrieved": ["d1"],
                   "error": {"stage": "generation\r\n## FAKE",
                             "message": "<img src=x onerror=alert(1)> ![p](https://evil.example/p.png) C:\\runs"}}


def schema():
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def hostile_result(ids=HOSTILE_IDS):
    before = [Trace(query_id=q, **RIGHT) for q in ids]
    after = [Trace(query_id=q, **(BROKEN_BY_ERROR if i % 2 else FABRICATED)) for i, q in enumerate(ids)]
    return gate(before, after, names=("C:\\runs\\before.jsonl", "after`<img src=x>`.jsonl"))


def test_junit_with_hostile_ids_is_well_formed_and_valid(tmp_path):
    path = tmp_path / "gate.xml"
    path.write_text(hostile_result().to_junit(), encoding="utf-8")
    schema().validate(str(path))
    names = [c.get("name") for c in ET.parse(path).getroot().iter("testcase")]
    assert set(names) >= {printable(q) for q in HOSTILE_IDS}
    assert len(set(names) - {"verdict"}) == len(HOSTILE_IDS)  # still one case name per question


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), min_size=1))
def test_junit_is_valid_whatever_the_id(qid):
    xml = hostile_result([qid]).to_junit()
    schema().validate(ET.fromstring(xml.split("\n", 1)[1].encode("utf-8")))


def md_html(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_markdown_summary_carries_no_markup_from_data():
    result = hostile_result()
    markdown = result.to_markdown()
    page = md_html(markdown)
    assert "<img" not in page and "onerror=" not in page.replace("onerror=alert", "")  # only as escaped text
    assert "<b>" not in page and "FAKE</h2>" not in page and "<a " not in page
    headings = [line for line in page.splitlines() if line.startswith("<h")]
    assert headings == ["<h2>ragstage gate: FAIL</h2>", "<h3>Broken (7)</h3>", "<h3>Newly critical (8)</h3>",
                        "<h3>Bucket migration (rows: before, columns: after)</h3>"]
    # Each question is one row of two cells; its id is shown in a code span exactly as printable() writes it.
    rows = page.split("<h3>Broken (7)</h3>")[1].split("</table>")[0].split("<tr>")[2:]
    assert len(rows) == 7 and all(row.count("<td>") == 2 for row in rows)
    codes = [row.split("<code>")[1].split("</code>")[0] for row in rows]
    import html

    assert [html.unescape(c) for c in codes] == [printable(q) for q in HOSTILE_IDS[1::2]]
    assert "<code>C:\\runs\\before.jsonl</code>" in page  # backslashes not doubled in a code span
    assert "C:\\runs" in html.unescape(page.split("<h3>Broken")[1])  # nor in the message's text


def test_markdown_keeps_each_field_on_its_line():
    plain = gate([Trace(query_id=f"q{i}", **RIGHT) for i in range(len(HOSTILE_IDS))],
                 [Trace(query_id=f"q{i}", **(BROKEN_BY_ERROR if i % 2 else FABRICATED))
                  for i in range(len(HOSTILE_IDS))], names=("a", "b")).to_markdown()
    assert len(hostile_result().to_markdown().splitlines()) == len(plain.splitlines())


def ragstage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragstage.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_the_verdict_is_one_line_and_no_line_begins_with_data(tmp_path, fmt):
    ids = ["x\n::error title=injected::boom", "y\r\n::warning::w", "  ::notice::z", "PASS: fine"]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_traces(a, [Trace(query_id=q, **RIGHT) for q in ids])
    write_traces(b, [Trace(query_id=q, **FABRICATED) for q in ids])
    done = ragstage("compare", str(a), str(b), "--gate", "--format", fmt)
    assert done.returncode == 1, done.stderr
    verdict_stream = done.stdout if fmt == "table" else done.stderr
    assert verdict_stream.splitlines()[-1].startswith("FAIL (critical): 4 question(s) newly critical")
    for line in (done.stdout + done.stderr).splitlines():
        assert not line.lstrip().startswith("::") and not line.startswith(("x", "y", "PASS")), line
    message = gate([Trace(query_id=q, **RIGHT) for q in ids], [Trace(query_id=q, **FABRICATED) for q in ids])
    lines = message.failure_message().splitlines()
    assert len(lines) == 2 + len(ids) and all(not line.lstrip().startswith("::") for line in lines)
