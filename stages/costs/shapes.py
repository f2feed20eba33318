"""The shapes of the configured base models, from the config alone (no weights loaded, no
network): what `stages.costs.decoder` and `stages.costs.seq2seq` count with.

A model's shape comes from, in this order: the config itself (``model.seq2seq.source=
tiny_random``: ``model.seq2seq.tiny``; ``model.lm.source=smollm2_offline``: the pinned
SmolLM2-135M), the ``config.json`` of a local folder or of a hub name already in the local
Hugging Face cache (`stages.config.depth`), else the published configs of
`stages.costs.known_models`, matched by name. A model in none of them has no shape, and its stages are not estimated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from stages.config.depth import _config_json
from stages.costs.decoder import DecoderShape
from stages.costs.known_models import KNOWN_DECODERS, KNOWN_SEQ2SEQ, SMOLLM2_135M
from stages.costs.seq2seq import Seq2SeqShape

if TYPE_CHECKING:
    from stages.config.schema import CausalLM, PipelineConfig, Seq2SeqModel

@dataclass(frozen=True)
class Shaped:
    """A model's shape (``None``: unknown) and where it came from, for the plan's notes."""

    shape: DecoderShape | Seq2SeqShape | None
    basis: str


def _published(name: str, known: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], str] | None:
    """(config, basis) of ``name`` from its local / cached config.json, else the table."""
    found = _config_json(name)
    if found is not None:
        return found[0], found[1]
    for fragment, config in known.items():
        if fragment in name.lower():
            return config, f"the published config of {fragment}"
    return None


def _unknown(name: str, known: dict[str, dict[str, Any]]) -> Shaped:
    return Shaped(None, f"shape of {name!r} unknown: no local or cached config.json, and not one of "
                        f"the published shapes known here ({', '.join(known)})")


def lm_shape(lm: CausalLM, chat: bool = False) -> Shaped:
    """The decoder-only LM of ``model.lm`` (``chat``: the QA / summarisation base,
    ``chat_name_or_path`` where set), truncated to ``keep_layers``."""
    if lm.source == "smollm2_offline":
        shape, basis = DecoderShape.from_config(SMOLLM2_135M), "SmolLM2-135M (offline wheel)"
    else:
        name = (lm.chat_name_or_path if chat else "") or lm.name_or_path
        found = _published(name, KNOWN_DECODERS)
        if found is None:
            return _unknown(name, KNOWN_DECODERS)
        shape, basis = DecoderShape.from_config(found[0]), f"{name} ({found[1]})"
    if lm.keep_layers and lm.keep_layers < shape.layers:
        shape, basis = replace(shape, layers=lm.keep_layers), f"{basis}, bottom {lm.keep_layers} layers"
    return Shaped(shape, basis)


def seq2seq_shape(seq2seq: Seq2SeqModel) -> Shaped:
    """The encoder-decoder of ``model.seq2seq``."""
    if seq2seq.source == "tiny_random":
        t = seq2seq.tiny
        return Shaped(Seq2SeqShape(t.d_model, t.layers, t.layers, t.heads, t.ffn_dim, seq2seq.tokenizer_vocab_size),
                      f"random-init BART d {t.d_model}, {t.layers} + {t.layers} layers, "
                      f"vocab {seq2seq.tokenizer_vocab_size}")
    found = _published(seq2seq.name_or_path, KNOWN_SEQ2SEQ)
    if found is None:
        return _unknown(seq2seq.name_or_path, KNOWN_SEQ2SEQ)
    return Shaped(Seq2SeqShape.from_config(found[0]), f"{seq2seq.name_or_path} ({found[1]})")


def re_shape(cfg: PipelineConfig) -> Shaped:
    """The RE study's encoder-decoder (``model.re``): train_nugget's model with
    ``source=stage_ae``, else the named one."""
    if cfg.model.re.source == "stage_ae":
        return seq2seq_shape(cfg.model.seq2seq)
    found = _published(cfg.model.re.name_or_path, KNOWN_SEQ2SEQ)
    if found is None:
        return _unknown(cfg.model.re.name_or_path, KNOWN_SEQ2SEQ)
    return Shaped(Seq2SeqShape.from_config(found[0]), f"{cfg.model.re.name_or_path} ({found[1]})")
