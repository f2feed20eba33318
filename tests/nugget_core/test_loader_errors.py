"""Loaders that fail say which path and what is wrong, and leave the caller's objects as
they were: a truncated weights file, a missing folder or file, a missing LoRA adapter
(`NuggetModel.from_pretrained`, `load_nugget2d`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from nugget_core import NuggetConfig, NuggetModel, get_nugget_model
from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel, load_nugget2d, save_nugget2d


def _truncate(path: Path) -> None:
    """Cut a file in half: a safetensors header intact, its tensors short (an interrupted
    copy; safetensors used to say only "incomplete metadata")."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.fixture
def nugget_folder(tmp_path, model_factory) -> Path:
    folder = tmp_path / "train_nugget" / "k" / "model"
    get_nugget_model(model_factory("bart"), NuggetConfig(ratio=0.5, scorer_layer=1)).save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "damage, expected",
    [
        (lambda f: _truncate(f / "model.safetensors"), r"model\.safetensors: .*(truncated|incomplete|corrupt)"),
        (lambda f: _truncate(f / "nugget_scorer.safetensors"), r"nugget_scorer\.safetensors: .*(truncated|incomplete|corrupt)"),
        (lambda f: (f / "model.safetensors").unlink(), r"model: .*no weights file"),
        (lambda f: (f / "config.json").unlink(), r"config\.json"),
        (lambda f: (f / "nugget_config.json").write_text("{not json"), r"nugget_config\.json: "),
    ],
    ids=["truncated-hf-weights", "truncated-scorer", "missing-hf-weights", "missing-hf-config", "garbled-nugget-config"],
)
def test_nugget_from_pretrained_names_the_broken_file(nugget_folder, damage, expected):
    damage(nugget_folder)
    with pytest.raises((OSError, ValueError), match=expected) as err:
        NuggetModel.from_pretrained(nugget_folder)
    assert str(nugget_folder) in str(err.value)
    assert "Repo id" not in str(err.value)


@pytest.mark.parametrize("missing", ["runs/a/model", "missing"])
def test_nugget_from_pretrained_of_a_missing_folder(tmp_path, monkeypatch, missing):
    monkeypatch.chdir(tmp_path)  # a relative path with slashes used to be taken for a hub repo id
    with pytest.raises(FileNotFoundError, match=rf"{missing}: no such folder") as err:
        NuggetModel.from_pretrained(missing)
    assert "Repo id" not in str(err.value)


def _lora_modules(model: torch.nn.Module) -> int:
    return sum("lora" in name.lower() for name, _ in model.named_modules())


@pytest.fixture
def nugget2d_folder(tmp_path, causal_factory) -> Path:
    model = Nugget2DModel(causal_factory(), Nugget2DConfig(lora_rank=4, lora_alpha=4, scorer_layer=1))
    return save_nugget2d(model, tmp_path / "nugget2d")


@pytest.mark.parametrize(
    "damage, expected",
    [
        (lambda f: shutil.rmtree(f / "adapters" / "decoder"), r"adapters/decoder: no such folder"),
        (lambda f: shutil.rmtree(f / "adapters" / "compressor"), r"adapters/compressor: no such folder"),
        (lambda f: (f / "adapters" / "decoder" / "adapter_model.safetensors").unlink(),
         r"adapters/decoder/adapter_model\.safetensors"),
        (lambda f: _truncate(f / "adapters" / "decoder" / "adapter_model.safetensors"),
         r"adapters/decoder/adapter_model\.safetensors: .*(truncated|incomplete|corrupt)"),
        (lambda f: _truncate(f / "nugget2d_parts.safetensors"), r"nugget2d_parts\.safetensors: .*(truncated|incomplete|corrupt)"),
        (lambda f: (f / "usage.json").write_text('{"objective": '), r"usage\.json: not valid JSON"),
        # fails after peft injected the LoRA layers: the scorer reads a layer the base has not
        (lambda f: (f / "nugget2d_config.json").write_text(
            (f / "nugget2d_config.json").read_text().replace('"scorer_layer": 1', '"scorer_layer": 5')),
         r"does not fit this base model: .*scorer_layer=5"),
    ],
    ids=["no-decoder-adapter", "no-compressor-adapter", "no-adapter-weights", "truncated-adapter", "truncated-parts",
         "garbled-usage", "fails-after-injection"],
)
def test_load_nugget2d_fails_naming_the_file_and_leaves_the_base_untouched(nugget2d_folder, causal_factory, damage, expected):
    damage(nugget2d_folder)
    base = causal_factory()
    before = {n: p.detach().clone() for n, p in base.named_parameters()}
    names = [n for n, _ in base.named_modules()]
    ids = torch.randint(3, 64, (1, 8))
    with torch.no_grad():
        logits = base(ids).logits
    with pytest.raises((OSError, ValueError), match=expected) as err:
        load_nugget2d(nugget2d_folder, base_model=base)
    assert str(nugget2d_folder) in str(err.value) and "Repo id" not in str(err.value)
    assert _lora_modules(base) == 0 and [n for n, _ in base.named_modules()] == names  # nothing injected is left
    after = dict(base.named_parameters())
    assert after.keys() == before.keys() and all(torch.equal(after[n], before[n]) for n in before)
    assert all(p.requires_grad for p in base.parameters())  # not frozen by the failed load either
    with torch.no_grad():
        assert torch.equal(base(ids).logits, logits)


def test_load_nugget2d_still_loads_an_intact_folder(nugget2d_folder, causal_factory):
    base = causal_factory()
    model = load_nugget2d(nugget2d_folder, base_model=base)
    assert _lora_modules(model.lm) > 0 and model.config.scorer_layer == 1
