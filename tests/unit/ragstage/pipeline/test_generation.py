"""Prompt templates, answer parsing and the generator (ragstage.pipeline.generation)."""

from __future__ import annotations

import pytest
from pipeline_helpers import tiny_models

from ragstage.pipeline import (
    TEMPLATES,
    HFGenerator,
    parse_answer,
    render_messages,
)
from ragstage.pipeline.generation import GeneratorUnavailable


@pytest.mark.parametrize("text, expected", [
    ("ID: 1234", "1234"), ("id 77", "77"), ("[ID 4983]", "4983"), ("**ID: 12**.", "12"),
    ("ID: 12.", "12"), ("ID: NONE", "NONE"), ("id: none of them", "NONE"), ("ID:abc-9", "abc-9"),
    ("The abstract ID: 5 and ID: 6", "5"), ("VALID: 5", None), ("The answer is 12", None), ("", None),
    ("ID: <id>", None),
])
def test_parse_answer(text, expected):
    assert parse_answer(text) == expected


def test_templates_are_versioned_and_differ_as_documented():
    assert set(TEMPLATES) == {"original", "revised"}
    original = render_messages("original", "CLAIM", "[ID 1] CONTEXT")[1]["content"]
    revised = render_messages("revised", "CLAIM", "[ID 1] CONTEXT")[1]["content"]
    for text in (original, revised):
        assert "CLAIM" in text and "[ID 1] CONTEXT" in text and '"ID: NONE"' in text and '"ID: <id>"' in text
    assert "for or against" in original and "without settling it" in revised and "different topic" in revised
    assert "no abstracts fit" in render_messages("original", "c", "")[1]["content"]
    with pytest.raises(ValueError, match="known: original, revised"):
        render_messages("v3", "c", "x")


def test_tiny_generator_greedy_left_padded_batches_match_single_prompts():
    generator = HFGenerator(str(tiny_models().generator), device="cpu", max_new_tokens=16)
    short = generator.chat_text(render_messages("original", "Zinc shortens colds.", "[ID 1041] Zinc trial."))
    long = generator.chat_text(render_messages("revised", "Lithium lowers suicide rates in bipolar disorder.",
                                               "[ID 1091] " + "A nationwide cohort of patients. " * 20))
    assert short.endswith("<|im_start|>assistant\n") and generator.count_tokens(long) > generator.count_tokens(short)
    batched = generator.generate([short, long])
    assert batched == [generator.generate([short])[0], generator.generate([long])[0]]
    assert len(set(batched)) == 2  # the tiny model is random but not constant: the check has teeth
    shorter = HFGenerator(str(tiny_models().generator), device="cpu", max_new_tokens=4).generate([short, long])
    for four, sixteen in zip(shorter, batched):  # greedy: 4 new tokens are the start of 16
        assert sixteen.startswith(four) and len(four) < len(sixteen)
    assert generator.describe()["decoding"] == {"greedy": True, "max_new_tokens": 16}


def test_missing_generator_is_a_one_line_user_error(tmp_path):
    with pytest.raises(GeneratorUnavailable, match="cannot load the tokenizer"):
        HFGenerator(str(tmp_path / "nothing")).count_tokens("x")


def test_a_dtype_loads_the_weights_in_it_and_is_named_wherever_answers_are_recorded():
    import torch

    from ragstage.judge.run import judge_generator, judge_info
    from ragstage.pipeline.components import make_generator

    path = str(tiny_models().generator)
    plain, half = HFGenerator(path, device="cpu"), make_generator(path, device="cpu", dtype="bfloat16")
    assert half.model.dtype == torch.bfloat16 and plain.model.dtype == torch.float32
    assert half.name == f"{plain.name} in bfloat16"          # traces and receipts record .name
    assert half.describe()["dtype"] == "bfloat16" != plain.describe()["dtype"]   # the generation cache key
    text = half.chat_text(render_messages("original", "Zinc shortens colds.", "[ID 1041] Zinc trial."))
    assert isinstance(half.generate([text])[0], str)
    judge = judge_generator(path, device="cpu", dtype="bfloat16")
    assert judge_info(judge).model.endswith(" in bfloat16")   # silver labels name the precision too
