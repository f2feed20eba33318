"""`decode_ids`: the text of one sequence of ids, never a batch's list of texts."""

from __future__ import annotations

import pytest

from stages.evaluation.decoding import decode_ids
from tests.lm_eval.fixtures import smollm2_style_tokenizer


def test_one_sequence_decodes_to_the_tokenizers_text_and_a_batch_is_refused():
    tok = smollm2_style_tokenizer(["the cat sat on the mat in 1928"] * 3)
    ids = tok("the cat sat", add_special_tokens=False)["input_ids"]
    assert decode_ids(tok, ids) == tok.decode(ids) == "the cat sat"
    assert decode_ids(tok, tuple(ids), skip_special_tokens=True) == "the cat sat"  # any sequence of ids
    assert decode_ids(tok, []) == ""
    with pytest.raises(TypeError, match="batch of 2"):
        decode_ids(tok, [ids, ids])  # a batch: decode would return two texts
