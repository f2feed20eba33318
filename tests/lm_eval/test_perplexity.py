"""Word-level vs subword perplexity (product of subword probabilities per word)."""

from __future__ import annotations

import math

import pytest

from stages.evaluate.lm.perplexity import PerplexityCounts, segment_counts, token_texts, word_ids


def test_word_ids_follow_leading_spaces_and_newlines():
    assert word_ids(["The", " c", "at", " sat", "\n", "On"]) == [0, 1, 1, 2, 3, 4]


def test_word_ppl_equals_subword_ppl_when_every_word_is_one_subword():
    texts = ["<ctx>", " the", " cat", " sat", " down"]
    nll = [1.0, 2.0, 0.5, 3.0]
    c = segment_counts(nll, texts, start=1)
    assert c.subwords == c.words == 4
    assert c.word_ppl == pytest.approx(c.subword_ppl)
    assert c.subword_ppl == pytest.approx(math.exp(6.5 / 4))


def test_word_ppl_is_larger_when_words_split():
    texts = ["<ctx>", " the", " c", "at", " s", "at"]
    nll = [1.0, 2.0, 0.5, 3.0, 0.2]
    c = segment_counts(nll, texts, start=1)
    assert (c.subwords, c.words) == (5, 3)
    assert c.subword_ppl == pytest.approx(math.exp(6.7 / 5))
    assert c.word_ppl == pytest.approx(math.exp(6.7 / 3))  # product of each word's subword probabilities
    assert c.word_ppl > c.subword_ppl


def test_oov_words_and_words_begun_in_the_context_are_left_out():
    texts = [" fir", "st", " <", "unk", ">", " end"]
    nll = [0.7, 5.0, 5.0, 5.0, 1.0]  # predicts "st" (word begun in context), " <unk>" x3, " end"
    c = segment_counts(nll, texts, start=1, oov_token="<unk>")
    assert c.oov_words == 1
    assert (c.subwords, c.words) == (2, 1)  # "st" counts as a subword, not as a word
    assert c.subword_nll == pytest.approx(1.7) and c.word_nll == pytest.approx(1.0)
    kept = segment_counts(nll, texts, start=1)  # a corpus without an OOV marker keeps it
    assert kept.oov_words == 0 and kept.words == 2


def test_counts_add_up_over_segments():
    a = segment_counts([1.0], ["x", " y"], start=1)
    b = segment_counts([3.0], ["x", " z"], start=1)
    total = PerplexityCounts()
    total.add(a)
    total.add(b)
    assert total.subword_ppl == pytest.approx(math.exp(2.0))


def test_misaligned_nll_is_rejected():
    with pytest.raises(ValueError, match="does not fit"):
        segment_counts([1.0, 2.0], ["a", " b"], start=1)


TEXT = "the cat sat on the mat\nthe dog ran to the rug and the cat sat down"
TRAIN = [TEXT, "a cat and a dog sat on a mat", "the rug was red and the mat was blue"] * 20


def _sentencepiece_tokenizer():
    """A tiny LLaMA-style tokenizer: SentencePiece's ``▁`` word-start marker and a decoder
    that drops the first token's leading space (as LlamaTokenizerFast's does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split("\n", behavior="isolated"),
                                                 pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    tok.train_from_iterator(TRAIN, trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def _byte_level_tokenizer():
    """Byte-level BPE, as SmolLM2's (``Ġ`` marks a leading space)."""
    from nugget_core import train_bpe_tokenizer

    return train_bpe_tokenizer(TRAIN, vocab_size=300)


@pytest.mark.parametrize("make", [_sentencepiece_tokenizer, _byte_level_tokenizer], ids=["sentencepiece", "bytelevel"])
def test_token_texts_keep_word_starts_for_every_tokenizer_family(make):
    tokenizer = make()
    ids = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    texts = token_texts(tokenizer, ids)
    assert "".join(texts).strip() == TEXT
    words = word_ids(texts)
    assert words[-1] + 1 in (len(TEXT.split()), len(TEXT.split()) + 1)  # 17 words (+ the newline, byte-level BPE)
    c = segment_counts([1.0] * (len(ids) - 1), texts, start=1)
    assert c.words == words[-1] and math.isfinite(c.word_ppl)  # every word but the first (context)


def test_decoding_tokens_one_at_a_time_loses_sentencepiece_word_starts():
    """What eval_lm did before: each token decoded alone, SentencePiece's leading space
    stripped, so the whole segment read as one word."""
    tokenizer = _sentencepiece_tokenizer()
    ids = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    alone = [tokenizer.decode([t]) for t in ids]
    assert len(set(word_ids(alone))) <= 3 < len(set(word_ids(token_texts(tokenizer, ids))))  # only newlines split
