"""Config load refuses settings that read a split of build_lm's data that the data does not
hold, or calibrate Lambda on the split eval_lm scores: profile=paper
used to plan, train for hours, and fail in calibrate_threshold on lm_wiki's missing
train split; local WikiText files without {split} were split here, table 1 scored on
WikiText-103 train articles."""

from __future__ import annotations

import pytest

from stages.config import ConfigError, load_config


def _refused(overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as err:
        load_config(overrides)
    return str(err.value)


def test_paper_calibrates_on_the_piles_train_split_and_evaluates_splits_it_has():
    cfg = load_config(["profile=paper"])
    cal = cfg.calibrate.threshold
    assert (cal.corpora, cal.sample_split) == (["pile"], "train")  # text the evaluation never sees
    assert cal.sample_split != cfg.eval.lm.split and cfg.eval.lm.corpora == ["wiki", "pile"]


@pytest.mark.parametrize(("overrides", "expected"), [
    # the paper data's lm_wiki holds WikiText-103 validation / test only
    (["profile=paper", "calibrate.threshold.corpora=[wiki,pile]"],
     "calibrate.threshold.sample_split: split 'train' of build_lm's wiki data does not exist"),
    (["profile=paper", "eval.lm.split=train"], "eval.lm.split: split 'train' of build_lm's wiki data does not exist"),
    (["profile=paper", "train.nugget2d_ar.lm_corpus=wiki"],
     "train.nugget2d_ar.lm_corpus ('wiki'): split 'train' of build_lm's wiki data does not exist"),
    (["data=paper"], "calibrate.threshold.sample_split: split 'train' of build_lm's wiki data"),  # tiny calibration
    # a local WikiText copy must name the split: one pool would be split here (train articles scored)
    (["profile=paper", "data.lm.wiki_files=/data/wikitext/train-*.parquet"],
     "data.lm.wiki_files: '/data/wikitext/train-*.parquet' must name the split"),
    # Lambda from the very segments table 1 scores
    (["calibrate.threshold.sample_split=test", "calibrate.threshold.heldout_split=dev"],
     "calibrate.threshold.sample_split: value 'test' is eval.lm.split"),
    (["profile=paper", "calibrate.threshold.sample_split=test", "calibrate.threshold.heldout_split=dev"],
     "calibrate.threshold.sample_split: value 'test' is eval.lm.split, the ['pile'] segments"),
    # no dev / test documents at all
    (["data.lm.dev_fraction=0"], "eval.lm.split: split 'test' of build_lm's pile data does not exist"),
    (["data.lm.dev_fraction=0"], "eval.autoencoding.split: split 'test' of build_lm's continuation data"),
])
def test_a_split_the_data_does_not_hold_is_refused_at_config_load(overrides, expected):
    assert expected in _refused(overrides)


def test_the_offline_data_holds_every_split():
    cfg = load_config([])
    assert cfg.calibrate.threshold.corpora == ["wiki", "pile"] and cfg.calibrate.threshold.sample_split == "train"
    load_config(["calibrate.threshold.sample_split=dev", "calibrate.threshold.heldout_split=test"])
