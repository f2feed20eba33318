"""The Nugget2D training stages' tasks, built from config without a fit: each stage's own
model and the variants it trains beside it (`stages.nugget2d.nugget2d_stage`), from the typed
config and inputs of its header; and the train_full_ft task."""

from __future__ import annotations

import json

import pytest

from stages.framework.contract import build_config, read_inputs
from stages.nugget2d.artifacts import BaseLM, CalibratedThreshold, FullFinetunedLM, TrainedNugget2D
from stages.nugget2d.autoencoding_task import AutoencodingTask
from stages.nugget2d.nugget2d_stage import Nugget2DInputs, Nugget2DTrainingStage
from stages.nugget2d.nugget2d_task import LMBaselineTask, Nugget2DARTask, Nugget2DCompressorTask
from stages.nugget2d.train_full_ft import TrainFullFT
from stages.nugget2d.train_nugget2d import TrainNugget2D
from stages.nugget2d.train_nugget2d_ae import TrainNugget2DAE, TrainNugget2DAEConfig
from stages.nugget2d.train_nugget2d_ar import TrainNugget2DAR
from stages.nugget2d.train_nugget2d_ft import TrainNugget2DFT
from tests.evaluation.fixtures import context


def _inputs(tmp_path):
    (tmp_path / "prepare_lm" / "model").mkdir(parents=True)  # tasks only name their base LM folder
    (tmp_path / "build_lm").mkdir()
    return {"prepare_lm": tmp_path / "prepare_lm", "build_lm": tmp_path / "build_lm"}


def _typed(stage, tmp_path, inputs, overrides):
    """The stage's config and inputs as the framework hands them to ``compute``."""
    ctx = context(stage, inputs, tmp_path / "out", overrides)
    return build_config(stage.config_class, ctx.config), read_inputs(stage.inputs_class, ctx.inputs)


def _trained(folder, variants=None):
    """A train_nugget2d output: the main model (continuation) and ``variants``."""
    TrainedNugget2D.folder(folder).mkdir(parents=True)
    for name in variants or {}:
        TrainedNugget2D.variant_folder(folder, name).mkdir(parents=True)
    (folder / "trained.json").write_text(json.dumps({
        "objective": "continuation", "ratio": 0.1, "base_role": "chat", "variants": {
            name: {"dir": f"variants/{name}/nugget2d", "objective": name, "ratio": 0.1, "base_role": role}
            for name, role in (variants or {}).items()}}))
    return folder


def test_each_header_gives_the_contract_it_declared_by_hand():
    """The header's derived config keys and upstream are what each stage declared by hand
    (its cache key's content), and its output is the contract class it writes."""
    expected = {
        TrainNugget2D: (("nugget2d", "model.lm", "train.nugget2d", "prompts", "run.seed"),
                        ("prepare_lm", "build_lm")),
        TrainNugget2DFT: (("nugget2d", "model.lm", "train.nugget2d_ft", "prompts", "run.seed"),
                          ("prepare_lm", "build_lm", "train_nugget2d")),
        TrainNugget2DAR: (("nugget2d", "model.lm", "train.nugget2d_ar", "run.seed"),
                          ("prepare_lm", "build_lm", "train_nugget2d", "calibrate_threshold")),
        TrainNugget2DAE: (("nugget2d", "model.lm", "train.nugget2d_ae", "run.seed"), ("prepare_lm", "build_lm")),
        TrainFullFT: (("nugget2d.lora_rank", "nugget2d.lora_alpha", "nugget2d.lora_dropout",
                       "nugget2d.lora_target_modules", "model.lm", "train.full_ft", "prompts", "run.seed"),
                      ("prepare_lm", "build_lm")),
    }
    for stage, (keys, upstream) in expected.items():
        assert (stage.config_keys, stage.upstream, stage.optional_upstream) == (keys, upstream, None), stage.name
        assert stage.output is (FullFinetunedLM if stage is TrainFullFT else TrainedNugget2D)


def test_a_stage_fits_the_job_its_config_reads():
    with pytest.raises(TypeError, match="job_key 'train.nugget2d' is not its config's job section "
                                        "'train.nugget2d_ae'"):
        class Mixed(Nugget2DTrainingStage[TrainNugget2DAEConfig, Nugget2DInputs]):
            name = "mixed"
            job_key = train_job = "train.nugget2d"


def test_compressor_stage_builds_its_model_and_variants(tmp_path):
    config, inputs = _typed(TrainNugget2D, tmp_path, _inputs(tmp_path), [
        "nugget2d.ratio=0.25", "train.nugget2d.objective=continuation", "train.nugget2d.extra_ratios=[0.5]",
        "train.nugget2d.ar_scorer=autoencoding"])
    stage = TrainNugget2D()
    main = stage.task(config, inputs)
    assert isinstance(main, Nugget2DCompressorTask)
    assert (main.objective, main.nugget2d.ratio) == ("continuation", 0.25)
    assert main.base_dir == str(tmp_path / "prepare_lm" / "model") and main.data.path == tmp_path / "build_lm"
    assert stage.main_model(config) == ("continuation", 0.25)
    built = {name: (v.task.objective, v.task.nugget2d.ratio, v.base_role, v.objective, v.ratio)
             for name, v in stage.variants(config, inputs).items()}
    assert built == {"r0.5": ("continuation", 0.5, "chat", "continuation", 0.5),
                     "autoencoding": ("autoencoding", 0.25, "lm", "autoencoding", 0.25)}


def test_finetuning_stage_starts_from_the_compressor(tmp_path):
    inputs = {**_inputs(tmp_path), "train_nugget2d": _trained(tmp_path / "train_nugget2d")}
    config, typed = _typed(TrainNugget2DFT, tmp_path, inputs, ["train.nugget2d_ft.max_doc_tokens=40"])
    stage = TrainNugget2DFT()
    task = stage.task(config, typed)
    assert isinstance(task, Nugget2DCompressorTask)
    assert (task.objective, task.finetune_task, task.max_doc_tokens) == ("finetune", "summarization", 40)
    assert task.init_dir == str(TrainedNugget2D.folder(tmp_path / "train_nugget2d"))
    assert stage.variants(config, typed) == {} and stage.main_model(config)[0] == "finetune"


def _calibrated(folder, scorer_stage):
    folder.mkdir()
    CalibratedThreshold(0.3, 0.1, scorer_stage, "fp", 8).write(folder)
    return folder


def test_autoregressive_stage_reuses_the_calibrated_scorer(tmp_path):
    inputs = {**_inputs(tmp_path),
              "train_nugget2d": _trained(tmp_path / "train_nugget2d", {"autoencoding": "lm"}),
              "calibrate_threshold": _calibrated(tmp_path / "calibrate", "train_nugget2d/autoencoding")}
    config, typed = _typed(TrainNugget2DAR, tmp_path, inputs, ["train.nugget2d_ar.baselines=[full]"])
    stage = TrainNugget2DAR()
    task = stage.task(config, typed)
    assert isinstance(task, Nugget2DARTask) and task.threshold == 0.3
    assert task.scorer_dir == str(TrainedNugget2D.variant_folder(tmp_path / "train_nugget2d", "autoencoding"))
    assert stage.main_model(config) == ("autoregressive", config.nugget2d.ratio)
    (name, baseline), = stage.variants(config, typed).items()
    assert name == "full" and isinstance(baseline.task, LMBaselineTask) and baseline.base_role == "lm"


def test_autoregressive_stage_refuses_a_lambda_of_another_scorer(tmp_path):
    inputs = {**_inputs(tmp_path),
              "train_nugget2d": _trained(tmp_path / "train_nugget2d", {"autoencoding": "lm"}),
              "calibrate_threshold": _calibrated(tmp_path / "calibrate", "train_nugget2d")}
    config, typed = _typed(TrainNugget2DAR, tmp_path, inputs, [])
    with pytest.raises(ValueError, match="calibrated train_nugget2d's scorer; train_nugget2d_ar reuses "
                                         "train_nugget2d/autoencoding's"):
        TrainNugget2DAR().task(config, typed)


def test_autoencoding_stage_builds_a_model_per_ratio_and_system(tmp_path):
    config, inputs = _typed(TrainNugget2DAE, tmp_path, _inputs(tmp_path), [
        "train.nugget2d_ae.ratios=[0.05,0.1]", "train.nugget2d_ae.max_doc_tokens=100"])
    stage = TrainNugget2DAE()
    main = stage.task(config, inputs)
    assert isinstance(main, AutoencodingTask) and (main.system, main.nugget2d.ratio) == ("nugget2d", 0.05)
    assert stage.main_model(config) == ("autoencoding", 0.05)
    built = {name: (v.task.system, v.task.nugget2d.ratio, v.task.slots, v.objective)
             for name, v in stage.variants(config, inputs).items()}
    assert built == {"r0.1": ("nugget2d", 0.1, 0, "autoencoding"), "icae_r0.05": ("icae", 0.05, 5, "icae"),
                     "icae_r0.1": ("icae", 0.1, 10, "icae")}


def test_full_ft_task_takes_nugget2d_lora_settings_and_the_chat_base(tmp_path):
    inputs = _inputs(tmp_path)
    (tmp_path / "prepare_lm" / "chat").mkdir()
    BaseLM.write_roles(tmp_path / "prepare_lm", "chat")
    config, typed = _typed(TrainFullFT, tmp_path, inputs, ["nugget2d.lora_rank=4", "train.full_ft.max_doc_tokens=50"])
    task = TrainFullFT.task(config, typed)
    assert task.base_dir == str(tmp_path / "prepare_lm" / "chat")
    assert (task.lora_rank, task.max_doc_tokens, task.finetune_task) == (4, 50, "summarization")
    assert task.lora_target_modules == list(config.lora_target_modules) and task.seed == config.seed
