"""prepare_lm with one base LM per experiment (Nugget2D §3: LLaMA-2-7B for language
modelling, LLaMA-2-7B-chat for QA and summarisation): the chat checkpoint lands in
``chat/``, ``roles.json`` maps each role to its folder, and a chat model whose tokenizer
differs is refused before anything is copied (build_lm tokenises once)."""

from __future__ import annotations

import json

import pytest
import torch

from stages.artifacts.base import ContractError
from stages.nugget2d.artifacts import BaseLM
from stages.nugget2d.prepare_lm import PrepareLM
from tests.evaluation.fixtures import context
from tests.lm_eval.fixtures import make_base_lm, make_tokenizer


def _checkpoint(folder, seed: int, tokenizer=None):
    tok = tokenizer or make_tokenizer()
    tok.save_pretrained(str(folder))
    make_base_lm(len(tok), seed=seed).save_pretrained(folder)
    return folder


def test_chat_role_gets_its_own_checkpoint_and_roles_map_them(tmp_path):
    lm = _checkpoint(tmp_path / "llama-2", seed=0)
    chat = _checkpoint(tmp_path / "llama-2-chat", seed=1)
    ctx = context(PrepareLM, {}, tmp_path / "out", ["model.lm.source=pretrained", f"model.lm.name_or_path={lm}", "nugget2d.scorer_layer=1",
                                                    f"model.lm.chat_name_or_path={chat}", "train.nugget2d.ar_scorer=autoencoding"])
    PrepareLM().run(ctx)
    assert json.loads((ctx.output_dir / "roles.json").read_text()) == {"lm": "model", "chat": "chat"}
    bases = {role: BaseLM.read(ctx.output_dir, role) for role in BaseLM.ROLES}
    assert bases["lm"].path.name == "model" and bases["chat"].path.name == "chat"
    weights = {role: next(b.causal_lm().parameters()) for role, b in bases.items()}
    assert not torch.equal(weights["lm"], weights["chat"])
    assert bases["chat"].tokenizer().get_vocab() == bases["lm"].tokenizer().get_vocab()
    assert ctx.logger.metrics["chat_parameters"] == ctx.logger.metrics["parameters"]
    with pytest.raises(ValueError, match="base LM role 'qa'"):
        BaseLM.read(ctx.output_dir, "qa")

    # one checkpoint for both: no copy, both roles read model/
    one = context(PrepareLM, {}, tmp_path / "one", ["model.lm.source=pretrained", f"model.lm.name_or_path={lm}", "nugget2d.scorer_layer=1"])
    PrepareLM().run(one)
    assert not (one.output_dir / "chat").exists()
    assert {BaseLM.read(one.output_dir, r).path.name for r in BaseLM.ROLES} == {"model"}
    # an output of an older prepare_lm (no roles.json) serves model/ to every role
    (one.output_dir / "roles.json").unlink()
    assert BaseLM.read(one.output_dir, "chat").path == one.output_dir / "model"
    (one.output_dir / "roles.json").write_text(json.dumps({"lm": "model", "chat": "missing"}))
    with pytest.raises(ContractError, match="'missing' is missing"):
        BaseLM.read(one.output_dir, "chat")


def test_a_chat_model_with_another_tokenizer_is_refused_before_copying(tmp_path):
    from nugget_core import train_bpe_tokenizer

    lm = _checkpoint(tmp_path / "lm", seed=0)
    other = _checkpoint(tmp_path / "other", seed=1, tokenizer=train_bpe_tokenizer(["x y z w"] * 20, vocab_size=270))
    ctx = context(PrepareLM, {}, tmp_path / "out", ["model.lm.source=pretrained", f"model.lm.name_or_path={lm}", "nugget2d.scorer_layer=1",
                                                    f"model.lm.chat_name_or_path={other}", "train.nugget2d.ar_scorer=autoencoding"])
    with pytest.raises(ValueError, match=r"chat_name_or_path=.*tokenizer differs .* in vocabulary"):
        PrepareLM().run(ctx)
    assert not (ctx.output_dir / "model").exists()


def test_config_refuses_a_chat_model_without_a_scorer_of_the_lm():
    """With two base LMs the AR model's scorer must be trained on the LM's base: only the
    autoencoding variant is (the QA compressor trains on the chat model)."""
    from stages.config import load_config
    from stages.config.validate import ConfigError

    with pytest.raises(ConfigError, match="chat_name_or_path: value 'x' needs source=pretrained"):
        load_config(["model.lm.chat_name_or_path=x"])
    base = ["model.lm.source=pretrained", "model.lm.name_or_path=a", "model.lm.chat_name_or_path=b"]
    with pytest.raises(ConfigError, match="train.nugget2d.ar_scorer: with model.lm.chat_name_or_path"):
        load_config(base)
    assert load_config([*base, "train.nugget2d.ar_scorer=autoencoding"]).model.lm.separate_chat
    assert not load_config(["model.lm.source=pretrained", "model.lm.name_or_path=a",
                            "model.lm.chat_name_or_path=a"]).model.lm.separate_chat
