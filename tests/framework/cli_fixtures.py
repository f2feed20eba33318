"""What the ``nugget`` command's tests build (tests/framework/test_nugget_cli.py,
tests/framework/test_nugget_eval.py): a completed stage output in an artifact root and tiny
untrained checkpoints saved as the pipeline saves them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def complete_output(root: str, stage: str, files: dict[str, str]) -> Path:
    """A completed output of ``stage`` for the default config under ``root``, as the
    pipeline would have published it (its cache key, its marker)."""
    from stages.config import load_config
    from stages.framework.store import ArtifactStore
    from stages.registry import DAG

    cfg = load_config([root])
    store = ArtifactStore(cfg.run.artifact_root)
    key = next(p.key for p in DAG.plan(cfg, store, targets=[stage]) if p.name == stage)
    scratch = store.scratch(stage, key)
    for name, text in files.items():
        (scratch / name).write_text(text)
    return Path(store.publish(stage, key, scratch, {}))


def make_nugget2d(tmp: Path) -> tuple[Path, Path, Any, Any]:
    """A tiny untrained Nugget2D folder (``tmp/model``), its base LM folder (``tmp/base``, with
    the tokenizer), the model itself and the tokenizer."""
    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel, save_nugget2d
    from tests.lm_eval.fixtures import make_base_lm, make_tokenizer

    tokenizer = make_tokenizer(tmp / "base")
    make_base_lm(len(tokenizer)).save_pretrained(str(tmp / "base"))
    model = Nugget2DModel(make_base_lm(len(tokenizer)), Nugget2DConfig(ratio=0.5, lora_rank=4, scorer_layer=1))
    save_nugget2d(model.eval(), tmp / "model")
    return tmp / "model", tmp / "base", model.eval(), tokenizer


def make_nugget(out: Path) -> Path:
    """A train_nugget-like output folder ``out``: a tiny untrained Nugget (encoder-decoder)
    model in ``model/`` and the stage's ``trained.json`` (objective ae) beside it."""
    from nugget_core import NuggetConfig, TinyBartSpec, build_tiny_bart, get_nugget_model
    from nugget_core.tokenizer import train_bpe_tokenizer

    tok = train_bpe_tokenizer(["the river delta was born in a city of the north."] * 20, vocab_size=300)
    base = build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64), seed=0)
    model = get_nugget_model(base, NuggetConfig(ratio=0.5, scorer_layer=1))
    model.save_pretrained(out / "model")
    tok.save_pretrained(out / "model")
    (out / "trained.json").write_text('{"objective": "ae", "ratio": 0.5}\n')
    return out


def make_re(out: Path) -> Path:
    """A train_re-like output folder ``out``: a tiny untrained RE model (cross decoder) in
    ``systems/n1_cross/model`` and its record in ``systems.json``; returns the model folder."""
    from nugget_core import TinyBartSpec, build_tiny_bart
    from nugget_core.restorable import RestorableConfig, get_restorable_model
    from nugget_core.tokenizer import train_bpe_tokenizer

    tok = train_bpe_tokenizer(["the river delta was born in a city of the north."] * 20, vocab_size=300)
    base = build_tiny_bart(tok, TinyBartSpec(d_model=32, layers=2, ffn_dim=64), seed=0)
    model = get_restorable_model(base, RestorableConfig(pooling="mean", decoder="cross"))
    folder = out / "systems" / "n1_cross" / "model"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    record = {"system": "n1_cross", "paper_row": "1|a|mean|cross", "sentences": 1, "max_tokens": 32,
              "model_dir": "systems/n1_cross/model"}
    (out / "systems.json").write_text(json.dumps([record]) + "\n")
    return folder
