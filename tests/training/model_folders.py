"""A tiny model folder of every `stages.training.model_card.ModelKind`, documented by
`document_models` as a training stage does (for the model card and MLflow Model tests)."""

from __future__ import annotations

import dataclasses
from dataclasses import make_dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from stages.framework.stage import Artifact, StageContext
from tests.evaluation.fixtures import context
from tests.lm_eval.fixtures import make_base_lm, make_nugget2d, make_tokenizer

# ModelKind.name -> the folder in the stage output
FOLDERS = {"Nugget": "nugget", "Nugget LM": "nugget_lm", "RE restorable embedding": "re",
           "bottleneck baseline": "bottleneck", "Nugget2D": "nugget2d", "ICAE": "icae", "LoRA adapter": "lora"}


def _seq2seq(tok, out: Path) -> None:
    from nugget_core import (
        NuggetConfig,
        NuggetLM,
        NuggetLMConfig,
        RestorableConfig,
        TinyBartSpec,
        build_tiny_bart,
        get_nugget_model,
        get_restorable_model,
    )
    from nugget_core.baselines.model import get_bottleneck_model

    spec = TinyBartSpec(d_model=32, layers=2, ffn_dim=64)
    get_nugget_model(build_tiny_bart(tok, spec), NuggetConfig(ratio=0.25, scorer_layer=1)).save_pretrained(out / "nugget")
    NuggetLM(get_nugget_model(build_tiny_bart(tok, spec), NuggetConfig(ratio=0.25, scorer_layer=1)),
             NuggetLMConfig(memory="nugget", ratio=0.25)).save_pretrained(out / "nugget_lm")
    get_restorable_model(build_tiny_bart(tok, spec), RestorableConfig(pooling="mean", decoder="gating")) \
        .save_pretrained(out / "re")
    get_bottleneck_model(build_tiny_bart(tok, spec)).save_pretrained(out / "bottleneck")


def _on_base_lm(tok, base_dir: Path, out: Path) -> None:
    from peft import LoraConfig, get_peft_model

    from nugget_core.nugget2d import ICAEModel, save_icae, save_nugget2d

    save_nugget2d(make_nugget2d(make_base_lm(len(tok))), out / "nugget2d")
    save_icae(ICAEModel(make_nugget2d(make_base_lm(len(tok))), slots=2), out / "icae")
    get_peft_model(make_base_lm(len(tok)), LoraConfig(r=2, target_modules=["q_proj", "v_proj"])) \
        .save_pretrained(out / "lora")


def documented_models(root: Path, kinds: tuple[str, ...] = tuple(FOLDERS), logger: Any = None) -> StageContext:
    """The folders of ``kinds`` written under ``root`` as the published output
    ``root/train_nugget2d_ar/k`` of a stage whose base LM is ``root/prepare_lm/k1/model``,
    each with its card (`document_models`); returns the stage's context (its logger
    recorded the MLflow Models, or ``logger`` logged them)."""
    from stages.nugget2d.train_nugget2d_ar import TrainNugget2DAR
    from stages.training.model_card import document_models

    tok = make_tokenizer()
    base_dir = root / "prepare_lm" / "k1" / "model"
    make_base_lm(len(tok)).save_pretrained(base_dir)
    tok.save_pretrained(base_dir)
    inputs = {"prepare_lm": Artifact("prepare_lm", "k1", "", root / "prepare_lm" / "k1", {})}
    ctx = context(TrainNugget2DAR, inputs, root / "train_nugget2d_ar" / "k", [])
    if logger is not None:
        ctx = dataclasses.replace(ctx, logger=logger)
    if {"Nugget", "Nugget LM", "RE restorable embedding", "bottleneck baseline"} & set(kinds):
        _seq2seq(tok, ctx.output_dir)
    if {"Nugget2D", "ICAE", "LoRA adapter"} & set(kinds):
        _on_base_lm(tok, base_dir, ctx.output_dir)
    folders = [ctx.output_dir / FOLDERS[k] for k in kinds]
    for folder in folders:
        tok.save_pretrained(folder)
    job = make_dataclass("Job", [("max_steps", int), ("batch_size", int), ("lr", float)])(3, 2, 1e-3)  # train.*
    document_models(ctx, job, {f: SimpleNamespace(base_dir=str(base_dir), objective="ae") for f in folders},
                    ctx.config["model.lm"])
    return ctx
