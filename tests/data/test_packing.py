"""Documents: limits hold on the real tokenizer, sentences are never split, deletion ≈ p."""

from __future__ import annotations

import numpy as np
import pytest

from stages.config.validate import ConfigError
from stages.corpora.corpora import ParallelCorpus, mt_corpus
from stages.corpora.splits import assign_splits
from stages.corpora.tokens import exact_count
from stages.nugget.documents import build_documents
from stages.nugget.packing import pack_parallel


def test_pack_closes_before_overflow_and_isolates_long_units():
    res = pack_parallel([3, 4, 2, 9, 1, 1], [2, 2, 6, 1, 1, 1], limit=8)
    assert [(d.left, d.truncated) for d in res.docs] == [([0, 1], False), ([2], False), ([3], True), ([4, 5], False)]
    assert res.truncated == 1


def test_deletion_rate_is_about_one_minus_keep_prob_per_side_independently():
    rng = np.random.default_rng(0)
    n = 20000
    res = pack_parallel([1] * n, [1] * n, limit=50, keep_prob=0.8, rng=rng)
    assert res.deleted_left / n == pytest.approx(0.2, abs=0.01)
    assert res.deleted_right / n == pytest.approx(0.2, abs=0.01)
    kept_l = np.zeros(n, bool)
    kept_r = np.zeros(n, bool)
    for d in res.docs:
        kept_l[d.left] = True
        kept_r[d.right] = True
    # independent sides: P(both kept) ≈ 0.64, not 0.8
    assert (kept_l & kept_r).mean() == pytest.approx(0.64, abs=0.02)


def _corpus(n_streams=3, n=40):
    streams = [[(f"Sentence {s}-{i} is about word{i % 40} and light.", f"第{i}段讨论软件包和系统。")
                for i in range(n)] for s in range(n_streams)]
    streams[1][5] = (" ".join(["very long sentence"] * 60) + ".", "长" * 10)  # over the limit
    return ParallelCorpus("synthetic", streams, (" ", ""))


@pytest.mark.parametrize("keep_prob", [1.0, 0.8])
def test_documents_respect_limit_and_keep_sentences_whole(ray_local, bpe_dir, keep_prob):
    corpus = _corpus()
    units = {s for stream in corpus.streams for pair in stream for s in pair}
    built = build_documents(corpus, bpe_dir, limit=40, keep_prob=keep_prob, seed=3)
    assert built.truncated == 1
    for d in built.docs:
        assert exact_count(d.left, bpe_dir) <= 40 and exact_count(d.right, bpe_dir) <= 40
        assert d.n_left == exact_count(d.left, bpe_dir)
        if not d.truncated:
            assert set(d.left_sentences) <= units and set(d.right_sentences) <= units
            assert d.left == " ".join(d.left_sentences) and d.right == "".join(d.right_sentences)
    again = build_documents(corpus, bpe_dir, limit=40, keep_prob=keep_prob, seed=3)
    assert [d.left for d in again.docs] == [d.left for d in built.docs]
    if keep_prob < 1:
        other = build_documents(corpus, bpe_dir, limit=40, keep_prob=keep_prob, seed=4)
        assert [d.left for d in other.docs] != [d.left for d in built.docs]


def test_splits_are_deterministic_and_never_silently_empty():
    a = assign_splits(100, 0.05, 0.05, seed=1)
    assert a == assign_splits(100, 0.05, 0.05, seed=1) != assign_splits(100, 0.05, 0.05, seed=2)
    assert (a.count("dev"), a.count("test"), a.count("train")) == (5, 5, 90)
    assert assign_splits(5, 0.01, 0.01, 0).count("dev") == 1
    with pytest.raises(ValueError, match="non-empty train"):
        assign_splits(2, 0.3, 0.3, 0)


def test_empty_corpus_and_empty_pairs_are_errors_or_counted(tmp_path):
    from tests.data.fixtures import write_debian_reference

    write_debian_reference(tmp_path, n_chapters=1, paragraphs=0)
    from stages.nugget.config import MTData

    with pytest.raises(ValueError, match="yielded no sentence pairs"):
        mt_corpus(MTData(), tmp_path)


def test_wmt19_dev_is_the_published_dev_split(ray_local, bpe_dir, tmp_path):
    """Nugget §5.1 reports on WMT19's official dev set: with ``data.mt.dev_split`` the dev
    documents are those of the published split, whole, and train / test come from the
    training split only (before: dev_fraction of the training documents)."""
    import datasets

    from stages.config import load_config
    from stages.nugget.build_mt_docs import mt_documents

    def pairs(tag: str, n: int) -> list[dict]:
        return [{"en": f"And word{i % 40} saw the {tag} light of day number {i}.", "zh": f"第{i}段讨论{tag}系统。"}
                for i in range(n)]

    datasets.Dataset.from_dict({"translation": pairs("train", 60)}).to_parquet(tmp_path / "train-0.parquet")
    datasets.Dataset.from_dict({"translation": pairs("dev", 12)}).to_parquet(tmp_path / "validation-0.parquet")
    cfg = load_config(["data.mt.source=wmt19", f"data.mt.local_files={tmp_path}/{{split}}-*.parquet",
                       "data.mt.dev_split=validation", "data.mt.dev_fraction=0", "data.mt.test_fraction=0.1",
                       "data.mt.max_doc_tokens=40"]).data.mt
    by_split, stats, source = mt_documents(cfg, tmp_path, bpe_dir, max_docs=0, seed=0)
    text = {split: " ".join(d.left for _, d in rows) for split, rows in by_split.items()}
    assert source == "wmt19" and by_split["dev"] and by_split["test"] and by_split["train"]
    assert "dev light" in text["dev"] and "train light" not in text["dev"]
    assert "dev light" not in text["train"] + text["test"]
    assert stats["dev_sentence_pairs"] == 12 and stats["sentence_pairs"] == 60
    # every dev sentence, in order
    assert [s for _, d in by_split["dev"] for s in d.left_sentences] == [p["en"] for p in pairs("dev", 12)]
    with pytest.raises(ConfigError, match="dev_fraction: value 0.05 must be 0 with dev_split 'validation'"):
        load_config(["data.mt.source=wmt19", "data.mt.dev_split=validation"])
    with pytest.raises(ConfigError, match="needs source 'wmt19'"):
        load_config(["data.mt.dev_split=validation", "data.mt.dev_fraction=0"])
    with pytest.raises(ConfigError, match=r"must name the split with '\{split\}'"):
        load_config(["data.mt.source=wmt19", "data.mt.dev_split=validation", "data.mt.dev_fraction=0",
                     "data.mt.local_files=/data/wmt.parquet"])


def test_a_repacked_lone_unit_over_the_exact_limit_is_marked_truncated():
    # the approximate per-unit counts put both units within 4, the exact joined count of the
    # two is 9 and unit 1 alone counts 5: re-packing leaves unit 1 alone, still over the limit,
    # so it must be cut when written (it was written whole and failed the final check)
    from stages.nugget.packing import PackedDoc, enforce_limit

    exact = {(0,): 4, (1,): 5, (0, 1): 9}
    docs, repacked = enforce_limit([PackedDoc([0, 1], [0, 1])], [9], [9],
                                   lambda u: exact[tuple(u)], lambda u: exact[tuple(u)], 4)
    assert repacked == 1
    assert [(d.left, d.truncated) for d in docs] == [([0], False), ([1], True)]


def test_documents_without_ray_respect_limit(bpe_dir):
    """`count_tokens_here` (no Ray: benchmarks/headline's data pack) builds documents that hold the
    same limit, with each document's count its text's exact count."""
    from stages.corpora.tokens import count_tokens_here

    corpus = _corpus()
    built = build_documents(corpus, bpe_dir, limit=40, counter=count_tokens_here)
    assert built.truncated == 1 and built.docs
    for d in built.docs:
        assert d.n_left == exact_count(d.left, bpe_dir) <= 40
        assert d.n_right == exact_count(d.right, bpe_dir) <= 40
    assert count_tokens_here(["a b", ""], bpe_dir) == [exact_count("a b", bpe_dir), 0]
