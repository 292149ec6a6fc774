"""Generation: versioned prompt templates, the answer parser, and a transformers generator.

The model is asked to name one abstract as ``ID: <id>``, or ``ID: NONE``. Two template
versions exist because the chapter compares them on the very same assembled prompts:

* ``original`` asks which abstract gives evidence for or against the claim;
* ``revised`` warns that an abstract may study the claim's question without settling it,
  asks for the most relevant abstract, and keeps NONE for abstracts on another topic.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, Sequence

from .models import LOAD_ERRORS, ModelSpec, as_model_ref, pick_device

__all__ = ["DEFAULT_GENERATOR", "DTYPES", "TEMPLATES", "PromptTemplate", "Generator", "GeneratorUnavailable",
           "HFGenerator", "parse_answer", "render_messages", "template_for"]

DEFAULT_GENERATOR = "Qwen/Qwen2.5-1.5B-Instruct"
#: Weight precisions a generator or judge can be loaded in (``--dtype``); None: the checkpoint's own.
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class PromptTemplate:
    """A named prompt wording; ``{claim}`` and ``{context}`` are filled in by :func:`render_messages`."""

    name: str
    system: str
    user: str

    def messages(self, claim: str, context: str) -> list[dict[str, str]]:
        """The system and user messages for one claim and its passages."""
        user = self.user.format(claim=claim, context=context or "(no abstracts fit in the prompt)")
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


_SYSTEM = "You check scientific claims against research abstracts. You answer with one line only."

TEMPLATES: dict[str, PromptTemplate] = {t.name: t for t in (
    PromptTemplate(
        "original", _SYSTEM,
        "Abstracts:\n{context}\n\nClaim: {claim}\n\n"
        "Which abstract, by its ID, gives evidence for or against the claim? "
        'Reply with exactly one line: "ID: <id>" for that abstract, or "ID: NONE" if no abstract '
        "gives evidence for or against it."),
    PromptTemplate(
        "revised", _SYSTEM,
        "Abstracts:\n{context}\n\nClaim: {claim}\n\n"
        "An abstract can study the same question as the claim without settling it; such an abstract "
        "still counts as relevant. Which abstract, by its ID, is the most relevant to the claim? "
        'Reply with exactly one line: "ID: <id>" for that abstract. Reply "ID: NONE" only if every '
        "abstract is about a different topic."),
)}


def template_for(version: str) -> PromptTemplate:
    """The template of a prompt version; ValueError naming the known ones for any other name."""
    try:
        return TEMPLATES[version]
    except KeyError:
        raise ValueError(f"unknown prompt version {version!r} (known: {', '.join(TEMPLATES)})") from None


def render_messages(version: str, claim: str, context: str) -> list[dict[str, str]]:
    """Chat messages for one claim and its assembled passages, in template ``version``."""
    return template_for(version).messages(claim, context)


_ANSWER = re.compile(r"\bID\b\s*[:#=]?\s*\[?\s*(NONE\b|[A-Za-z0-9](?:[\w\-./]*\w)?)", re.IGNORECASE)


def parse_answer(text: str) -> str | None:
    """The id named by the first ``ID: x`` in ``text``; ``"NONE"``; or None when there is none.

    Accepted: ``ID: 123``, ``id 123``, ``[ID 123]``, ``**ID: 123**.``, ``ID: none`` (→ "NONE").
    A bare number is not accepted: the prompt asks for the ``ID:`` form, and guessing at
    "the answer is 3 studies" would invent citations. Trailing punctuation is not part of an id.
    """
    match = _ANSWER.search(text)
    if match is None:
        return None
    value = match.group(1)
    return "NONE" if value.upper() == "NONE" else value


class GeneratorUnavailable(ValueError):
    """The generator's model or tokenizer could not be loaded."""


class Generator(Protocol):
    """What a pipeline needs from a generator (see :class:`HFGenerator`)."""

    name: str
    batch_size: int

    def describe(self) -> dict[str, Any]:
        """Model provenance and decoding settings: part of every generation's cache key."""
        ...

    def count_tokens(self, text: str) -> int:
        ...

    def chat_text(self, messages: list[dict[str, str]]) -> str:
        """The exact text the model reads (chat template applied, generation prompt added)."""
        ...

    def generate(self, texts: Sequence[str]) -> list[str]:
        """Raw outputs for one batch of :meth:`chat_text` strings."""
        ...


class HFGenerator:
    """A transformers causal LM: chat template, greedy decoding, left-padded batches.

    ``model`` is a hub id, a local folder, or a :class:`ModelRef` (use ``gguf_file`` for a
    GGUF checkpoint in that folder). The tokenizer is loaded on its own first, because prompt
    assembly needs only the tokenizer, and a fully cached run never loads the weights.

    ``dtype`` (a torch dtype name such as ``"bfloat16"``) loads the weights in that precision; a
    model loaded so can answer differently, so its name, which every trace and silver label
    records, says it (``"<model> in bfloat16"``). On two CPU cores with bfloat16 instructions it
    answers a 700-1,000-token prompt in about half the time of float32.
    """

    def __init__(self, model: ModelSpec = DEFAULT_GENERATOR, *, gguf_file: str | None = None, device: str = "auto",
                 max_new_tokens: int = 16, batch_size: int | None = None, dtype: str | None = None) -> None:
        ref = as_model_ref(model)
        self.ref = dataclasses.replace(ref, gguf_file=gguf_file) if gguf_file is not None else ref
        self.name = self.ref.name if dtype is None else f"{self.ref.name} in {dtype}"
        self.device_request = device
        self.max_new_tokens, self.dtype = max_new_tokens, dtype
        self._batch_size = batch_size

    @property
    def batch_size(self) -> int:
        """Prompts per ``generate`` call: as given, else 1 on a CPU and 8 on an accelerator.

        On two CPU cores a left-padded batch of four ~600-token prompts took 59 s against 54 s
        one by one (the work is compute-bound, and padding adds to it), so batching pays only
        on a GPU.
        """
        if self._batch_size is not None:
            return self._batch_size
        return 1 if self.device == "cpu" else 8

    def describe(self) -> dict[str, Any]:
        return {"model": self.ref.describe(), "dtype": self.dtype,
                "decoding": {"greedy": True, "max_new_tokens": self.max_new_tokens}}

    def _load_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"revision": self.ref.revision}
        if self.ref.gguf_file:
            kwargs["gguf_file"] = self.ref.gguf_file
        return kwargs

    @cached_property
    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(self.ref.source, **self._load_kwargs())
        except LOAD_ERRORS as exc:
            raise GeneratorUnavailable(f"cannot load the tokenizer of {self.ref.name}: "
                                       f"{str(exc).splitlines()[0] if str(exc) else exc!r}") from None
        if tok.chat_template is None:
            raise GeneratorUnavailable(f"{self.ref.name}: the tokenizer has no chat template")
        tok.padding_side = "left"  # decoder-only models continue from the right edge
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return tok

    @cached_property
    def device(self) -> str:
        return pick_device(self.device_request)

    @cached_property
    def model(self) -> Any:
        import torch
        from transformers import AutoModelForCausalLM

        kwargs = self._load_kwargs()
        if self.dtype is not None:
            kwargs["dtype"] = getattr(torch, self.dtype)
        try:
            model = AutoModelForCausalLM.from_pretrained(self.ref.source, **kwargs)
        except LOAD_ERRORS as exc:
            raise GeneratorUnavailable(f"cannot load {self.ref.name}: "
                                       f"{str(exc).splitlines()[0] if str(exc) else exc!r}") from None
        return model.to(self.device).eval()

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def chat_text(self, messages: list[dict[str, str]]) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def generate(self, texts: Sequence[str]) -> list[str]:
        import torch
        from transformers import GenerationConfig

        tok, model = self.tokenizer, self.model
        eos = model.generation_config.eos_token_id if model.generation_config.eos_token_id is not None \
            else tok.eos_token_id
        config = GenerationConfig(max_new_tokens=self.max_new_tokens, do_sample=False,
                                  pad_token_id=tok.pad_token_id, eos_token_id=eos)
        # The chat template already wrote every special token the model needs.
        batch = tok(list(texts), return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        with torch.inference_mode():
            out = model.generate(**batch, generation_config=config)
        new_tokens = out[:, batch["input_ids"].shape[1]:]
        return [tok.decode(row, skip_special_tokens=True) for row in new_tokens]
