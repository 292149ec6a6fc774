"""The SciFact-style pipeline: BEIR data, retrieval, reranking, prompt assembly, generation, runs.

Importing this package is cheap: torch, transformers, sentence-transformers and rank_bm25 are
imported inside the functions and classes that use them, so the attribution chapters never
pay for them.

Typical use::

    from ragstage.pipeline import choose_components, load_beir, make_retriever, NoReranker, Pipeline
    data = load_beir("fixtures/mini_scifact")
    models = choose_components(offline=True)          # the stand-ins; offline=False: the hub models
    pipe = Pipeline(make_retriever("bm25", data.corpus, models.embedder), NoReranker(), models.generator)
    result = pipe.run(data.queries, data.qrels, out="runs/bm25", data_info=data.meta)
"""

from .assembly import AssembledPrompt, assemble_prompt, format_passage
from .components import (
                         RERANKERS,
                         RETRIEVERS,
                         STANDIN,
                         Components,
                         choose_components,
                         generator_from_receipt,
                         make_embedder,
                         make_generator,
                         make_reranker,
                         make_retriever,
)
from .data import BeirData, Corpus, DataError, Qrels, hash_corpus, load_beir
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
from .oracle import GOLD_CONTEXT, data_for_receipt, gold_context_oracle
from .rerank import DEFAULT_CROSS_ENCODER, CrossEncoderReranker, NoReranker, RankFusionReranker, RerankerUnavailable
from .rerun import generate_on_saved_prompts
from .retrieval import BM25Retriever, DenseRetriever, tokenize
from .run import Pipeline, RunResult

__all__ = [
    "AssembledPrompt", "assemble_prompt", "format_passage",
    "RERANKERS", "RETRIEVERS", "STANDIN", "Components", "choose_components", "make_embedder", "make_generator",
    "make_reranker", "make_retriever", "generator_from_receipt",
    "BeirData", "Corpus", "DataError", "Qrels", "hash_corpus", "load_beir",
    "SCIFACT_MD5", "SCIFACT_URL", "DownloadError", "default_cache_dir", "fetch_beir_archive", "scifact",
    "DEFAULT_EMBEDDER", "Embedder",
    "DEFAULT_GENERATOR", "TEMPLATES", "GeneratorUnavailable", "HFGenerator", "PromptTemplate", "parse_answer",
    "render_messages",
    "ModelRef",
    "StandInError", "minilm_standin", "qwen_coder_standin",
    "GOLD_CONTEXT", "data_for_receipt", "gold_context_oracle",
    "DEFAULT_CROSS_ENCODER", "CrossEncoderReranker", "RankFusionReranker", "NoReranker", "RerankerUnavailable",
    "BM25Retriever", "DenseRetriever", "tokenize",
    "Pipeline", "RunResult", "generate_on_saved_prompts",
]
