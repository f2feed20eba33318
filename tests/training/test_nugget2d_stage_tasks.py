"""The Nugget2D training stages' tasks, built from config without a fit: each stage's own
model and the variants it trains beside it (`stages.train.nugget2d_stage`)."""

from __future__ import annotations

from stages.train.autoencoding_task import AutoencodingTask
from stages.train.nugget2d_task import Nugget2DCompressorTask
from stages.train.train_nugget2d import TrainNugget2D
from stages.train.train_nugget2d_ae import TrainNugget2DAE
from tests.evaluation.fixtures import context


def _inputs(tmp_path):
    (tmp_path / "prepare_lm" / "model").mkdir(parents=True)  # tasks only name their base LM folder
    (tmp_path / "build_lm").mkdir()
    return {"prepare_lm": tmp_path / "prepare_lm", "build_lm": tmp_path / "build_lm"}


def test_compressor_stage_builds_its_model_and_variants(tmp_path):
    ctx = context(TrainNugget2D, _inputs(tmp_path), tmp_path / "out", [
        "nugget2d.ratio=0.25", "train.nugget2d.objective=continuation", "train.nugget2d.extra_ratios=[0.5]",
        "train.nugget2d.ar_scorer=autoencoding"])
    stage, job = TrainNugget2D(), ctx.cfg("train.nugget2d")
    main = stage.task(ctx, job)
    assert isinstance(main, Nugget2DCompressorTask)
    assert (main.objective, main.nugget2d.ratio) == ("continuation", 0.25)
    assert stage.main_model(ctx, job) == ("continuation", 0.25)
    built = {name: (v.task.objective, v.task.nugget2d.ratio, v.base_role, v.objective, v.ratio)
             for name, v in stage.variants(ctx, job).items()}
    assert built == {"r0.5": ("continuation", 0.5, "chat", "continuation", 0.5),
                     "autoencoding": ("autoencoding", 0.25, "lm", "autoencoding", 0.25)}


def test_autoencoding_stage_builds_a_model_per_ratio_and_system(tmp_path):
    ctx = context(TrainNugget2DAE, _inputs(tmp_path), tmp_path / "out", [
        "train.nugget2d_ae.ratios=[0.05,0.1]", "train.nugget2d_ae.max_doc_tokens=100"])
    stage, job = TrainNugget2DAE(), ctx.cfg("train.nugget2d_ae")
    main = stage.task(ctx, job)
    assert isinstance(main, AutoencodingTask) and (main.system, main.nugget2d.ratio) == ("nugget2d", 0.05)
    assert stage.main_model(ctx, job) == ("autoencoding", 0.05)
    built = {name: (v.task.system, v.task.nugget2d.ratio, v.task.slots, v.objective)
             for name, v in stage.variants(ctx, job).items()}
    assert built == {"r0.1": ("nugget2d", 0.1, 0, "autoencoding"), "icae_r0.05": ("icae", 0.05, 5, "icae"),
                     "icae_r0.1": ("icae", 0.1, 10, "icae")}
