"""BEIR loading and the mini corpus's promises (each stage can lose something)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import MINI

from ragstage.pipeline import DataError, load_beir
from ragstage.pipeline.data import doc_text, hash_corpus
from ragstage.pipeline.retrieval import tokenize


def test_mini_corpus_loads_as_beir():
    data = load_beir(MINI)
    assert 40 <= len(data.corpus) <= 60
    assert len(data.queries) == 13
    assert set(data.qrels) == set(data.queries)
    assert all(set(g) <= set(data.corpus) for g in data.qrels.values())
    assert data.corpus["1001"]["title"].startswith("Aspirin")


def test_mini_corpus_keeps_its_designed_traps():
    data = load_beir(MINI)
    # claim 1 shares no term with its only relevant abstract: BM25 cannot find it
    assert not set(tokenize(data.queries["1"])) & set(tokenize(doc_text(data.corpus["1001"])))
    # ten near-duplicate reports crowd a top-10 cut
    dups = [d for d in data.corpus.values() if d["title"].startswith("Vitamin D supplementation and fracture risk")]
    assert len(dups) >= 10
    # long abstracts: several hundred words each
    assert all(len(data.corpus[i]["text"].split()) > 300 for i in ("1031", "1032", "1033"))


def test_claim_9s_evidence_lies_past_what_minilm_reads():
    from transformers import AutoTokenizer

    from ragstage.pipeline import minilm_standin

    data = load_beir(MINI)
    source = minilm_standin().source
    window = json.loads((Path(source) / "sentence_bert_config.json").read_text())["max_seq_length"]
    pieces = AutoTokenizer.from_pretrained(source).tokenize(doc_text(data.corpus["1081"]))
    assert window == 256 and len(pieces) > window + 20
    seen = " ".join(pieces[:window]).replace(" ##", "")
    terms = set(tokenize(data.queries["9"])) - {"exposure"}  # "outdoor exposure" of the tags is seen, and harmless
    assert terms == {"neonicotinoid", "disrupts", "homing", "foraging", "honeybees"}
    assert not terms & set(tokenize(seen))                     # the bi-encoder never sees the bee result
    assert {"neonicotinoid", "homing", "foraging", "honeybees"} <= set(tokenize(doc_text(data.corpus["1081"])))
    # its neighbour in MiniLM's ranking, 1082, shares no term with the claim and is long (see the slow test)
    assert not set(tokenize(data.queries["9"])) & set(tokenize(doc_text(data.corpus["1082"])))
    assert len(data.corpus["1082"]["text"].split()) > 500


def _write_beir(root: Path, corpus: list[str], queries: list[str], qrels: list[str]) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("\n".join(corpus) + "\n")
    (root / "queries.jsonl").write_text("\n".join(queries) + "\n")
    (root / "qrels" / "test.tsv").write_text("\n".join(["query-id\tcorpus-id\tscore", *qrels]) + "\n")
    return root


GOOD_CORPUS = ['{"_id": "d1", "title": "T1", "text": "alpha"}', '{"_id": 2, "text": "beta"}']


def test_only_queries_with_positive_qrels_are_kept(tmp_path):
    data = load_beir(_write_beir(tmp_path, GOOD_CORPUS,
                                 ['{"_id": "q1", "text": "a?"}', '{"_id": "q2", "text": "b?"}',
                                  '{"_id": "q3", "text": "c?"}'],
                                 ["q1\td1\t1", "q2\t2\t0", "q3\t2\t2"]))
    assert list(data.queries) == ["q1", "q3"]
    assert data.qrels == {"q1": {"d1": 1}, "q3": {"2": 2}}
    assert data.corpus["2"] == {"title": "", "text": "beta"}  # numeric id read as text, title optional


@pytest.mark.parametrize("corpus, queries, qrels, needle", [
    (["{not json"], ['{"_id": "q1", "text": "a"}'], [], "corpus.jsonl, line 1: invalid JSON"),
    ([GOOD_CORPUS[0], '{"_id": "d3"}'], ['{"_id": "q1", "text": "a"}'], [], "corpus.jsonl, line 2, field 'text'"),
    ([GOOD_CORPUS[0], '{"_id": "d1", "text": "x"}'], [], [], "line 2, field '_id': duplicate document id"),
    (GOOD_CORPUS, ['{"text": "a"}'], [], "queries.jsonl, line 1, field '_id'"),
    (GOOD_CORPUS, ['{"_id": "q1", "text": "a"}'], ["q1\td1\tyes"], "test.tsv, line 2, field 'score'"),
    (GOOD_CORPUS, ['{"_id": "q1", "text": "a"}'], ["q1\td9\t1"], "test.tsv, line 2, field 'corpus-id'"),
    (GOOD_CORPUS, ['{"_id": "q1", "text": "a"}'], ["q9\td1\t1"], "line 2, field 'query-id'"),
    (GOOD_CORPUS, ['{"_id": "q1", "text": "a"}'], ["q1 d1 1"], "test.tsv, line 2: expected 3 tab-separated"),
])
def test_bad_lines_name_file_line_and_field(tmp_path, corpus, queries, qrels, needle):
    with pytest.raises(DataError) as info:
        load_beir(_write_beir(tmp_path, corpus, queries, qrels))
    assert needle in str(info.value)


def test_missing_header_and_missing_folder_are_clear(tmp_path):
    root = _write_beir(tmp_path / "a", GOOD_CORPUS, ['{"_id": "q1", "text": "a"}'], [])
    (root / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    with pytest.raises(DataError, match="line 1: expected the header"):
        load_beir(root)
    with pytest.raises(DataError, match="not a folder"):
        load_beir(tmp_path / "nowhere")
    with pytest.raises(DataError, match="dev.tsv: cannot open"):
        load_beir(root, split="dev")


def test_corpus_hash_follows_content_not_order(tmp_path):
    data = load_beir(MINI)
    reordered = dict(reversed(list(data.corpus.items())))
    assert hash_corpus(reordered) == data.corpus_hash
    edited = {**data.corpus, "1001": {**data.corpus["1001"], "text": data.corpus["1001"]["text"] + " More."}}
    assert hash_corpus(edited) != data.corpus_hash


def test_limit_keeps_file_order_and_qrels():
    data = load_beir(MINI).limit(3)
    assert list(data.queries) == ["1", "2", "3"] and set(data.qrels) == {"1", "2", "3"}
    with pytest.raises(ValueError):
        load_beir(MINI).limit(0)


def test_importing_the_pipeline_package_stays_cheap():
    code = ("import sys, ragstage.pipeline, ragstage.pipeline.cli_run; "
            "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers', 'rank_bm25') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
