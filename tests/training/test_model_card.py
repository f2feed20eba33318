"""`document_models`: the model card, the base reference and the MLflow copy of an exported
model, written in the stage's scratch output and valid once the output is published."""

from __future__ import annotations

import json
from dataclasses import make_dataclass
from types import SimpleNamespace

import pytest

from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel, load_nugget2d, save_nugget2d
from stages.framework.stage import Artifact
from stages.nugget2d.train_nugget2d_ar import TrainNugget2DAR
from stages.training.model_card import document_models
from tests.evaluation.fixtures import context
from tests.lm_eval.fixtures import make_base_lm, make_tokenizer


def test_card_and_base_reference_hold_after_publishing(tmp_path):
    tok = make_tokenizer()
    base_dir = tmp_path / "prepare_lm" / "k1" / "model"
    make_base_lm(len(tok)).save_pretrained(base_dir)
    tok.save_pretrained(base_dir)
    inputs = {"prepare_lm": Artifact("prepare_lm", "k1", "", tmp_path / "prepare_lm" / "k1", {})}
    scratch = tmp_path / "train_nugget2d_ar" / ".tmp-k-1234"  # where a stage writes before publishing
    ctx = context(TrainNugget2DAR, inputs, scratch, [])
    model = Nugget2DModel.from_lm(base_dir, Nugget2DConfig(lora_rank=4, lora_alpha=4, scorer_layer=1))
    save_nugget2d(model, scratch / "nugget2d")
    (scratch / "trainer_state.json").write_text(json.dumps({"step": 3, "losses": [5.0, 4.5], "best_dev_loss": 4.4,
                                                            "train_loss_n": 2, "dev_loss_n": 40,
                                                            "stopped_early": False, "initial_dev_loss": 7.1,
                                                            "exported_dev_loss": 4.4, "tokens_seen": 96}))
    job = make_dataclass("Job", [("max_steps", int), ("lr", float)])(3, 1e-3)  # a train.* section
    document_models(ctx, job, {scratch / "nugget2d": SimpleNamespace(
        base_dir=str(base_dir), objective="autoregressive")}, ctx.config.get("model.lm"))

    card = (scratch / "nugget2d" / "README.md").read_text()
    for section in ("## Model description", "## Usage", "## Results (this run)", "## Training data",
                    "## Training budget", "## Limitations", "## How it was produced"):
        assert section in card
    # the published place, and the root the base reference may lead into
    assert "FOLDER, ROOT = '<artifact root>/train_nugget2d_ar/k/nugget2d', '<artifact root>'" in card
    assert "load_nugget2d(FOLDER, base_within=ROOT)" in card
    assert "- `max_steps`: 3" in card and "final train loss: 4.5000 (n = 2 sequences)" in card
    # whether training helped: the dev loss before any update and of these weights (with n), the tokens seen
    assert "- dev loss before training (step 0) -> of these weights: 7.1000 -> 4.4000 (n = 40 target tokens)\n" in card
    assert "- tokens seen in training: 96 (inputs + targets, every worker)" in card
    assert "upstream `prepare_lm` (key `k1`)" in card
    assert "### nugget2d_config.json" in card and "- `scorer_layer`: 1" in card and "- `threshold`: None" in card
    assert "- max_steps 3, lr 0.001; device `cpu`; steps run 3" in card
    assert list(ctx.logger.models) == ["nugget2d"]
    # the reference is relative to the published folder, not to the scratch one
    assert json.loads((scratch / "nugget2d" / "base_model.json").read_text())["relative_path"] == \
        "../../../prepare_lm/k1/model"
    published = scratch.rename(tmp_path / "train_nugget2d_ar" / "k")
    loaded = load_nugget2d(published / "nugget2d", base_within=tmp_path)
    assert loaded.config.scorer_layer == 1


def test_an_adapter_checkpoint_of_a_task_without_base_lm_is_refused(tmp_path):
    """An adapter folder's card and base reference need the task's base LM folder."""
    ctx = context(TrainNugget2DAR, {}, tmp_path / "out", [])
    folder = tmp_path / "out" / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")  # a LoRA adapter checkpoint
    job = make_dataclass("Job", [("max_steps", int)])(3)
    with pytest.raises(TypeError, match="LoRA adapter checkpoint's task SimpleNamespace names no base LM"):
        document_models(ctx, job, {folder: SimpleNamespace(objective="x")})


def test_card_names_stand_in_data_and_a_training_that_made_it_worse(tmp_path):
    """Limitations the stage knows: an offline stand-in for the paper's data (by the
    upstream manifest's data section), a dev loss above its untrained start, a tiny model."""
    from stages.training.model_card import KINDS, model_card

    ctx = context(TrainNugget2DAR, {"build_lm": Artifact("build_lm", "k2", "", tmp_path / "b", {"config": {
        "data.lm": {"source": "offline"}}}), "build_mt_docs": Artifact("build_mt_docs", "k3", "", tmp_path / "m", {
            "config": {"data.mt": {"source": "wmt19"}}})}, tmp_path / "out", ["model.lm.source=pretrained",
                                                                            "model.lm.name_or_path=org/lm-7b"])
    folder = tmp_path / "out" / "model"
    folder.mkdir()
    (tmp_path / "out" / "trainer_state.json").write_text(json.dumps({
        "step": 4, "losses": [3.0, 3.5], "best_dev_loss": 5.0, "initial_dev_loss": 4.0, "exported_dev_loss": 5.0}))
    job = make_dataclass("Job", [("max_steps", int)])(4)
    card = model_card(ctx, folder, KINDS[1], job, SimpleNamespace(objective="ae"), None,
                      model_lm=ctx.config["model.lm"])
    header = card.split("---\n")[1]
    assert 'base_model: "org/lm-7b"\n' in header and "datasets:\n- offline\n- wmt19\n" in header
    assert "- trained on `offline` (via `build_lm`), an offline stand-in for the paper's data" in card
    assert "via `build_mt_docs`" not in card.split("## Limitations")[1]  # wmt19 is the paper's dataset
    assert "- degenerate: the dev loss of these weights is above the untrained start" in card
    assert "- the train loss did not fall" in card
    assert "small scale" not in card  # a pretrained 7B base
