"""build_nugget_lm through the DAG: the offline Wikipedia stand-in split here, and
WikiText-103 from a local copy in the HF layout (the hub-loading path, tested offline)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.cli import main_full
from stages.framework.dag import Dag
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import NuggetLMCorpus
from stages.nugget.build_nugget_lm import BuildNuggetLM
from tests.framework.fixtures import make_fake_sources, runs_of_latest_pipeline

pytestmark = [pytest.mark.ray, pytest.mark.slow]

WIKITEXT = {  # WikiText-103 v1 lines: " = Title = " starts an article, <unk> marks OOV words
    "train": [" = Alpha = \n", "", " Alpha is the first letter . \n", " = = History = = \n", " It came from aleph . \n",
              " = Beta = \n", " Beta follows alpha in the <unk> alphabet . \n"],
    "validation": [" = Gamma = \n", " Gamma is used in physics . \n"],
    "test": [" = Delta = \n", " Delta is a <unk> landform . \n", " = Epsilon = \n", " Epsilon is small . \n"],
}


class FakeTokenizer(Stage):
    name = "tokenizer"
    config_keys = ("model.seq2seq",)

    def run(self, ctx: StageContext) -> None:
        from nugget_core import train_bpe_tokenizer
        from stages.nugget.artifacts.data import TokenizerFolder

        text = "alpha beta gamma delta epsilon letter physics river landform history the is a of in . = <unk>"
        TokenizerFolder.write(ctx.output_dir, train_bpe_tokenizer([text] * 20, vocab_size=300))


def _run(tmp_path, extra: list[str]) -> NuggetLMCorpus:
    sources = make_fake_sources(tmp_path / "sources")
    root = tmp_path / "artifacts"
    args = [f"run.artifact_root={root}", f"run.sources_dir={sources}", *extra]
    assert main_full(args, dag=Dag([FakeTokenizer, BuildNuggetLM])) == 0
    return NuggetLMCorpus.read(next((root / "build_nugget_lm").iterdir()))


def test_offline_articles_are_split_and_labelled_a_stand_in(ray_local, tmp_path):
    corpus = _run(tmp_path, ["data.nugget_lm.dev_fraction=0.3", "data.nugget_lm.test_fraction=0.3"])
    assert corpus.source == "gensim_wiki" and "stand-in for WikiText-103" in corpus.stand_in
    sizes = {split: len(corpus.documents(split)) for split in ("train", "dev", "test")}
    assert sizes == {"train": 1, "dev": 1, "test": 1}  # the fake dump's three articles, one per split
    docs = corpus.documents("train")
    assert len(docs.word_start(0)) == len(docs[0]) and docs.word_start(0)[0] and not docs.oov(0).any()
    _, runs = runs_of_latest_pipeline(tmp_path / "artifacts")
    metrics = runs["build_nugget_lm"].data.metrics
    assert metrics["test/articles"] == 1 and metrics["train/words"] == int(docs.word_start(0).sum())


def test_wikitext103_keeps_the_published_splits_and_marks_unk(ray_local, tmp_path):
    for split, lines in WIKITEXT.items():
        pq.write_table(pa.table({"text": lines}), tmp_path / f"{split}-00000.parquet")
    corpus = _run(tmp_path, ["data.nugget_lm.source=wikitext103",
                             f"data.nugget_lm.wiki_files={tmp_path}/{{split}}-*.parquet"])
    assert corpus.stand_in == ""
    assert [len(corpus.documents(s)) for s in ("train", "dev", "test")] == [2, 1, 2]
    test = corpus.documents("test")
    # " = Delta = \n Delta is a <unk> landform ." : 9 words, the <unk> one out of vocabulary
    starts, oov = test.word_start(0), test.oov(0)
    assert int(starts.sum()) == 9 and int((starts & oov).sum()) == 1 and oov.any()
    _, runs = runs_of_latest_pipeline(tmp_path / "artifacts")
    assert runs["build_nugget_lm"].data.metrics["test/oov_words"] == 1
    assert runs["build_nugget_lm"].data.tags["stand_in"] == "none"


def test_a_wiki_files_glob_without_split_is_refused(tmp_path):
    from stages.config import load_config
    from stages.config.validate import ConfigError

    with pytest.raises(ConfigError, match="wiki_files"):
        load_config(["data.nugget_lm.source=wikitext103", "data.nugget_lm.wiki_files=/data/wiki.parquet"])


def test_write_split_streams_rows_and_drops_short_articles(tmp_path, monkeypatch):
    import stages.nugget.build_nugget_lm as stage

    monkeypatch.setattr(stage, "WRITE_ROWS", 2)  # several row groups
    docs = [{"ids": list(range(n)), "word_start": [True] * n, "oov": [i == 0 for i in range(n)]} for n in (3, 1, 4, 5)]
    counts = stage.write_split(iter(docs), 2, tmp_path / "test.parquet")
    assert counts == {"articles": 3, "words": 12, "oov_words": 3, "lengths": [3, 4, 5]}
    (tmp_path / "stats.json").write_text('{"source": "s", "stand_in": ""}')
    for split in ("train", "dev"):
        stage.write_split(iter(docs[:1]), 2, tmp_path / f"{split}.parquet")
    read = NuggetLMCorpus.read(tmp_path).documents("test")
    assert read.lengths() == [3, 4, 5] and list(read[2]) == [0, 1, 2, 3, 4]
    assert NuggetLMCorpus.read(tmp_path).documents("test", limit=2).lengths() == [3, 4]
