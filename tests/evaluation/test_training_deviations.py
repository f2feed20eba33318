"""The report's differences name the training and test-set settings that leave the papers'
(`stages.report.deviations`), each checked against the run's config: Nugget2D's optimiser (app. A:
its values are lost in our copy, so ours are listed as our choices), its stopping rule (early
stopping on the dev loss, the best weights kept), table 1's scored tokens and Pile test set, the
RE restoration test set, and RE's frozen encoder embedding (§4.2)."""

from __future__ import annotations

from typing import Any

from stages.config import load_config
from tests.evaluation.fixtures import listed_deviations


def _settings(overrides: list[str]) -> set[str]:
    return {d.setting for d in listed_deviations(["profile=paper", *overrides])}


def _row(setting: str, overrides: list[str]) -> Any:
    (row,) = [d for d in listed_deviations(overrides) if d.setting == setting]
    return row


def test_the_nugget2d_optimiser_is_listed_as_ours_with_every_value_the_code_applies():
    """App. A's values are lost ("a learning rate of , , , and ."): AdamW, lr, weight decay, betas,
    eps and the absence of clipping are this code's choices, each as the engine builds it."""
    from stages.report.nugget2d_deviations import NUGGET2D_OPTIMISER

    row = _row(NUGGET2D_OPTIMISER, ["profile=paper"])
    assert row.paper.startswith("'an Adam optimizer (Kingma & Ba, 2015) with a learning rate of [lost]")
    assert "LLaMA-2's own setup" in row.paper and "eps 1e-5" in row.paper
    assert row.here == ("train.nugget2d, train.nugget2d_ar, train.nugget2d_ft, train.nugget2d_ae, train.full_ft: "
                        "AdamW (decoupled weight decay), lr 0.0001, weight decay 0.1, betas (0.9, 0.95), eps 1e-8 "
                        "(torch's default: no setting), no gradient clipping, 2000 linear warm-up steps then cosine "
                        "decay to 0 at step 150000: our choices, not the paper's (its values are lost)")
    # a job set apart is named apart, with what it changes: coupled L2 Adam, clipping
    coupled = _row(NUGGET2D_OPTIMISER, ["profile=paper", "train.full_ft.optimizer=adam",
                                        "train.full_ft.max_grad_norm=1.0"]).here
    assert "train.full_ft: Adam (weight decay as an L2 term in the gradient), lr 0.0001, weight decay 0.1" in coupled
    assert "gradient clipping at norm 1," in coupled and coupled.startswith("train.nugget2d, train.nugget2d_ar, ")
    # listed in every profile: no profile has the paper's values to match
    assert "gradient clipping at norm 1" in _row(NUGGET2D_OPTIMISER, ["profile=gpu1"]).here


def test_paper_profile_nugget2d_jobs_stop_early_and_export_the_best_dev_weights():
    """App. A: "All the models are trained until early stopping because of the convergence of the
    loss on the validation set": every Nugget2D job of profile=paper keeps its best dev evaluation."""
    from stages.report.nugget2d_deviations import NUGGET2D_JOBS, NUGGET2D_STOPPING

    cfg = load_config(["profile=paper"])
    for name in NUGGET2D_JOBS:
        job = getattr(cfg.train, name)
        assert job.early_stopping_patience > 0 and job.export_model == "best_dev", name
        assert job.stopping_rule().endswith("the best dev evaluation's weights"), name
    assert NUGGET2D_STOPPING not in _settings([])
    # the last step's weights after early stopping, or a fixed number of steps: named with the rule
    last = _row(NUGGET2D_STOPPING, ["profile=paper", "train.nugget2d_ar.export_model=final"]).here
    assert last.startswith("train.nugget2d_ar: until 5 dev evaluations (every 2000 steps) without a lower loss, at "
                           "most 150000 steps of 32 examples") and last.count("train.") == 1
    assert "the last step's weights" in last
    fixed = _row(NUGGET2D_STOPPING, ["profile=gpu1"]).here
    assert fixed.count("the last step's weights") == len(NUGGET2D_JOBS)


def test_table_1_s_scored_tokens_and_pile_test_set_are_checked_against_the_config():
    """Table 1 scores each 832-token window's last 128 tokens (about 15% of WikiText-103's test
    tokens); its Pile test set is the paper's 100k tokens in profile=paper and named otherwise."""
    from stages.report.nugget2d_deviations import TABLE1_PILE, TABLE1_WIKI

    wiki = _row(TABLE1_WIKI, ["profile=paper"]).here
    assert "windows of 704 + 128 = 832 tokens, of which only the last 128 are scored" in wiki
    assert wiki.endswith("about 15% of the split's tokens")
    cfg = load_config(["profile=paper"])
    assert cfg.eval.lm.pile_tokens == 100_000 and TABLE1_PILE not in _settings([])
    every = _row(TABLE1_PILE, ["profile=paper", "eval.lm.pile_tokens=0"]).here
    assert every.startswith("every segment (128 scored tokens each) of build_lm's Pile test split (0.01 of the "
                            "documents of the loaded Pile")
    assert _row(TABLE1_PILE, ["profile=paper", "eval.lm.pile_tokens=5000"]).here.startswith(
        "the first segments holding 5000 scored tokens")
    assert TABLE1_PILE not in _settings(["eval.lm.pile_tokens=0", "eval.lm.corpora=[wiki]"])


def test_the_pile_cap_takes_the_first_segments_reaching_the_scored_tokens():
    from stages.nugget2d.lm.segments import first_scored

    segments = [([1] * 4, [2] * 3), ([1] * 4, [2] * 3), ([1] * 4, [2] * 1), ([1] * 4, [2] * 3)]
    assert first_scored(segments, 0) == segments
    assert first_scored(segments, 3) == segments[:1]
    assert first_scored(segments, 4) == segments[:2]  # 6 >= 4: the segment that crosses the cap is kept
    assert first_scored(segments, 7) == segments[:3] and first_scored(segments, 100) == segments


def test_the_re_restoration_test_set_is_listed_with_its_cut():
    """RE §4.1 measures restoration on C4 RealNewsLike's validation split; profile=paper restores the
    first 2,000 texts per sentence count (a seeded random order), which is named."""
    setting = "eval.re.max_examples / data.re.max_dev_examples (RE restoration test set)"
    row = _row(setting, ["profile=paper"])
    assert row.paper.startswith("the restoration scored on C4 RealNewsLike's validation split (13,863 articles")
    assert row.here.startswith("the first 2000 of build_re_data's dev texts per sentence count and model, in its "
                               "seeded random order (built: all of them, from c4_realnewslike's validation split)")
    assert setting not in _settings(["eval.re.max_examples=0"])
    assert "built: a seeded sample of 500" in _row(setting, ["profile=paper", "eval.re.max_examples=0",
                                                             "data.re.max_dev_examples=500"]).here


def test_a_trainable_shared_embedding_in_frozen_re_systems_is_listed():
    setting = "train.re.freeze_encoder_embedding"
    assert setting not in _settings([])
    assert setting in _settings([f"{setting}=false"])
    # no frozen configuration run: nothing differs
    assert setting not in _settings([f"{setting}=false", "train.re.configs=[a,c]"])
