"""Tiny models, built from a config in a temporary folder, for the offline pipeline tests.

Nothing here downloads anything: each builder makes a randomly initialised model small
enough to load in about a second, with a word-level tokenizer whose vocabulary is the mini
corpus's own words, and saves it the way the real model is distributed (sentence-transformers
folder, cross-encoder folder, causal LM with a chat template). The real loading code then runs
on these folders unchanged.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "fixtures" / "mini_scifact"

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def mini_words() -> list[str]:
    """Every lowercase word and punctuation mark of the mini corpus, queries and templates."""
    from ragstage.pipeline import TEMPLATES

    texts = [(MINI / name).read_text(encoding="utf-8") for name in ("corpus.jsonl", "queries.jsonl")]
    texts += [t.system + " " + t.user for t in TEMPLATES.values()]
    words = set()
    for text in texts:
        words.update(re.findall(r"\w+|[^\w\s]", text.lower()))
    return sorted(words)


def _bert_tokenizer(folder: Path) -> int:
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *mini_words()]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)
    return len(vocab)


def _bert_config(vocab_size: int, **extra: object) -> object:
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=512, **extra)


def tiny_embedder(root: Path) -> Path:
    """A 1-layer BertModel saved as a sentence-transformers model (mean pooling)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertModel

    torch.manual_seed(0)
    hf = root / "tiny-bert"
    size = _bert_tokenizer(hf)
    BertModel(_bert_config(size)).save_pretrained(hf)
    st = root / "tiny-embedder"
    SentenceTransformer(modules=[Transformer(str(hf)), Pooling(32, "mean")]).save(str(st))
    return st


def tiny_cross_encoder(root: Path) -> Path:
    """A 1-layer BertForSequenceClassification with one label: the shape of a ms-marco cross-encoder."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(1)
    folder = root / "tiny-cross-encoder"
    size = _bert_tokenizer(folder)
    BertForSequenceClassification(_bert_config(size, num_labels=1)).save_pretrained(folder)
    return folder


def tiny_generator(root: Path) -> Path:
    """A 1-layer Qwen2ForCausalLM with a byte-level BPE tokenizer (trained on the mini corpus) and ChatML.

    Byte-level BPE like Qwen's own: transformers rebuilds a Qwen2 tokenizer from the saved
    vocabulary and merges, so any other tokenizer model would not survive the reload.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from ragstage.pipeline import TEMPLATES

    torch.manual_seed(2)
    folder = root / "tiny-generator"
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    texts = [(MINI / name).read_text(encoding="utf-8") for name in ("corpus.jsonl", "queries.jsonl")]
    texts += [t.system + " " + t.user for t in TEMPLATES.values()]
    core.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=1500, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(folder)
    config = Qwen2Config(vocab_size=core.get_vocab_size(), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=4096, eos_token_id=core.token_to_id("<|im_end|>"),
                         pad_token_id=core.token_to_id("<|endoftext|>"), tie_word_embeddings=True,
                         initializer_range=0.5)  # a wide init gives varied (not constant) outputs
    Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder


@functools.cache
def mini_data() -> object:
    """The mini corpus as BEIR data, read once per test session (tests must not mutate it)."""
    from ragstage.pipeline import load_beir

    return load_beir(MINI)


@functools.cache
def tiny_hf_generator() -> object:
    """An HFGenerator on the tiny causal LM: CPU, batches of 4 (the batching path gets exercised)."""
    from ragstage.pipeline import HFGenerator

    return HFGenerator(str(tiny_models().generator), device="cpu", batch_size=4)


class TinyModels:
    """Folders of the three tiny models, built once per test session (about 5 s)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.embedder = tiny_embedder(root)
        self.cross_encoder = tiny_cross_encoder(root)
        self.generator = tiny_generator(root)


@functools.cache
def tiny_models() -> TinyModels:
    """Built into a temporary folder that is removed when the test process exits."""
    root = Path(tempfile.mkdtemp(prefix="ragstage-tiny-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return TinyModels(root)


class CountingGenerator:
    """Wraps a generator: counts the prompts it is asked for, and can fail after ``fail_after``.

    The failure stands in for a killed process: everything generated before it must survive.
    """

    def __init__(self, inner: object, fail_after: int | None = None) -> None:
        self.inner = inner
        self.fail_after = fail_after
        self.seen: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def generate(self, texts: list[str]) -> list[str]:
        if self.fail_after is not None and len(self.seen) + len(texts) > self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.seen.extend(texts)
        return self.inner.generate(texts)
