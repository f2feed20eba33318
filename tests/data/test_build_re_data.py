"""build_re_data: sentence windows, seeded samples, the split by document, C4 from a local
copy in the HF layout, the stage through the DAG, and its contract."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from stages.artifacts.base import ContractError
from stages.config import load_config
from stages.config.validate import ConfigError
from stages.framework.stage import StageContext
from stages.restorable.artifacts import RestorationTexts
from stages.restorable.build_re_data import BuildREData
from stages.restorable.restoration_texts import SeededSample, WindowCounts, cut, windows
from tests.framework.fixtures import make_fake_sources


class _Logger:
    """What StageContext logs through, kept for the assertions."""

    def __init__(self):
        self.metrics, self.tags, self.artifacts = {}, {}, []

    def log_metrics(self, metrics, step=None):
        self.metrics.update(metrics)

    def set_tags(self, tags):
        self.tags.update(tags)

    def log_artifact(self, path):
        self.artifacts.append(path)


def _run(tmp_path, sources_dir=None, seed=0, **overrides) -> tuple[RestorationTexts, _Logger]:
    """The stage's run on the default (tiny-schema) config with ``data.re`` overrides."""
    overrides.setdefault("max_words", 0)  # the tests choose their caps, whatever the tiny profile says
    # train_re's batch kept within the smallest cap here (config load refuses a cap below one batch)
    cfg = load_config(["train.re.batch_size=2", *(f"data.re.{k}={v}" for k, v in overrides.items())]).data
    out = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}"
    out.mkdir()
    logger = _Logger()
    ctx = StageContext(stage=BuildREData.name, key="test", config={"data.re": cfg.re, "data.seed": seed},
                       inputs={}, output_dir=out, logger=logger, sources_dir=sources_dir or tmp_path / "none",
                       work_uri="")
    BuildREData().run(ctx)
    return RestorationTexts.read(out), logger


# --- windows -------------------------------------------------------------------------------

def test_windows_are_consecutive_non_overlapping_and_drop_the_short_tail():
    sentences = [f"S{i}." for i in range(7)]
    found, tail = windows(sentences, 3)
    assert found == [(0, ["S0.", "S1.", "S2."]), (3, ["S3.", "S4.", "S5."])] and tail
    assert windows(sentences[:6], 3) == (found, False)
    assert windows(sentences[:2], 3) == ([], True)
    assert [w for _, w in windows(sentences, 1)[0]] == [[s] for s in sentences]
    with pytest.raises(ValueError, match="sentence count"):
        windows(sentences, 0)


def test_cut_names_examples_by_document_and_first_sentence_and_counts_drops():
    counts = WindowCounts()
    sentences = ["One two.", "Three four five six seven.", "Eight.", "Nine ten.", "Eleven."]
    out = cut("d7", sentences, 2, max_words=4, counts=counts)
    # windows (0, 1) = 7 words (dropped as too long), (2, 3) = 3 words, sentence 4 = the tail
    assert out == [{"id": "d7:2", "text": "Eight. Nine ten.", "sentences": ["Eight.", "Nine ten."]}]
    assert (counts.dropped_long, counts.dropped_tail) == (1, 1)
    assert len(cut("d7", sentences, 2, max_words=0, counts=WindowCounts())) == 2  # 0 = no cap


# --- seeded samples ------------------------------------------------------------------------

def _sample(cap, seed, n=200, buffer=16):
    out = []
    sample = SeededSample(cap, seed, out.append, buffer=buffer)
    for i in range(n):
        sample.add({"id": str(i)})
    sample.finish()
    return [int(ex["id"]) for ex in out]


def test_a_capped_sample_is_seeded_and_drawn_from_the_whole_stream():
    a = _sample(20, "s")
    assert len(a) == len(set(a)) == 20 and a == _sample(20, "s") and a != _sample(20, "t")
    assert max(a) >= 100  # not the first documents: P(all 20 from the first half) ~ 1e-6
    # every example is equally likely to be kept: over many seeds each decile gets ~10%
    kept = Counter(i // 20 for seed in range(300) for i in _sample(20, f"seed{seed}"))
    assert all(abs(kept[d] / 6000 - 0.1) < 0.02 for d in range(10))


def test_uncapped_keeps_every_example_in_a_seeded_shuffled_order():
    a = _sample(0, "s")  # buffer 16 < 200 examples: the overflow path runs
    assert sorted(a) == list(range(200)) and a != list(range(200)) and a == _sample(0, "s")
    assert sorted(_sample(0, "s", n=5)) == list(range(5))  # fewer examples than the buffer
    assert _sample(50, "s", n=30) != list(range(30)) and sorted(_sample(50, "s", n=30)) == list(range(30))


# --- the stage -------------------------------------------------------------------------------

def _ids_by_doc(texts: RestorationTexts, count: int, split: str) -> set[str]:
    return {ex["id"].split(":")[0] for ex in texts.examples(count, split)}


def test_offline_source_is_split_by_document_and_capped(tmp_path):
    sources = make_fake_sources(tmp_path / "sources")  # gensim_wiki: Alpha (3), Gamma (4), Delta (3 sentences)
    texts, logger = _run(tmp_path, sources, sentence_counts="[1,3]", dev_fraction=0.3, max_train_examples=5)
    assert texts.counts == [1, 3] and texts.source == "gensim_wiki"
    assert texts.stand_in == "gensim_wiki sentences (stand-in for C4 RealNewsLike)"
    for k in (1, 3):
        assert _ids_by_doc(texts, k, "train").isdisjoint(_ids_by_doc(texts, k, "dev"))  # no document in both
    n1 = texts.stats["counts"]["1"]
    assert (n1["train"], n1["dev"], n1["dropped_long"], n1["dropped_tail"]) == (5, 3, 0, 0)
    # 7 train sentences capped to a sample of 5; 3-sentence windows: Alpha's, Gamma's first (its 4th is a tail)
    n3 = texts.stats["counts"]["3"]
    assert (n3["train"], n3["dev"], n3["dropped_tail"]) == (2, 1, 1)
    three = list(texts.examples(3, "train"))
    assert all(len(ex["sentences"]) == 3 and ex["text"] == " ".join(ex["sentences"]) for ex in three)
    assert sorted(ex["id"].split(":")[1] for ex in three) == ["0", "0"]
    words = [len(t.split()) for s in ("train", "dev") for t in texts.texts(1, s)]
    assert n1["mean_words"] == logger.metrics["n1.mean_words"] == pytest.approx(sum(words) / 8) and logger.metrics["n1.mean_words_n"] == 8
    assert logger.metrics["n3.train_examples"] == 2 and logger.metrics["n3.dropped_tail"] == 1
    assert logger.tags["stand_in"].startswith("gensim_wiki")
    assert len(texts.texts(1, "train", limit=2)) == 2
    again, _ = _run(tmp_path, sources, sentence_counts="[1,3]", dev_fraction=0.3, max_train_examples=5)
    assert again.texts(1, "train") == texts.texts(1, "train")  # deterministic given config and seed
    other, _ = _run(tmp_path, sources, seed=3, sentence_counts="[1,3]", dev_fraction=0.3, max_train_examples=5)
    assert other.texts(1, "train") != texts.texts(1, "train")


def test_max_words_drops_long_windows_and_an_empty_dataset_is_an_error(tmp_path):
    sources = make_fake_sources(tmp_path / "sources")
    texts, _ = _run(tmp_path, sources, sentence_counts="[1]", dev_fraction=0.3, max_words=12)
    assert all(len(t.split()) <= 12 for s in ("train", "dev") for t in texts.texts(1, s))
    assert texts.stats["counts"]["1"]["dropped_long"] == 3  # the three long sentences of the fake articles
    with pytest.raises(ValueError, match="no examples for .*of 5 sentences"):
        _run(tmp_path, sources, sentence_counts="[5]", dev_fraction=0.3)  # no article has 5 sentences


C4_ARTICLES = {
    "train": ["Stocks rose on Monday. Traders were calm. Oil fell. Gold held. Bonds slipped.",
              "The council met. It voted to build a bridge.",
              "Rain is expected. Roads may flood. Schools stay open."],
    "validation": ["A new museum opened. Visitors queued for hours. The mayor spoke. Entry is free. It shuts at six."],
}


def _write_c4(folder, published=C4_ARTICLES) -> str:
    """C4 RealNewsLike's layout: gzipped JSON lines per shard, c4-<split>.<shard>-of-<n>.json.gz."""
    folder.mkdir(exist_ok=True)
    for split, articles in published.items():
        shards = [articles[:2], articles[2:]] if split == "train" else [articles]
        for s, rows in enumerate(shards):
            lines = [json.dumps({"text": t, "url": f"https://news.example/{split}/{s}/{i}",
                                 "timestamp": "2019-04-20T10:00:00Z"}) for i, t in enumerate(rows)]
            name = f"c4-{split}.{s:05d}-of-{len(shards):05d}.json.gz"
            (folder / name).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return str(folder / "c4-{split}.*.json.gz")


def test_c4_is_read_from_a_local_copy_with_its_published_splits(tmp_path):
    (tmp_path / "c4").mkdir()
    texts, logger = _run(tmp_path, source="c4_realnewslike", local_files=_write_c4(tmp_path / "c4"),
                         dev_fraction=0.0)
    assert texts.stand_in == "" and texts.source == "c4_realnewslike" and logger.tags["stand_in"] == "none"
    assert sorted(texts.texts(1, "dev")) == sorted(["A new museum opened.", "Visitors queued for hours.",
                                                    "The mayor spoke.", "Entry is free.", "It shuts at six."])
    # train: 5 + 2 + 3 sentences; 3-sentence windows 1 + 0 + 1 (tails in the first two), dev: 1 and a tail
    assert texts.stats["counts"]["1"]["train"] == 10
    n3 = texts.stats["counts"]["3"]
    assert (n3["train"], n3["dev"], n3["dropped_tail"]) == (2, 1, 3)
    assert sorted(ex["id"] for ex in texts.examples(3, "train")) == ["0:0", "2:0"]
    assert texts.texts(5, "train") == ["Stocks rose on Monday. Traders were calm. Oil fell. Gold held. Bonds slipped."]
    with pytest.raises(ValueError, match="no examples for .*dev of 5 sentences"):
        _run(tmp_path, source="c4_realnewslike", local_files=_write_c4(tmp_path / "c4"), dev_fraction=0.0,
             max_words=3)


NAMES = ["Smith", "Jones", "Brown", "Taylor", "Wilson", "Evans", "Clark", "Walker"]
NEWS = {  # "Mr.", "U.S." and "Jan." only ever before a period: what Punkt learns as abbreviations
    "train": [f"Mr. {n} reached the U.S. capital on Jan. {i + 2} with two aides. Officials met the aides at the "
              f"airport. A U.S. spokesman said Mr. {n} would meet officials later with the aides."
              for i, n in enumerate(NAMES)],
    "validation": ["Mr. Lee flew to the U.S. Senate on Jan. 3 with aides. Officials met Mr. Lee at the airport."],
}


def test_punkt_learns_news_abbreviations_from_the_train_split(tmp_path):
    """RE §4.1 splits with NLTK's Punkt: "Mr.", "U.S." and "Jan." end no sentence (the
    rule-based splitter ends one at each)."""
    files = _write_c4(tmp_path / "c4", NEWS)
    run = {"source": "c4_realnewslike", "local_files": files, "dev_fraction": 0.0, "sentence_counts": "[1]"}
    texts, logger = _run(tmp_path, **run)
    assert sorted(texts.texts(1, "dev")) == ["Mr. Lee flew to the U.S. Senate on Jan. 3 with aides.",
                                             "Officials met Mr. Lee at the airport."]
    assert texts.stats["counts"]["1"]["train"] == 3 * len(NAMES) and texts.stats["splitter"] == "punkt"
    learned = json.loads((texts.path / "punkt.json").read_text())
    assert {"mr", "u.s", "jan"} <= set(learned["abbreviations"]) and learned["punkt_documents"] == len(NAMES)
    assert logger.metrics["punkt_documents"] == len(NAMES)
    few, _ = _run(tmp_path, **run, punkt_train_documents=3)  # the first 3 train articles only
    assert json.loads((few.path / "punkt.json").read_text())["punkt_documents"] == 3
    rules, _ = _run(tmp_path, **run, sentence_splitter="rules")
    assert {"Mr.", "Lee flew to the U.S.", "Senate on Jan."} <= set(rules.texts(1, "dev"))
    assert rules.stats["splitter"] == "rules" and not (rules.path / "punkt.json").exists()


def test_punkt_splits_an_offline_source_after_learning_from_its_train_documents(tmp_path):
    sources = make_fake_sources(tmp_path / "sources")
    texts, _ = _run(tmp_path, sources, sentence_counts="[1]", dev_fraction=0.3)
    learned = json.loads((texts.path / "punkt.json").read_text())
    assert learned["punkt_documents"] == 2  # of the 3 articles, one is dev
    rules, _ = _run(tmp_path, sources, sentence_counts="[1]", dev_fraction=0.3, sentence_splitter="rules")
    assert sorted(texts.texts(1, "train")) == sorted(rules.texts(1, "train"))  # no abbreviation here: alike


@pytest.mark.ray
@pytest.mark.slow
def test_stage_runs_in_the_dag_on_the_offline_wikipedia(ray_local, tmp_path):
    from pipelines.cli import main_full
    from stages.framework.dag import Dag
    from tests.framework.fixtures import runs_of_latest_pipeline

    sources = make_fake_sources(tmp_path / "sources")
    root = tmp_path / "artifacts"
    args = [f"run.artifact_root={root}", f"run.sources_dir={sources}", "run.targets=[build_re_data]",
            "data.re.sentence_counts=[1,2]", "data.re.dev_fraction=0.3"]
    assert main_full(args, dag=Dag([BuildREData])) == 0
    texts = RestorationTexts.read(next((root / "build_re_data").iterdir()))
    assert texts.counts == [1, 2] and texts.stats["counts"]["2"]["train"] == 3  # 1 + 2 windows of Alpha, Gamma
    _, runs = runs_of_latest_pipeline(root)
    assert runs["build_re_data"].data.metrics["n2.dev_examples"] == 1


# --- config and contract -------------------------------------------------------------------

@pytest.mark.parametrize(("overrides", "key"), [
    (["data.re.source=c4"], "data.re.source"),
    (["data.re.sentence_counts=[1,1]"], "data.re.sentence_counts"),
    (["data.re.sentence_counts=[0,3]"], "data.re.sentence_counts"),
    (["data.re.sentence_counts=[]"], "data.re.sentence_counts"),
    (["data.re.max_train_examples=-1"], "data.re.max_train_examples"),
    (["data.re.source=c4_realnewslike"], "data.re.dev_fraction"),  # C4's dev is its validation split
    (["data.re.source=c4_realnewslike", "data.re.dev_fraction=0", "data.re.local_files=/x/c4.json"],
     "data.re.local_files"),
    (["data.re.local_files=/x/c4-{split}.json"], "data.re.local_files"),  # an offline source reads no files
    (["data.re.dev_fraction=0"], "data.re.dev_fraction"),
    (["data.re.sentence_splitter=nltk"], "data.re.sentence_splitter"),
    (["data.re.punkt_train_documents=-1"], "data.re.punkt_train_documents"),
])
def test_bad_config_names_the_key(overrides, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(overrides)


def test_the_paper_profile_config_is_valid():
    re = load_config(["data=paper", "calibrate=paper"]).data.re  # tiny's samples lm_wiki train: not in the paper data
    assert re.source == "c4_realnewslike" and re.max_train_examples == 0 and re.sentence_counts == [1, 3, 5]


def test_contract_names_what_is_missing(tmp_path):
    stats = {"source": "gensim_wiki", "stand_in": "x", "counts": {"1": {
        "train": 1, "dev": 1, "mean_words": 2.0, "dropped_long": 0, "dropped_tail": 0}}}
    (tmp_path / "stats.json").write_text(json.dumps(stats))
    with pytest.raises(ContractError, match="n1/train.jsonl"):
        RestorationTexts.read(tmp_path)
    for split in ("train", "dev"):
        RestorationTexts.file_of(tmp_path, 1, split).parent.mkdir(exist_ok=True)
        RestorationTexts.file_of(tmp_path, 1, split).write_text('{"id": "0:0", "text": "Hi."}\n{"id": "0:1"}\n')
    texts = RestorationTexts.read(tmp_path)
    with pytest.raises(ValueError, match="no examples of 3 sentences"):
        texts.split_file(3, "train")
    with pytest.raises(ContractError, match="'text'.*n1/dev.jsonl"):
        texts.texts(1, "dev")
    assert texts.texts(1, "dev", limit=1) == ["Hi."]
    del stats["counts"]["1"]["dropped_tail"]
    (tmp_path / "stats.json").write_text(json.dumps(stats))
    with pytest.raises(ContractError, match="dropped_tail"):
        RestorationTexts.read(tmp_path)
