"""The SciFact-style pipeline: BEIR data, retrieval, reranking, prompt assembly, generation, runs.

Importing this package is cheap: torch, transformers, sentence-transformers and rank_bm25 are
imported inside the functions and classes that use them, so the attribution chapters never
pay for them.

Typical use::

    from ragstage.pipeline import (load_beir, BM25Retriever, NoReranker, HFGenerator, Pipeline,
                                   qwen_coder_standin)
    data = load_beir("fixtures/mini_scifact")
    pipe = Pipeline(BM25Retriever(data.corpus), NoReranker(), HFGenerator(qwen_coder_standin()))
    result = pipe.run(data.queries, data.qrels, out="runs/bm25", data_info=data.meta)
"""

from .assembly import AssembledPrompt, assemble_prompt, format_passage
from .data import BeirData, DataError, hash_corpus, load_beir
from .download import SCIFACT_MD5, SCIFACT_URL, DownloadError, default_cache_dir, fetch_beir_archive, scifact
from .embedding import DEFAULT_EMBEDDER, Embedder
from .generation import (
                         DEFAULT_GENERATOR,
                         TEMPLATES,
                         GeneratorUnavailable,
                         HFGenerator,
                         PromptTemplate,
                         parse_answer,
                         render_messages,
)
from .models import ModelRef
from .offline import StandInError, minilm_standin, qwen_coder_standin
from .rerank import DEFAULT_CROSS_ENCODER, CrossEncoderReranker, DenseRescoreReranker, NoReranker, RerankerUnavailable
from .retrieval import BM25Retriever, DenseRetriever, tokenize
from .run import Pipeline, RunResult, generate_on_saved_prompts

__all__ = [
    "AssembledPrompt", "assemble_prompt", "format_passage",
    "BeirData", "DataError", "hash_corpus", "load_beir",
    "SCIFACT_MD5", "SCIFACT_URL", "DownloadError", "default_cache_dir", "fetch_beir_archive", "scifact",
    "DEFAULT_EMBEDDER", "Embedder",
    "DEFAULT_GENERATOR", "TEMPLATES", "GeneratorUnavailable", "HFGenerator", "PromptTemplate", "parse_answer",
    "render_messages",
    "ModelRef",
    "StandInError", "minilm_standin", "qwen_coder_standin",
    "DEFAULT_CROSS_ENCODER", "CrossEncoderReranker", "DenseRescoreReranker", "NoReranker", "RerankerUnavailable",
    "BM25Retriever", "DenseRetriever", "tokenize",
    "Pipeline", "RunResult", "generate_on_saved_prompts",
]
