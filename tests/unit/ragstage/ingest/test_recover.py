"""Prompt-id recovery: which passages a prompt holds whole, which cut (ragstage.ingest.recover)."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.ingest import (
    normalise,
    recover_prompt_ids,
)
from ragstage.ingest.recover import MIN_FRAGMENT


def test_whole_passages_are_in_the_prompt_and_cut_ones_are_truncated():
    contents = {"a": "Alpha passage about fever and aspirin dosage.", "b": "Beta passage  about\nthe hotel cap of "
                "140 euros per night in most cities.", "c": "Gamma passage never shown to the model at all."}
    prompt = "Context:\n" + contents["a"] + "\n\n" + " ".join(contents["b"].split()[:7])
    found = recover_prompt_ids(contents, prompt)
    assert found.prompt == ("a",) and found.truncated == ("b",)


def test_whitespace_is_normalised_both_sides():
    assert normalise("  a\n\tb   c ") == "a b c"
    assert recover_prompt_ids({"x": "one two\nthree"}, "one   two three").prompt == ("x",)


def test_overlap_inside_a_whole_neighbour_is_not_a_cut():
    a = "The first chunk ends with words that the next chunk repeats as its overlap region here."
    b = "the next chunk repeats as its overlap region here. And then it goes on with more text."
    found = recover_prompt_ids({"a": a, "b": b}, "Context: " + a)
    assert found == (("a",), ())


words = st.lists(st.text(string.ascii_lowercase, min_size=3, max_size=8), min_size=12, max_size=20, unique=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(words, min_size=2, max_size=5, unique_by=lambda w: w[0]), st.data())
def test_recovery_property(passages, data):
    """Shown whole: in the prompt; shown as a long enough beginning: truncated; else neither."""
    texts = {f"p{i}": " ".join(w) for i, w in enumerate(passages)}
    ids = list(texts)
    shown = data.draw(st.lists(st.sampled_from(ids), unique=True))
    rest = [i for i in ids if i not in shown]
    cut = data.draw(st.sampled_from(rest)) if rest else None
    parts = [texts[i] for i in shown]
    if cut is not None:
        parts.append(texts[cut][: max(40, len(texts[cut]) // 2)].rstrip())
    found = recover_prompt_ids(texts, "\n\n".join(parts))
    assert set(found.prompt) == set(shown)
    if cut is not None:
        fragment, whole = len(normalise(parts[-1])), len(normalise(texts[cut]))
        long_enough = fragment >= min(MIN_FRAGMENT, max(1, whole // 2))  # rstrip can leave 39 of 40
        assert found.truncated == ((cut,) if long_enough and fragment < whole else ())


def _recover_by_masking_always(contents, prompt, min_fragment):
    """The rule of recover_prompt_ids written plainly: whole candidates masked, then every other
    candidate's beginning and end looked for in what is left."""
    text = normalise(prompt)
    norm = {cid: normalise(c) for cid, c in contents.items()}
    whole = [cid for cid, c in norm.items() if c and c in text]
    masked = text
    for cid in sorted(whole, key=lambda i: -len(norm[i])):
        masked = masked.replace(norm[cid], "\x00")
    cut = []
    for cid, c in norm.items():
        need = min(min_fragment, max(1, len(c) // 2))
        if c and cid not in whole and (c[:need] in masked or c[-need:] in masked):
            cut.append(cid)
    return tuple(whole), tuple(cut)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("ab \x00", max_size=14) | st.text("ab", min_size=60, max_size=90), min_size=1, max_size=5),
       st.data(), st.integers(min_value=1, max_value=6) | st.sampled_from([31, 32, 40]))
def test_recovery_equals_masking_every_time(passages, data, min_fragment):
    """Recovery masks only when some fragment is in the text: the result is the one masking every
    time gives, on a two-letter alphabet where overlaps, repeats and cut passages are common, with
    passages longer than twice the opening searched first, and with the mask character itself in
    passages and prompt."""
    contents = {f"p{i}": text for i, text in enumerate(passages)}
    pieces = data.draw(st.lists(st.sampled_from(passages).flatmap(
        lambda t: st.integers(0, len(t)).flatmap(lambda k: st.sampled_from([t, t[:k], t[k:]]))), max_size=5))
    prompt = data.draw(st.text("ab \x00", max_size=6)).join(pieces)
    assert recover_prompt_ids(contents, prompt, min_fragment) == _recover_by_masking_always(contents, prompt,
                                                                                           min_fragment)
