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
    for section in ("## How it was trained", "## Data", "## Metrics (end of training)", "## How to load"):
        assert section in card
    # the published place, and the root the base reference may lead into
    assert "load_nugget2d('<artifact root>/train_nugget2d_ar/k/nugget2d', base_within='<artifact root>')" in card
    assert "- `max_steps`: 3" in card and "final train loss: 4.5000 (n = 2 sequences)" in card
    # whether training helped: the dev loss before any update and of these weights, the tokens seen
    assert "- dev loss before training (step 0) -> of these weights: 7.1000 -> 4.4000\n" in card
    assert "- tokens seen in training: 96 (inputs + targets, every worker)" in card
    assert "upstream `prepare_lm` (key `k1`)" in card
    assert "## nugget2d_config.json" in card and "- `scorer_layer`: 1" in card and "- `threshold`: None" in card
    assert ctx.logger.artifacts == ["models/nugget2d/"]
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
