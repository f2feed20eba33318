"""Checkpoints that travel: a Nugget2D folder loads from itself alone after the artifact
root moves; the wrong folder gets an error naming the right one; a plain HF load of a
Nugget seq2seq checkpoint warns that its decoder reads nuggets."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM
from transformers.utils import logging as hf_logging

from nugget_core import BaseModelReference, NuggetConfig, NuggetModel, get_nugget_model
from nugget_core.checkpoint import NUGGET_MARKER_KEY
from nugget_core.nugget2d import (
    Nugget2DConfig,
    Nugget2DModel,
    Nugget2DUsage,
    load_nugget2d,
    save_nugget2d,
)
from tests.log_lines import LogLines


@pytest.fixture
def hf_warnings():
    """transformers' warnings of the test (at warning verbosity, whatever the process set)."""
    handler, level = LogLines(logging.WARNING), hf_logging.get_verbosity()
    hf_logging.set_verbosity_warning()
    hf_logging.get_logger().addHandler(handler)  # the library's root logger: "transformers"
    yield handler.messages
    hf_logging.get_logger().removeHandler(handler)
    hf_logging.set_verbosity(level)


def test_plain_hf_load_of_a_nugget_checkpoint_warns(tmp_path, model_factory, batch_factory, hf_warnings):
    model = get_nugget_model(model_factory("bart"), NuggetConfig(ratio=0.5, scorer_layer=1))
    stage_output = tmp_path / "train_nugget" / "key"
    model.save_pretrained(stage_output / "model")
    AutoModelForSeq2SeqLM.from_pretrained(stage_output / "model")
    assert any(NUGGET_MARKER_KEY in m for m in hf_warnings), hf_warnings
    hf_warnings.clear()
    loaded = NuggetModel.from_pretrained(stage_output / "model").eval()
    assert not any(NUGGET_MARKER_KEY in m for m in hf_warnings)
    assert NUGGET_MARKER_KEY not in dict(loaded.base_model.named_parameters())
    batch = batch_factory(loaded.base_model)
    with torch.no_grad():
        assert torch.equal(loaded(**batch).logits, model.eval()(**batch).logits)
    # the stage's folder instead of the model folder: the error names the model folder
    with pytest.raises(FileNotFoundError, match=rf"{stage_output} is not a Nugget model folder.*{stage_output / 'model'}"):
        NuggetModel.from_pretrained(stage_output)


def _nugget2d(root, causal_factory):
    base_dir = root / "prepare_lm" / "k1" / "model"
    base = causal_factory()
    base.save_pretrained(base_dir)
    model = Nugget2DModel(base, Nugget2DConfig(lora_rank=4, lora_alpha=4, scorer_layer=1, threshold=0.25)).eval()
    with torch.no_grad():
        for p in model.scorer.parameters():
            p.add_(0.1 * torch.randn_like(p))
    folder = root / "train_nugget2d_ar" / "k2" / "nugget2d"
    save_nugget2d(model, folder, BaseModelReference.of(base_dir, folder, description="tiny llama"),
                  Nugget2DUsage(objective="autoregressive", soft_prompt=False))
    return model, folder


def test_nugget2d_folder_loads_alone_after_the_root_moves(tmp_path, causal_factory):
    model, folder = _nugget2d(tmp_path / "root", causal_factory)
    reference = json.loads((folder / "base_model.json").read_text())
    assert reference["relative_path"] == "../../../prepare_lm/k1/model"
    for adapter in ("compressor", "decoder"):  # no path of the training machine left in peft's configs
        assert json.loads((folder / "adapters" / adapter / "adapter_config.json").read_text())[
            "base_model_name_or_path"] is None
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "root", moved)
    shutil.rmtree(tmp_path / "root")
    loaded = load_nugget2d(moved / "train_nugget2d_ar" / "k2" / "nugget2d", base_within=moved).eval()
    assert loaded.config.threshold == 0.25 and loaded.usage == Nugget2DUsage("autoregressive", False)
    ids = torch.randint(3, 64, (1, 12))
    with torch.no_grad():
        assert torch.equal(loaded.score(ids), model.score(ids))
    mine, theirs = dict(model.named_parameters()), dict(loaded.named_parameters())
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[n], theirs[n]) for n in mine)
    # the stage output instead of its model folder
    with pytest.raises(FileNotFoundError, match=r"is not a Nugget2D model folder.*k2/nugget2d"):
        load_nugget2d(moved / "train_nugget2d_ar" / "k2")
    # the base LM gone and no hub name: the error says what to pass
    shutil.rmtree(moved / "prepare_lm")
    with pytest.raises(FileNotFoundError, match=r"tiny llama.*pass base_model="):
        load_nugget2d(moved / "train_nugget2d_ar" / "k2" / "nugget2d", base_within=moved)


@pytest.mark.parametrize("relative", ["../../../prepare_lm/k1/model", "../../../../../../../etc", "/etc"])
def test_a_base_reference_is_followed_only_inside_the_folder_the_caller_trusts(tmp_path, causal_factory, relative):
    """base_model.json used to be followed to any local folder: a checkpoint from
    elsewhere could point its loader anywhere on this machine."""
    _, folder = _nugget2d(tmp_path / "root", causal_factory)
    (folder / "base_model.json").write_text(json.dumps({"relative_path": relative, "hub_id": "org/lm"}))
    with pytest.raises(ValueError, match=rf"base model path '{relative}' leads outside .*base_within="):
        load_nugget2d(folder)  # default: the checkpoint folder itself
    if not relative.startswith("../../../prepare_lm"):
        with pytest.raises(ValueError, match="leads outside"):
            load_nugget2d(folder, base_within=tmp_path / "root")
    else:
        assert load_nugget2d(folder, base_within=tmp_path / "root").config.threshold == 0.25


def test_a_folder_without_a_base_reference_needs_one(tmp_path, causal_factory):
    model = Nugget2DModel(causal_factory(), Nugget2DConfig(lora_rank=4, lora_alpha=4, scorer_layer=1))
    save_nugget2d(model, tmp_path / "m")
    with pytest.raises(ValueError, match=r"records no base model.*pass base_model="):
        load_nugget2d(tmp_path / "m")
    assert BaseModelReference(hub_id="org/lm").resolve(tmp_path / "m") == "org/lm"
