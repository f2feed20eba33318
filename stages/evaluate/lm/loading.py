"""Load what the Nugget2D evaluations run on from upstream artifacts.

``prepare_lm`` holds the base LM and its tokenizer (``model/``); a Nugget2D training
stage holds the adapters, scorer and soft prompt (``nugget2d/``, `save_nugget2d`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

from stages.common.progress import progress_logger
from stages.framework.stage import Artifact

log = progress_logger("nugget.lm_eval")


def load_tokenizer(prepare_lm: Artifact) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(prepare_lm.file("model")))


def load_model(prepare_lm: Artifact, trained: Artifact) -> Any:
    """The trained Nugget2D model on the base LM, in eval mode, gradients off."""
    from nugget_core.nugget2d import load_nugget2d

    model = load_nugget2d(trained.file("nugget2d"), prepare_lm.file("model")).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    log.info("loaded Nugget2D from %s (stage %s) on %s", trained.path, trained.stage, prepare_lm.path)
    return model


def load_full_finetuned(prepare_lm: Artifact, trained: Artifact, config: Any) -> Any:
    """``train_full_ft``'s LM (base LM with its LoRA adapter merged in) inside a fresh
    `Nugget2DModel` of ``config``, in eval mode. Only the wrapper's Full path runs on it
    (``router.use(None)``: every Nugget2D adapter gated off), so Full zero-shot and Full
    fine-tuned decode through one code path and their costs compare directly."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from nugget_core.nugget2d import Nugget2DModel

    base = AutoModelForCausalLM.from_pretrained(str(prepare_lm.file("model")))
    merged = PeftModel.from_pretrained(base, str(trained.file("lm_lora"))).merge_and_unload()
    model = Nugget2DModel(merged, config).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    log.info("loaded the fine-tuned full LM from %s (stage %s)", trained.path, trained.stage)
    return model


def scorer_fingerprint(model: Any) -> str:
    """sha256 of the scorer weights: tells whether two checkpoints share the scorer that
    a threshold was calibrated on."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.scorer.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().to(torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def eos_and_pad(tokenizer: Any) -> tuple[int | None, int]:
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (eos or 0)
    return eos, int(pad)
